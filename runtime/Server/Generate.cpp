//===- Generate.cpp - /v1/completions and /v1/chat/completions ------------===//
//
// One generation request from body to response: parse and check, build the
// prompt, submit to the engine, then turn each sample's tokens into text
// (with stop strings) and logprobs, sent as server-sent events while they
// come or as one JSON body at the end. A streaming client that goes away
// makes a write fail, which aborts the request and frees its blocks.
//
//===----------------------------------------------------------------------===//

#include "runtime/Server/ChatTemplate.h"
#include "runtime/Server/ServerContext.h"
#include "runtime/Server/TextStream.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <unordered_set>

using namespace folio;
using namespace folio::server;
using Json = nlohmann::json;

namespace {

/// How long a streaming writer waits for tokens before it looks at its
/// client again.
constexpr std::chrono::milliseconds kPollInterval(50);

struct Sample {
  explicit Sample(const Tokenizer &tokenizer, std::vector<std::string> stop)
      : text(tokenizer, std::move(stop)) {}
  TextStream text;
  bool done = false;
  FinishReason reason = FinishReason::None;
  std::string error;
  size_t numTokens = 0;
  /// Logprobs of the tokens consumed, and where each token's text starts.
  std::vector<TokenId> lpTokens;
  std::vector<TokenLogprobs> logprobs;
  std::vector<size_t> textOffsets;
  size_t logprobsSent = 0;
  bool headerSent = false; ///< chat: the role; completions: the echo
};

/// A request from submission to its last byte; shared by the handler and
/// the streaming provider, which outlives the handler.
class Generation {
public:
  Generation(ServerContext &context, GenerateRequest request, std::string id,
             std::string promptText, std::shared_ptr<RequestStream> stream)
      : context_(context), request_(std::move(request)), id_(std::move(id)),
        promptText_(std::move(promptText)), stream_(std::move(stream)) {
    for (size_t i = 0; i < stream_->numSamples(); ++i)
      samples_.emplace_back(*context_.tokenizer, request_.stop);
    stopTokens_.insert(request_.params.stopTokenIds.begin(),
                       request_.params.stopTokenIds.end());
    if (context_.options.eosTokenId && !request_.params.ignoreEos)
      stopTokens_.insert(*context_.options.eosTokenId);
  }

  bool chat() const { return request_.endpoint == Endpoint::ChatCompletions; }
  bool allDone() const {
    return std::all_of(samples_.begin(), samples_.end(),
                       [](const Sample &s) { return s.done; });
  }
  /// The first error a sample ended with, if any.
  const std::string *error() const {
    for (const Sample &s : samples_)
      if (s.reason == FinishReason::Error)
        return &s.error;
    return nullptr;
  }

  /// Waits for the engine's news and applies it; streaming: returns the
  /// SSE text to send.
  std::string poll(bool streaming) {
    std::string out;
    for (StreamEvent &event : stream_->wait(kPollInterval)) {
      Sample &s = samples_[event.sample];
      if (s.done)
        continue;
      std::string delta = consume(s, event);
      if (streaming && (!delta.empty() || s.done || !s.headerSent ||
                        s.logprobsSent < s.logprobs.size()))
        out += sse(chunk(event.sample, delta));
    }
    if (streaming && allDone()) {
      if (const std::string *e = error()) {
        ApiError err;
        err.status = 500;
        err.message = *e;
        out += "data: " + errorBody(err) + "\n\n";
      } else if (request_.includeUsage) {
        Json c = chunkHeader();
        c["choices"] = Json::array();
        c["usage"] = usage();
        out += sse(c);
      }
      out += "data: [DONE]\n\n";
    }
    return out;
  }

  /// Ends every sample still running (the client went away).
  void abort() {
    if (!allDone())
      context_.engine->abort(id_, FinishReason::Abort);
  }

