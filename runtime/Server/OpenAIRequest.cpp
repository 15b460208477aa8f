//===- OpenAIRequest.cpp - OpenAI request bodies, parsed and checked ------===//

#include "runtime/Server/OpenAIRequest.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

using namespace folio;
using namespace folio::server;
using Json = nlohmann::json;

namespace {

/// OpenAI's default max_tokens for /v1/completions.
constexpr size_t kDefaultCompletionTokens = 16;
/// Stop strings per request at most (OpenAI allows 4; vLLM more).
constexpr size_t kMaxStopStrings = 16;

ApiError invalid(const std::string &param, const std::string &message) {
  ApiError e;
  e.status = 400;
  e.param = param;
  e.message = message;
  return e;
}

const char *typeName(const Json &v) {
  switch (v.type()) {
  case Json::value_t::string:
    return "a string";
  case Json::value_t::boolean:
    return "a boolean";
  case Json::value_t::array:
    return "an array";
  case Json::value_t::object:
    return "an object";
  default:
    return v.is_number() ? "a number" : "null";
  }
}

std::optional<ApiError> asBool(const std::string &key, const Json &v,
                               bool &out) {
  if (!v.is_boolean())
    return invalid(key, key + " must be a boolean, got " + typeName(v));
  out = v.get<bool>();
  return std::nullopt;
}

std::optional<ApiError> asFloat(const std::string &key, const Json &v,
                                float &out) {
  if (!v.is_number())
    return invalid(key, key + " must be a number, got " + typeName(v));
  out = v.get<float>();
  return std::nullopt;
}

std::optional<ApiError> asInt(const std::string &key, const Json &v, int64_t lo,
                              int64_t hi, int64_t &out) {
  if (!v.is_number_integer() && !v.is_number_unsigned())
    return invalid(key, key + " must be an integer, got " + typeName(v));
  if (v.is_number_unsigned() &&
      v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
    return invalid(key, key + " must be in [" + std::to_string(lo) + ", " +
                            std::to_string(hi) + "], got " + v.dump());
  out = v.get<int64_t>();
  if (out < lo || out > hi)
    return invalid(key, key + " must be in [" + std::to_string(lo) + ", " +
                            std::to_string(hi) + "], got " +
                            std::to_string(out));
  return std::nullopt;
}

std::optional<ApiError> asTokenIds(const std::string &key, const Json &v,
                                   std::vector<TokenId> &out) {
  if (!v.is_array())
    return invalid(key, key + " must be an array of token ids");
  for (const Json &t : v) {
    int64_t id;
    if (auto e = asInt(key, t, 0, std::numeric_limits<TokenId>::max(), id))
      return invalid(key, key +
                              " must be an array of token ids (integers "
                              "from 0), got " +
                              t.dump());
    out.push_back(TokenId(id));
  }
  return std::nullopt;
}

std::optional<ApiError> parseStop(const Json &v,
                                  std::vector<std::string> &out) {
  if (v.is_string()) {
    out.push_back(v.get<std::string>());
  } else if (v.is_array()) {
    for (const Json &s : v) {
      if (!s.is_string())
        return invalid("stop", "stop must be a string or an array of "
                               "strings, got an element that is " +
                                   std::string(typeName(s)));
      out.push_back(s.get<std::string>());
    }
  } else {
    return invalid("stop", std::string("stop must be a string or an array "
                                       "of strings, got ") +
                               typeName(v));
  }
  if (out.size() > kMaxStopStrings)
    return invalid("stop", "stop holds " + std::to_string(out.size()) +
                               " strings; at most " +
                               std::to_string(kMaxStopStrings) +
                               " are supported");
  for (const std::string &s : out)
    if (s.empty())
      return invalid("stop", "stop strings must not be empty");
  return std::nullopt;
}

std::optional<ApiError> parseMessages(const Json &v,
                                      std::vector<ChatMessage> &out) {
  if (!v.is_array() || v.empty())
    return invalid("messages", "messages must be a non-empty array of "
                               "{\"role\", \"content\"} objects");
  for (size_t i = 0; i < v.size(); ++i) {
    const Json &m = v[i];
    std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object())
      return invalid("messages", where + " must be an object");
    ChatMessage message;
    for (const auto &[key, value] : m.items()) {
      if (value.is_null()) // as absent, like the request's own fields
        continue;
      if (key == "role") {
        if (!value.is_string() || value.get<std::string>().empty())
          return invalid("messages", where + ".role must be a non-empty "
                                             "string");
        message.role = value.get<std::string>();
      } else if (key == "content") {
        if (value.is_string()) {
          message.content = value.get<std::string>();
        } else if (value.is_array()) {
          // Content parts: only text can reach a text-only model.
          for (const Json &part : value) {
            if (!part.is_object() || part.value("type", "") != "text" ||
                !part.contains("text") || !part["text"].is_string())
              return invalid("messages",
                             where + ".content: only {\"type\": \"text\", "
                                     "\"text\": ...} parts are supported");
            message.content += part["text"].get<std::string>();
          }
        } else {
          return invalid("messages", where + ".content must be a string or "
                                             "an array of text parts");
        }
      } else {
        return invalid("messages", where + "." + key +
                                       " is not supported (supported: role, "
                                       "content)");
      }
    }
    if (message.role.empty())
      return invalid("messages", where + " has no role");
    out.push_back(std::move(message));
  }
  return std::nullopt;
}

/// prompt: a string, a list of token ids, or a batch of either (a list
/// of strings and id lists).
std::optional<ApiError> parsePrompts(const Json &v,
                                     std::vector<PromptInput> &out) {
  const char *key = "prompt";
  auto one = [&](const Json &p,
                 const std::string &where) -> std::optional<ApiError> {
    PromptInput input;
    if (p.is_string()) {
      input.text = p.get<std::string>();
      if (input.text->empty())
        return invalid(key, where + " must not be empty");
    } else if (p.is_array() && !p.empty()) {
      if (std::optional<ApiError> e = asTokenIds(key, p, input.ids))
        return e;
    } else {
      return invalid(key, where + " must be a string or a non-empty array of "
                                  "token ids");
    }
    out.push_back(std::move(input));
    return std::nullopt;
  };
  if (v.is_string() || (v.is_array() && !v.empty() && v[0].is_number()))
    return one(v, "prompt");
  if (!v.is_array() || v.empty())
    return invalid(key, "prompt must be a string, an array of token ids, or "
                        "a non-empty array of those (a batch)");
  for (size_t i = 0; i < v.size(); ++i)
    if (std::optional<ApiError> e =
            one(v[i], "prompt[" + std::to_string(i) + "]"))
      return e;
  return std::nullopt;
}

} // namespace

