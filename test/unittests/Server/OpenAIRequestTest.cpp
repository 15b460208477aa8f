//===- OpenAIRequestTest.cpp - Request bodies to sampling parameters ------===//
//
// Every supported field lands in SamplingParams as OpenAI/vLLM mean it;
// every unsupported or malformed one is a 400 that names it.
//
//===----------------------------------------------------------------------===//

#include "runtime/Server/OpenAIRequest.h"

#include <gtest/gtest.h>

using namespace folio;
using namespace folio::server;

namespace {

GenerateRequest parseOk(Endpoint endpoint, const std::string &body) {
  GenerateRequest r;
  std::optional<ApiError> e = parseGenerateRequest(endpoint, body, r);
  EXPECT_FALSE(e) << body << ": " << (e ? e->message : "");
  return r;
}

ApiError parseBad(Endpoint endpoint, const std::string &body) {
  GenerateRequest r;
  std::optional<ApiError> e = parseGenerateRequest(endpoint, body, r);
  EXPECT_TRUE(e) << body;
  return e ? *e : ApiError();
}

constexpr Endpoint kCompletions = Endpoint::Completions;
constexpr Endpoint kChat = Endpoint::ChatCompletions;

TEST(OpenAIRequest, CompletionFieldsMapOntoSamplingParams) {
  GenerateRequest r =
      parseOk(kCompletions,
              R"({"model":"m","prompt":"hi","max_tokens":5,"temperature":0.5,
          "top_p":0.9,"top_k":40,"min_p":0.05,"presence_penalty":0.5,
          "frequency_penalty":-0.5,"repetition_penalty":1.2,"seed":11,"n":2,
          "stop":["a","bc"],"stop_token_ids":[3,4],"logprobs":2,
          "ignore_eos":true,"stream":true,"stream_options":{"include_usage":true},
          "user":null})");
  EXPECT_EQ(r.model, "m");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0].text, std::optional<std::string>("hi"));
  const SamplingParams &p = r.params;
  EXPECT_EQ(p.maxTokens, std::optional<size_t>(5));
  EXPECT_FLOAT_EQ(p.temperature, 0.5f);
  EXPECT_FLOAT_EQ(p.topP, 0.9f);
  EXPECT_EQ(p.topK, 40);
  EXPECT_FLOAT_EQ(p.minP, 0.05f);
  EXPECT_FLOAT_EQ(p.presencePenalty, 0.5f);
  EXPECT_FLOAT_EQ(p.frequencyPenalty, -0.5f);
  EXPECT_FLOAT_EQ(p.repetitionPenalty, 1.2f);
  EXPECT_EQ(p.seed, std::optional<uint64_t>(11));
  EXPECT_EQ(p.n, 2);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_EQ(p.stopTokenIds, (std::vector<TokenId>{3, 4}));
  EXPECT_EQ(p.logprobs, std::optional<int32_t>(2));
  EXPECT_TRUE(p.ignoreEos);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.includeUsage);
}

TEST(OpenAIRequest, BatchedPrompts) {
  GenerateRequest r = parseOk(
      kCompletions, R"({"model":"m","prompt":["hi", [5, 6], "there"]})");
  ASSERT_EQ(r.prompts.size(), 3u);
  EXPECT_EQ(r.prompts[0].text, std::optional<std::string>("hi"));
  EXPECT_FALSE(r.prompts[1].text);
  EXPECT_EQ(r.prompts[1].ids, (std::vector<TokenId>{5, 6}));
  EXPECT_EQ(r.prompts[2].text, std::optional<std::string>("there"));
  // One string in a list is one prompt, as one list of ids is.
  EXPECT_EQ(
      parseOk(kCompletions, R"({"model":"m","prompt":["x"]})").prompts.size(),
      1u);
  EXPECT_EQ(parseOk(kCompletions, R"({"model":"m","prompt":[[1, 2]]})")
                .prompts.size(),
            1u);
}

