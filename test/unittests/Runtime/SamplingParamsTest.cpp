//===- SamplingParamsTest.cpp - Validation messages -----------------------===//

#include "runtime/Sampler/SamplingParams.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

using namespace folio;

namespace {

/// Expects `edit` to make default parameters invalid with a message that
/// names `field`.
void expectInvalid(const std::function<void(SamplingParams &)> &edit,
                   const std::string &field, size_t vocabSize = 0) {
  SamplingParams params;
  edit(params);
  Status status = params.validate(vocabSize);
  ASSERT_FALSE(status.isOk()) << field;
  EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
  EXPECT_NE(status.message().find(field), std::string::npos)
      << status.message();
}

TEST(RuntimeSamplingParams, DefaultsAreValid) {
  EXPECT_TRUE(SamplingParams().validate().isOk());
  SamplingParams greedy;
  greedy.temperature = 0;
  greedy.topK = -1;
  greedy.logprobs = 0;
  EXPECT_TRUE(greedy.validate(10).isOk());
}

TEST(RuntimeSamplingParams, RejectsOutOfRangeFields) {
  expectInvalid([](SamplingParams &p) { p.temperature = -0.5f; },
                "temperature");
  expectInvalid([](SamplingParams &p) { p.temperature = NAN; }, "temperature");
  expectInvalid([](SamplingParams &p) { p.topK = -2; }, "top_k");
  expectInvalid([](SamplingParams &p) { p.topP = 0; }, "top_p");
  expectInvalid([](SamplingParams &p) { p.topP = 1.5f; }, "top_p");
  expectInvalid([](SamplingParams &p) { p.minP = -0.1f; }, "min_p");
  expectInvalid([](SamplingParams &p) { p.minP = 1.1f; }, "min_p");
  expectInvalid([](SamplingParams &p) { p.repetitionPenalty = 0; },
                "repetition_penalty");
  expectInvalid([](SamplingParams &p) { p.presencePenalty = 2.5f; },
                "presence_penalty");
  expectInvalid([](SamplingParams &p) { p.frequencyPenalty = -3; },
                "frequency_penalty");
  expectInvalid([](SamplingParams &p) { p.maxTokens = 0; }, "max_tokens");
  expectInvalid([](SamplingParams &p) { p.logprobs = 21; }, "logprobs");
  expectInvalid([](SamplingParams &p) { p.n = 0; }, "n must");
  expectInvalid(
      [](SamplingParams &p) {
        p.n = 2;
        p.temperature = 0;
      },
      "n > 1");
  expectInvalid([](SamplingParams &p) { p.stopTokenIds = {-1}; },
                "stop_token_ids");
  expectInvalid([](SamplingParams &p) { p.stopTokenIds = {10}; },
                "stop_token_ids", /*vocabSize=*/10);
}

} // namespace