  Json response() const {
    Json choices = Json::array();
    for (size_t i = 0; i < samples_.size(); ++i) {
      const Sample &s = samples_[i];
      Json choice = {{"index", i},
                     {"logprobs", logprobsJson(s, 0)},
                     {"finish_reason", finishReasonName(s.reason)}};
      if (chat())
        choice["message"] = {{"role", "assistant"}, {"content", s.text.text()}};
      else
        choice["text"] =
            (request_.echo ? promptText_ : std::string()) + s.text.text();
      choices.push_back(std::move(choice));
    }
    Json body = chunkHeader();
    body["object"] = chat() ? "chat.completion" : "text_completion";
    body["choices"] = std::move(choices);
    body["usage"] = usage();
    return body;
  }

private:
  RequestId sampleId(size_t i) const {
    return samples_.size() == 1 ? id_ : id_ + "#" + std::to_string(i);
  }

  /// Feeds one event's tokens through the sample's text stream; returns
  /// the text that became final.
  std::string consume(Sample &s, const StreamEvent &event) {
    std::string delta;
    // A stop token (EOS or stop_token_ids) ends the text without being in
    // it, as in OpenAI's API.
    bool hideLast =
        event.finished && event.finishReason == FinishReason::Stop &&
        !event.tokens.empty() && stopTokens_.count(event.tokens.back());
    for (size_t j = 0; j < event.tokens.size() && !s.done; ++j) {
      TokenId token = event.tokens[j];
      ++s.numTokens;
      size_t offset = s.text.text().size();
      if (!(hideLast && j + 1 == event.tokens.size())) {
        Expected<std::string> piece = s.text.append(token);
        if (!piece) {
          finish(s, FinishReason::Error,
                 "cannot decode generated token: " + piece.status().message());
          context_.engine->abort(sampleId(event.sample), FinishReason::Error);
          return delta;
        }
        delta += *piece;
      }
      if (request_.params.logprobs && j < event.logprobs.size()) {
        s.lpTokens.push_back(token);
        s.logprobs.push_back(event.logprobs[j]);
        s.textOffsets.push_back(offset);
      }
      if (s.text.stopped()) {
        finish(s, FinishReason::Stop, "");
        context_.engine->abort(sampleId(event.sample), FinishReason::Stop);
      }
    }
    if (event.finished && !s.done) {
      Expected<std::string> rest = s.text.flush();
      if (rest)
        delta += *rest;
      finish(s, event.finishReason, event.error);
    }
    return delta;
  }

  void finish(Sample &s, FinishReason reason, const std::string &error) {
    s.done = true;
    s.reason = reason;
    s.error = error;
  }

  std::string tokenText(TokenId token) const {
    Expected<std::string> text = context_.tokenizer->decode({token});
    return text ? *text : std::string();
  }

  /// Logprobs of the sample's tokens from `from` on, in the endpoint's
  /// shape; null when the request asked for none.
  Json logprobsJson(const Sample &s, size_t from) const {
    if (!request_.params.logprobs)
      return nullptr;
    size_t base = request_.echo ? promptText_.size() : 0;
    if (chat()) {
      Json content = Json::array();
      for (size_t k = from; k < s.logprobs.size(); ++k) {
        auto entry = [&](TokenId t, float lp) {
          std::string text = tokenText(t);
          std::vector<int> bytes;
          for (char c : text)
            bytes.push_back(int(static_cast<unsigned char>(c)));
          return Json{{"token", text}, {"logprob", lp}, {"bytes", bytes}};
        };
        Json e = entry(s.lpTokens[k], s.logprobs[k].logprob);
        Json top = Json::array();
        for (const auto &[t, lp] : s.logprobs[k].top)
          top.push_back(entry(t, lp));
        e["top_logprobs"] = std::move(top);
        content.push_back(std::move(e));
      }
      return Json{{"content", std::move(content)}};
    }
    Json tokens = Json::array(), tokenLogprobs = Json::array(),
         top = Json::array(), offsets = Json::array();
    for (size_t k = from; k < s.logprobs.size(); ++k) {
      tokens.push_back(tokenText(s.lpTokens[k]));
      tokenLogprobs.push_back(s.logprobs[k].logprob);
      Json alternatives = Json::object();
      for (const auto &[t, lp] : s.logprobs[k].top)
        alternatives[tokenText(t)] = lp;
      top.push_back(std::move(alternatives));
      offsets.push_back(base + s.textOffsets[k]);
    }
    return Json{{"tokens", std::move(tokens)},
                {"token_logprobs", std::move(tokenLogprobs)},
                {"top_logprobs", std::move(top)},
                {"text_offset", std::move(offsets)}};
  }