TEST(OpenAIRequest, Defaults) {
  GenerateRequest c = parseOk(kCompletions, R"({"model":"m","prompt":[1,2]})");
  ASSERT_EQ(c.prompts.size(), 1u);
  EXPECT_EQ(c.prompts[0].ids, (std::vector<TokenId>{1, 2}));
  EXPECT_EQ(c.params.maxTokens, std::optional<size_t>(16)); // OpenAI's
  EXPECT_FALSE(c.params.logprobs);
  EXPECT_FALSE(c.stream);
  GenerateRequest chat = parseOk(
      kChat, R"({"model":"m","messages":[{"role":"user","content":"x"}]})");
  EXPECT_FALSE(chat.params.maxTokens); // up to the end of the context
  ASSERT_EQ(chat.messages.size(), 1u);
  EXPECT_EQ(chat.messages[0].role, "user");
}

TEST(OpenAIRequest, ChatLogprobsAndContentParts) {
  GenerateRequest r =
      parseOk(kChat, R"({"model":"m","logprobs":true,"top_logprobs":3,
                 "max_completion_tokens":7,
                 "messages":[{"role":"system","content":"s"},
                             {"role":"user","content":[{"type":"text","text":"a"},
                                                       {"type":"text","text":"b"}]}]})");
  EXPECT_EQ(r.params.logprobs, std::optional<int32_t>(3));
  EXPECT_EQ(r.params.maxTokens, std::optional<size_t>(7));
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[1].content, "ab");
  GenerateRequest none = parseOk(kChat, R"({"model":"m","logprobs":false,
                         "messages":[{"role":"user","content":"x"}]})");
  EXPECT_FALSE(none.params.logprobs);
}

// Tests that max_completion_tokens, which replaces max_tokens on chat, wins
// when both are given, in either order in the body (the JSON object's keys
// are walked sorted), and that null inside a message or stream_options is
// absent as at the top level.
TEST(OpenAIRequest, MaxCompletionTokensWinsAndNullsAreAbsent) {
  for (const char *body :
       {R"({"model":"m","max_tokens":8,"max_completion_tokens":4,
            "messages":[{"role":"user","content":"x"}]})",
        R"({"model":"m","max_completion_tokens":4,"max_tokens":8,
            "messages":[{"role":"user","content":"x"}]})"})
    EXPECT_EQ(parseOk(kChat, body).params.maxTokens, std::optional<size_t>(4));
  GenerateRequest r = parseOk(
      kChat,
      R"({"model":"m","stream":true,"stream_options":{"include_usage":null},
                 "messages":[{"role":"user","content":null,"name":null}]})");
  EXPECT_FALSE(r.includeUsage);
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].content, "");
}