std::optional<ApiError>
folio::server::parseGenerateRequest(Endpoint endpoint, const std::string &body,
                                    GenerateRequest &out) {
  Json root = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded())
    return invalid("", "the request body is not valid JSON");
  if (!root.is_object())
    return invalid("", "the request body must be a JSON object");
  bool chat = endpoint == Endpoint::ChatCompletions;
  out = GenerateRequest();
  out.endpoint = endpoint;
  SamplingParams &p = out.params;
  bool chatLogprobs = false;
  std::optional<int64_t> topLogprobs;
  const Json *streamOptions = nullptr;
  bool maxCompletionTokens = false;

  for (const auto &[key, v] : root.items()) {
    if (v.is_null())
      continue;
    std::optional<ApiError> e;
    int64_t i = 0;
    if (key == "model") {
      if (!v.is_string())
        return invalid(key, "model must be a string");
      out.model = v.get<std::string>();
    } else if (key == "prompt" && !chat) {
      e = parsePrompts(v, out.prompts);
    } else if (key == "messages" && chat) {
      e = parseMessages(v, out.messages);
    } else if (key == "max_tokens" ||
               (chat && key == "max_completion_tokens")) {
      // max_completion_tokens replaces the deprecated max_tokens and wins
      // when both are given (keys arrive sorted, not as sent).
      if (!(e = asInt(key, v, 1, std::numeric_limits<int32_t>::max(), i)) &&
          (key == "max_completion_tokens" || !maxCompletionTokens))
        p.maxTokens = size_t(i);
      if (key == "max_completion_tokens") {
        maxCompletionTokens = true;
        out.maxTokensField = key;
      }
    } else if (key == "temperature") {
      e = asFloat(key, v, p.temperature);
    } else if (key == "top_p") {
      e = asFloat(key, v, p.topP);
    } else if (key == "top_k") {
      if (!(e = asInt(key, v, -1, std::numeric_limits<int32_t>::max(), i)))
        p.topK = int32_t(i);
    } else if (key == "min_p") {
      e = asFloat(key, v, p.minP);
    } else if (key == "presence_penalty") {
      e = asFloat(key, v, p.presencePenalty);
    } else if (key == "frequency_penalty") {
      e = asFloat(key, v, p.frequencyPenalty);
    } else if (key == "repetition_penalty") {
      e = asFloat(key, v, p.repetitionPenalty);
    } else if (key == "seed") {
      if (!(e = asInt(key, v, 0, std::numeric_limits<int64_t>::max(), i)))
        p.seed = uint64_t(i);
    } else if (key == "n") {
      if (!(e = asInt(key, v, 1, 128, i)))
        p.n = int32_t(i);
    } else if (key == "stop") {
      e = parseStop(v, out.stop);
    } else if (key == "stop_token_ids") {
      e = asTokenIds(key, v, p.stopTokenIds);
    } else if (key == "ignore_eos") {
      e = asBool(key, v, p.ignoreEos);
    } else if (key == "stream") {
      e = asBool(key, v, out.stream);
    } else if (key == "stream_options") {
      streamOptions = &v;
    } else if (key == "echo" && !chat) {
      e = asBool(key, v, out.echo);
    } else if (key == "logprobs") {
      if (chat) {
        e = asBool(key, v, chatLogprobs);
      } else if (!(e = asInt(key, v, 0, kMaxLogprobs, i))) {
        p.logprobs = int32_t(i);
      }
    } else if (key == "top_logprobs" && chat) {
      if (!(e = asInt(key, v, 0, kMaxLogprobs, i)))
        topLogprobs = i;
    } else {
      return invalid(
          key, "'" + key + "' is not supported by " +
                   (chat ? "/v1/chat/completions" : "/v1/completions") +
                   "; supported fields: model, " +
                   (chat ? "messages, max_tokens, max_completion_tokens, "
                         : "prompt, max_tokens, echo, ") +
                   "temperature, top_p, top_k, min_p, presence_penalty, "
                   "frequency_penalty, repetition_penalty, seed, n, stop, "
                   "stop_token_ids, ignore_eos, logprobs, " +
                   (chat ? "top_logprobs, " : "") + "stream, stream_options");
    }
    if (e)
      return e;
  }

  if (out.model.empty())
    return invalid("model", "model is required (GET /v1/models lists the "
                            "served model)");
  if (chat && out.messages.empty())
    return invalid("messages", "messages is required");
  if (!chat && out.prompts.empty())
    return invalid("prompt", "prompt is required");
  if (chat) {
    if (topLogprobs && !chatLogprobs)
      return invalid("top_logprobs", "top_logprobs needs logprobs: true");
    if (chatLogprobs)
      p.logprobs = int32_t(topLogprobs.value_or(0));
  }
  if (streamOptions) {
    if (!out.stream)
      return invalid("stream_options", "stream_options needs stream: true");
    if (!streamOptions->is_object())
      return invalid("stream_options", "stream_options must be an object");
    for (const auto &[key, v] : streamOptions->items()) {
      if (v.is_null()) // as absent, like the request's own fields
        continue;
      if (key != "include_usage")
        return invalid("stream_options",
                       "stream_options." + key +
                           " is not supported (supported: include_usage)");
      if (auto e = asBool("stream_options.include_usage", v, out.includeUsage))
        return e;
    }
  }
  if (out.echo && p.logprobs)
    return invalid("echo", "echo together with logprobs needs the prompt's "
                           "logprobs, which folio-serve does not compute; "
                           "drop one of them");
  if (!chat && !p.maxTokens)
    p.maxTokens = kDefaultCompletionTokens;
  if (Status s = p.validate(); !s) {
    std::string message = s.message();
    return invalid(message.substr(0, message.find(' ')), message);
  }
  return std::nullopt;
}

std::string folio::server::errorBody(const ApiError &error) {
  const char *type = "invalid_request_error";
  switch (error.status) {
  case 401:
    type = "authentication_error";
    break;
  case 404:
    type = "not_found_error";
    break;
  case 429:
    type = "rate_limit_error";
    break;
  case 503:
    type = "service_unavailable_error";
    break;
  default:
    if (error.status >= 500)
      type = "server_error";
  }
  Json e = {{"message", error.message},
            {"type", type},
            {"param", error.param.empty() ? Json(nullptr) : Json(error.param)},
            {"code", error.code.empty() ? Json(nullptr) : Json(error.code)}};
  return Json{{"error", e}}.dump();
}