  Json chunkHeader() const {
    return Json{
        {"id", id_},
        {"object", chat() ? "chat.completion.chunk" : "text_completion"},
        {"created", int64_t(created_)},
        {"model", context_.options.servedModelName}};
  }

  Json chunk(size_t i, const std::string &delta) {
    Sample &s = samples_[i];
    Json choice = {{"index", i}};
    if (chat()) {
      Json d = Json::object();
      if (!s.headerSent)
        d["role"] = "assistant";
      if (!delta.empty() || !s.headerSent)
        d["content"] = delta;
      choice["delta"] = std::move(d);
    } else {
      choice["text"] =
          (!s.headerSent && request_.echo ? promptText_ : std::string()) +
          delta;
    }
    s.headerSent = true;
    choice["logprobs"] = logprobsJson(s, s.logprobsSent);
    s.logprobsSent = s.logprobs.size();
    choice["finish_reason"] =
        s.done ? Json(finishReasonName(s.reason)) : Json(nullptr);
    Json c = chunkHeader();
    c["choices"] = Json::array({std::move(choice)});
    return c;
  }

  static std::string sse(const Json &j) { return "data: " + j.dump() + "\n\n"; }

  Json usage() const {
    size_t completion = 0;
    for (const Sample &s : samples_)
      completion += s.numTokens;
    size_t prompt = stream_->numPromptTokens();
    return Json{{"prompt_tokens", prompt},
                {"completion_tokens", completion},
                {"total_tokens", prompt + completion}};
  }

  ServerContext &context_;
  GenerateRequest request_;
  RequestId id_;
  std::string promptText_;
  std::shared_ptr<RequestStream> stream_;
  std::vector<Sample> samples_;
  std::unordered_set<TokenId> stopTokens_;
  std::time_t created_ = std::time(nullptr);
};

ApiError badRequest(const std::string &param, const std::string &message) {
  ApiError e;
  e.status = 400;
  e.param = param;
  e.message = message;
  return e;
}

/// The prompt's token ids and text, or why there are none.
std::optional<ApiError> buildPrompt(ServerContext &c,
                                    const GenerateRequest &request,
                                    std::vector<TokenId> &ids,
                                    std::string &text) {
  const Tokenizer &tokenizer = *c.tokenizer;
  if (request.endpoint == Endpoint::ChatCompletions) {
    if (!c.options.chatTemplateError.empty())
      return badRequest("messages", c.options.chatTemplateError);
    if (c.options.chatTemplate) {
      Expected<std::string> rendered =
          c.options.chatTemplate->render(request.messages);
      if (!rendered)
        return badRequest("messages", rendered.status().message());
      text = std::move(*rendered);
    } else {
      text = renderDefaultChat(request.messages);
    }
  } else if (request.promptText) {
    text = *request.promptText;
  } else {
    ids = request.promptIds;
    for (TokenId id : ids)
      if (size_t(id) >= tokenizer.vocabSize())
        return badRequest("prompt", "prompt token " + std::to_string(id) +
                                        " is outside the vocabulary (" +
                                        std::to_string(tokenizer.vocabSize()) +
                                        " tokens)");
    Expected<std::string> decoded = tokenizer.decode(ids);
    if (!decoded)
      return badRequest("prompt", decoded.status().message());
    text = *decoded;
    return std::nullopt;
  }
  Expected<std::vector<TokenId>> encoded = tokenizer.encode(text);
  if (!encoded)
    return badRequest(request.endpoint == Endpoint::ChatCompletions ? "messages"
                                                                    : "prompt",
                      encoded.status().message());
  ids = std::move(*encoded);
  return std::nullopt;
}

int statusFor(const Status &s) {
  switch (s.code()) {
  case StatusCode::InvalidArgument:
    return 400;
  case StatusCode::NotFound:
    return 404;
  case StatusCode::AlreadyExists:
    return 409;
  case StatusCode::ResourceExhausted:
    return 429;
  default:
    return 500;
  }
}

} // namespace

