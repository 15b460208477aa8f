//===- Generate.cpp - /v1/completions and /v1/chat/completions ------------===//
//
// One generation request from body to response: parse and check, build the
// prompts (a completions request may carry a batch; each prompt is its own
// engine request), submit them, then turn each sample's tokens into text
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
#include <cstdint>
#include <string_view>
#include <unordered_set>

using namespace folio;
using namespace folio::server;
using Json = nlohmann::json;

namespace {

/// How long a streaming writer waits for tokens before it looks at its
/// client again.
constexpr std::chrono::milliseconds kPollInterval(50);
/// With a batch of prompts, the wait on one prompt's stream while the
/// others may have news: short, so no prompt's tokens wait on another's.
constexpr std::chrono::milliseconds kBatchPollInterval(2);

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
  /// The text's characters so far: counted once each as the text grows
  /// (text_offset is in characters).
  size_t countedBytes = 0, countedChars = 0;
  size_t characters() {
    const std::string &t = text.text();
    if (t.size() < countedBytes) // cut before a stop string
      countedBytes = countedChars = 0;
    countedChars += utf8Characters(std::string_view(t).substr(countedBytes));
    countedBytes = t.size();
    return countedChars;
  }
};

/// A request from submission to its last byte; shared by the handler and
/// the streaming provider, which outlives the handler.
class Generation {
public:
  /// One stream per prompt, each with the request's n samples; sample g
  /// of the response is sample g % n of prompt g / n.
  Generation(ServerContext &context, GenerateRequest request, std::string id,
             std::vector<std::string> promptTexts,
             std::vector<std::shared_ptr<RequestStream>> streams)
      : context_(context), request_(std::move(request)), id_(std::move(id)),
        promptTexts_(std::move(promptTexts)), streams_(std::move(streams)) {
    samplesPerPrompt_ = streams_.front()->numSamples();
    for (size_t p = 0; p < streams_.size(); ++p)
      for (size_t i = 0; i < samplesPerPrompt_; ++i)
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
    bool waited = false;
    for (size_t p = 0; p < streams_.size(); ++p) {
      if (promptDone(p))
        continue;
      // Block on the first unfinished prompt only; take what the others
      // already have.
      std::chrono::milliseconds timeout = waited ? std::chrono::milliseconds(0)
                                          : streams_.size() == 1
                                              ? kPollInterval
                                              : kBatchPollInterval;
      waited = true;
      for (StreamEvent &event : streams_[p]->wait(timeout)) {
        size_t g = p * samplesPerPrompt_ + event.sample;
        Sample &s = samples_[g];
        if (s.done)
          continue;
        std::string delta = consume(s, g, event);
        if (streaming && (!delta.empty() || s.done || !s.headerSent ||
                          s.logprobsSent < s.logprobs.size()))
          out += sse(chunk(g, delta));
      }
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

  /// Lets the tokens of the next `interval` gather (returns early when
  /// every prompt's request ended).
  void gather(std::chrono::milliseconds interval) {
    auto deadline = std::chrono::steady_clock::now() + interval;
    for (const std::shared_ptr<RequestStream> &stream : streams_) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0)
        return;
      stream->waitAllFinished(left);
    }
  }

  /// Ends every sample still running (the client went away).
  void abort() {
    for (size_t p = 0; p < streams_.size(); ++p)
      if (!promptDone(p))
        context_.engine->abort(streams_[p]->id(), FinishReason::Abort);
  }

  Json response() const {
    Json choices = Json::array();
    for (size_t i = 0; i < samples_.size(); ++i) {
      const Sample &s = samples_[i];
      Json choice = {{"index", i},
                     {"logprobs", logprobsJson(i, 0)},
                     {"finish_reason", finishReasonName(s.reason)}};
      if (chat())
        choice["message"] = {{"role", "assistant"}, {"content", s.text.text()}};
      else
        choice["text"] = echo(i) + s.text.text();
      choices.push_back(std::move(choice));
    }
    Json body = chunkHeader();
    body["object"] = chat() ? "chat.completion" : "text_completion";
    body["choices"] = std::move(choices);
    body["usage"] = usage();
    return body;
  }

private:
  /// The engine's id of response sample g.
  RequestId sampleId(size_t g) const {
    const RequestId &id = streams_[g / samplesPerPrompt_]->id();
    return samplesPerPrompt_ == 1
               ? id
               : id + "#" + std::to_string(g % samplesPerPrompt_);
  }

  bool promptDone(size_t p) const {
    for (size_t i = 0; i < samplesPerPrompt_; ++i)
      if (!samples_[p * samplesPerPrompt_ + i].done)
        return false;
    return true;
  }