TEST(OpenAIRequest, RefusalsNameTheField) {
  struct Case {
    Endpoint endpoint;
    const char *body;
    const char *param;
    const char *says;
  };
  const Case cases[] = {
      {kCompletions, R"({"model":"m","prompt":"x","logit_bias":{}})",
       "logit_bias", "'logit_bias' is not supported"},
      {kCompletions, R"({"model":"m","prompt":"x","suffix":"y"})", "suffix",
       "not supported"},
      {kChat,
       R"({"model":"m","messages":[{"role":"user","content":"x"}],"echo":true})",
       "echo", "not supported"},
      {kChat,
       R"({"model":"m","messages":[{"role":"user","content":"x"}],"prompt":"y"})",
       "prompt", "not supported"},
      {kCompletions, R"({"model":"m","prompt":"x","temperature":"hot"})",
       "temperature", "must be a number"},
      {kCompletions, R"({"model":"m","prompt":"x","temperature":-1})",
       "temperature", "temperature must be a finite number >= 0"},
      {kCompletions, R"({"model":"m","prompt":"x","top_p":0})", "top_p",
       "top_p must be in (0, 1]"},
      {kCompletions, R"({"model":"m","prompt":"x","max_tokens":0})",
       "max_tokens", "max_tokens must be in [1,"},
      {kCompletions, R"({"model":"m","prompt":"x","n":0})", "n",
       "n must be in [1,"},
      {kCompletions, R"({"model":"m","prompt":"x","n":2,"temperature":0})", "n",
       "n > 1 needs temperature > 0"},
      {kCompletions, R"({"model":"m","prompt":"x","seed":-3})", "seed",
       "seed must be in [0,"},
      {kCompletions,
       R"({"model":"m","prompt":"x","seed":18446744073709551615})", "seed",
       "got 18446744073709551615"},
      {kCompletions, R"({"model":"m","prompt":"x","logprobs":21})", "logprobs",
       "logprobs must be in [0, 20]"},
      {kCompletions, R"({"model":"m","prompt":"x","stop":[""]})", "stop",
       "must not be empty"},
      {kCompletions, R"({"model":"m","prompt":"x","stop":7})", "stop",
       "stop must be a string or an array of strings"},
      {kCompletions, R"({"model":"m","prompt":["a",""]})", "prompt",
       "prompt[1] must not be empty"},
      {kCompletions, R"({"model":"m","prompt":["a",[]]})", "prompt",
       "prompt[1] must be a string or a non-empty array of token ids"},
      {kCompletions, R"({"model":"m","prompt":["a",7]})", "prompt",
       "prompt[1] must be a string or a non-empty array of token ids"},
      {kCompletions, R"({"model":"m","prompt":[]})", "prompt",
       "a non-empty array of those (a batch)"},
      {kCompletions, R"({"model":"m","prompt":""})", "prompt",
       "prompt must not be empty"},
      {kCompletions, R"({"model":"m","prompt":[1,-2]})", "prompt", "token ids"},
      {kCompletions, R"({"model":"m","prompt":"x","echo":true,"logprobs":1})",
       "echo", "prompt's logprobs"},
      {kCompletions,
       R"({"model":"m","prompt":"x","stream_options":{"include_usage":true}})",
       "stream_options", "needs stream: true"},
      {kCompletions,
       R"({"model":"m","prompt":"x","stream":true,"stream_options":{"x":1}})",
       "stream_options", "stream_options.x is not supported"},
      {kChat,
       R"({"model":"m","messages":[{"role":"user","content":"x"}],"top_logprobs":2})",
       "top_logprobs", "needs logprobs: true"},
      {kChat,
       R"({"model":"m","messages":[{"role":"user","content":"x","tool_calls":[]}]})",
       "messages", "messages[0].tool_calls is not supported"},
      {kChat,
       R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url"}]}]})",
       "messages", "only {\"type\": \"text\""},
      {kChat, R"({"model":"m","messages":[]})", "messages", "non-empty array"},
      {kCompletions, R"({"prompt":"x"})", "model", "model is required"},
      {kCompletions, R"({"model":"m"})", "prompt", "prompt is required"},
  };
  for (const Case &c : cases) {
    ApiError e = parseBad(c.endpoint, c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_NE(e.message.find(c.says), std::string::npos)
        << c.body << " -> " << e.message;
  }
}

TEST(OpenAIRequest, BadJson) {
  ApiError e = parseBad(kCompletions, "{\"model\":");
  EXPECT_EQ(e.status, 400);
  EXPECT_NE(e.message.find("not valid JSON"), std::string::npos);
  EXPECT_NE(parseBad(kCompletions, "[1]").message.find("JSON object"),
            std::string::npos);
}

TEST(OpenAIRequest, ErrorBodyHasOpenAIShape) {
  ApiError e;
  e.status = 404;
  e.message = "no such model";
  e.param = "model";
  e.code = "model_not_found";
  EXPECT_EQ(errorBody(e),
            R"({"error":{"code":"model_not_found","message":"no such model",)"
            R"("param":"model","type":"not_found_error"}})");
}

} // namespace