void folio::server::handleGenerate(ServerContext &c, Endpoint endpoint,
                                   const httplib::Request &req,
                                   httplib::Response &res) {
  if (c.engine->isDraining()) {
    ApiError e;
    e.status = 503;
    e.message = "the server is shutting down and admits no new requests";
    return sendError(res, e);
  }
  GenerateRequest request;
  if (std::optional<ApiError> e =
          parseGenerateRequest(endpoint, req.body, request))
    return sendError(res, *e);
  if (request.model != c.options.servedModelName) {
    ApiError e;
    e.status = 404;
    e.param = "model";
    e.code = "model_not_found";
    e.message = "the model '" + request.model +
                "' does not exist; this server serves '" +
                c.options.servedModelName + "'";
    return sendError(res, e);
  }

  std::vector<TokenId> promptIds;
  std::string promptText;
  if (std::optional<ApiError> e =
          buildPrompt(c, request, promptIds, promptText))
    return sendError(res, *e);
  size_t limit = c.options.maxModelLen;
  std::string field =
      endpoint == Endpoint::ChatCompletions ? "messages" : "prompt";
  if (promptIds.empty())
    return sendError(res, badRequest(field, "the prompt has no tokens"));
  if (promptIds.size() >= limit)
    return sendError(
        res,
        badRequest(field, "the prompt has " + std::to_string(promptIds.size()) +
                              " tokens, but the maximum context length "
                              "(max-model-len) is " +
                              std::to_string(limit) +
                              " tokens, prompt and completion together"));
  if (request.params.maxTokens &&
      promptIds.size() + *request.params.maxTokens > limit)
    return sendError(
        res, badRequest("max_tokens",
                        "the prompt has " + std::to_string(promptIds.size()) +
                            " tokens and max_tokens is " +
                            std::to_string(*request.params.maxTokens) +
                            ", more than the maximum context length "
                            "(max-model-len) of " +
                            std::to_string(limit) + " tokens"));

  std::string id =
      std::string(endpoint == Endpoint::ChatCompletions ? "chatcmpl-"
                                                        : "cmpl-") +
      std::to_string(c.started) + "-" + std::to_string(c.nextRequest++);
  NewRequest newRequest;
  newRequest.requestId = id;
  newRequest.promptTokenIds = std::move(promptIds);
  newRequest.samplingParams = request.params;
  Expected<std::shared_ptr<RequestStream>> stream =
      c.engine->submit(std::move(newRequest));
  if (!stream) {
    ApiError e;
    e.status = c.engine->isDraining() ? 503 : statusFor(stream.status());
    e.message = stream.status().message();
    return sendError(res, e);
  }

  bool streaming = request.stream;
  auto generation = std::make_shared<Generation>(
      c, std::move(request), id, std::move(promptText), std::move(*stream));
  if (!streaming) {
    // No way to see the client leave before the answer is written: the
    // request runs to its end (max_tokens bounds it).
    while (!generation->allDone())
      generation->poll(/*streaming=*/false);
    if (const std::string *error = generation->error()) {
      ApiError e;
      e.status = 500;
      e.message = *error;
      return sendError(res, e);
    }
    res.set_content(generation->response().dump(), "application/Json");
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [generation](size_t, httplib::DataSink &sink) {
        std::string out = generation->poll(/*streaming=*/true);
        if (!out.empty() && !sink.write(out.data(), out.size())) {
          generation->abort(); // The client went away.
          return false;
        }
        if (generation->allDone())
          sink.done();
        return true;
      },
      [generation](bool success) {
        if (!success)
          generation->abort();
      });
}