  /// What precedes sample g's text: its prompt with `echo`, else nothing.
  std::string echo(size_t g) const {
    return request_.echo ? promptTexts_[g / samplesPerPrompt_] : std::string();
  }

  /// Feeds one event's tokens through the sample's text stream; returns
  /// the text that became final.
  std::string consume(Sample &s, size_t g, const StreamEvent &event) {
    std::string delta;
    // A stop token (EOS or stop_token_ids) ends the text without being in
    // it, as in OpenAI's API.
    bool hideLast =
        event.finished && event.finishReason == FinishReason::Stop &&
        !event.tokens.empty() && stopTokens_.count(event.tokens.back());
    for (size_t j = 0; j < event.tokens.size() && !s.done; ++j) {
      TokenId token = event.tokens[j];
      ++s.numTokens;
      // In characters, as OpenAI's and vLLM's text_offset count.
      size_t offset = request_.params.logprobs ? s.characters() : 0;
      if (!(hideLast && j + 1 == event.tokens.size())) {
        Expected<std::string> piece = s.text.append(token);
        if (!piece) {
          finish(s, FinishReason::Error,
                 "cannot decode generated token: " + piece.status().message());
          context_.engine->abort(sampleId(g), FinishReason::Error);
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
        context_.engine->abort(sampleId(g), FinishReason::Stop);
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
  Json logprobsJson(size_t g, size_t from) const {
    if (!request_.params.logprobs)
      return nullptr;
    const Sample &s = samples_[g];
    size_t base = utf8Characters(echo(g));
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
      // OpenAI's completions always list the sampled token too: up to
      // logprobs + 1 entries (logprobs 0 gives just the sampled one).
      std::string sampled = tokenText(s.lpTokens[k]);
      if (!alternatives.contains(sampled))
        alternatives[sampled] = s.logprobs[k].logprob;
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
      choice["text"] = (s.headerSent ? std::string() : echo(i)) + delta;
    }
    s.headerSent = true;
    choice["logprobs"] = logprobsJson(i, s.logprobsSent);
    s.logprobsSent = s.logprobs.size();
    choice["finish_reason"] =
        s.done ? Json(finishReasonName(s.reason)) : Json(nullptr);
    Json c = chunkHeader();
    c["choices"] = Json::array({std::move(choice)});
    // With include_usage every chunk has the field, null but the last
    // (OpenAI's stream_options contract).
    if (request_.includeUsage)
      c["usage"] = nullptr;
    return c;
  }

  static std::string sse(const Json &j) { return "data: " + j.dump() + "\n\n"; }

  Json usage() const {
    size_t completion = 0;
    for (const Sample &s : samples_)
      completion += s.numTokens;
    size_t prompt = 0;
    for (const std::shared_ptr<RequestStream> &stream : streams_)
      prompt += stream->numPromptTokens();
    return Json{{"prompt_tokens", prompt},
                {"completion_tokens", completion},
                {"total_tokens", prompt + completion}};
  }

  ServerContext &context_;
  GenerateRequest request_;
  RequestId id_;
  std::vector<std::string> promptTexts_;
  std::vector<std::shared_ptr<RequestStream>> streams_;
  size_t samplesPerPrompt_ = 1;
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

/// How messages name prompt `index`: "prompt[i]" in a batch.
std::string promptName(const GenerateRequest &request, size_t index) {
  return request.prompts.size() > 1 ? "prompt[" + std::to_string(index) + "]"
                                    : "the prompt";
}

/// The token ids and text of prompt `index` (chat: the conversation), or
/// why there are none.
std::optional<ApiError> buildPrompt(ServerContext &c,
                                    const GenerateRequest &request,
                                    size_t index, std::vector<TokenId> &ids,
                                    std::string &text) {
  const Tokenizer &tokenizer = *c.tokenizer;
  bool chat = request.endpoint == Endpoint::ChatCompletions;
  std::string where = promptName(request, index);
  if (chat) {
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
  } else if (const std::optional<std::string> &promptText =
                 request.prompts[index].text) {
    text = *promptText;
  } else {
    ids = request.prompts[index].ids;
    for (TokenId id : ids)
      if (size_t(id) >= tokenizer.vocabSize())
        return badRequest("prompt", where + " token " + std::to_string(id) +
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
    return badRequest(chat ? "messages" : "prompt", encoded.status().message());
  ids = std::move(*encoded);
  return std::nullopt;
}

/// Refuses a prompt with no tokens or too many for max-model-len.
std::optional<ApiError> checkPromptLength(const ServerContext &c,
                                          const GenerateRequest &request,
                                          size_t index, size_t numTokens) {
  size_t limit = c.options.maxModelLen;
  bool chat = request.endpoint == Endpoint::ChatCompletions;
  std::string field = chat ? "messages" : "prompt";
  std::string where = promptName(request, index);
  if (numTokens == 0)
    return badRequest(field, where + " has no tokens");
  if (numTokens >= limit)
    return badRequest(field, where + " has " + std::to_string(numTokens) +
                                 " tokens, but the maximum context length "
                                 "(max-model-len) is " +
                                 std::to_string(limit) +
                                 " tokens, prompt and completion together");
  if (request.params.maxTokens && numTokens + *request.params.maxTokens > limit)
    return badRequest(request.maxTokensField,
                      where + " has " + std::to_string(numTokens) +
                          " tokens and " + request.maxTokensField + " is " +
                          std::to_string(*request.params.maxTokens) +
                          ", more than the maximum context length "
                          "(max-model-len) of " +
                          std::to_string(limit) + " tokens");
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

  // The engine would refuse them too, but with its own request id in the
  // message and no field named.
  for (TokenId t : request.params.stopTokenIds)
    if (size_t(t) >= c.tokenizer->vocabSize())
      return sendError(res,
                       badRequest("stop_token_ids",
                                  "stop_token_ids: " + std::to_string(t) +
                                      " is outside the vocabulary (" +
                                      std::to_string(c.tokenizer->vocabSize()) +
                                      " tokens)"));

  // Every prompt is built and checked before any is submitted: a batch
  // is admitted whole or refused.
  bool chat = endpoint == Endpoint::ChatCompletions;
  size_t numPrompts = chat ? 1 : request.prompts.size();
  std::vector<std::vector<TokenId>> promptIds(numPrompts);
  std::vector<std::string> promptTexts(numPrompts);
  for (size_t p = 0; p < numPrompts; ++p) {
    if (std::optional<ApiError> e =
            buildPrompt(c, request, p, promptIds[p], promptTexts[p]))
      return sendError(res, *e);
    if (std::optional<ApiError> e =
            checkPromptLength(c, request, p, promptIds[p].size()))
      return sendError(res, *e);
  }

  std::string id = std::string(chat ? "chatcmpl-" : "cmpl-") +
                   std::to_string(c.started) + "-" +
                   std::to_string(c.nextRequest++);
  std::vector<NewRequest> newRequests(numPrompts);
  for (size_t p = 0; p < numPrompts; ++p) {
    NewRequest &newRequest = newRequests[p];
    // The engine's id of each prompt of a batch; the response has one id.
    newRequest.requestId = numPrompts == 1 ? id : id + "-p" + std::to_string(p);
    newRequest.promptTokenIds = std::move(promptIds[p]);
    newRequest.samplingParams = request.params;
  }
  // The whole batch is admitted or none of it: no partial batch runs.
  size_t refused = SIZE_MAX;
  Expected<std::vector<std::shared_ptr<RequestStream>>> admitted =
      c.engine->submitAll(std::move(newRequests), &refused);
  if (!admitted) {
    ApiError e;
    e.status = c.engine->isDraining() ? 503 : statusFor(admitted.status());
    e.message = (numPrompts > 1 && refused != SIZE_MAX
                     ? "prompt[" + std::to_string(refused) + "]: "
                     : std::string()) +
                admitted.status().message();
    return sendError(res, e);
  }
  std::vector<std::shared_ptr<RequestStream>> streams = std::move(*admitted);

  bool streaming = request.stream;
  auto generation = std::make_shared<Generation>(
      c, std::move(request), id, std::move(promptTexts), std::move(streams));
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
    res.set_content(generation->response().dump(), "application/json");
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [generation, interval = c.options.minStreamInterval,
       lastWrite = std::chrono::steady_clock::time_point()](
          size_t, httplib::DataSink &sink) mutable {
        using Clock = std::chrono::steady_clock;
        // Tokens of the steps since the last write gather until the
        // interval is up: one write, and one wake-up here and at the
        // client, for all of them. The end is written at once (in this
        // call: a server that stops once its requests ended must not stop
        // before their last bytes).
        Clock::duration since = Clock::now() - lastWrite;
        if (since < interval)
          generation->gather(
              std::chrono::duration_cast<std::chrono::milliseconds>(interval -
                                                                    since));
        std::string out = generation->poll(/*streaming=*/true);
        if (!out.empty()) {
          if (!sink.write(out.data(), out.size())) {
            generation->abort(); // The client went away.
            return false;
          }
          lastWrite = Clock::now();
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
