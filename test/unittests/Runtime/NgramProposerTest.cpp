//===- NgramProposerTest.cpp - Prompt lookup ------------------------------===//

#include "runtime/SpecDecode/NgramProposer.h"

#include <gtest/gtest.h>

using namespace folio;
using namespace folio::spec;

namespace {

std::unique_ptr<NgramProposer> make(size_t minN, size_t maxN) {
  auto p = NgramProposer::create(minN, maxN);
  EXPECT_TRUE(p) << p.status().message();
  return p ? std::move(*p) : nullptr;
}

TEST(RuntimeNgramProposer, ProposesWhatFollowedTheSuffixBefore) {
  auto p = make(1, 3);
  // ... 5 6 7 8 9 ... 5 6 7 -> 8 9 1
  std::vector<TokenId> t = {1, 5, 6, 7, 8, 9, 1, 2, 5, 6, 7};
  EXPECT_EQ(p->lookup(t, 3), (std::vector<TokenId>{8, 9, 1}));
  EXPECT_EQ(p->lookup(t, 1), (std::vector<TokenId>{8}));
}

TEST(RuntimeNgramProposer, ContinuesTheRepeatPastTheEnd) {
  auto p = make(1, 2);
  std::vector<TokenId> t = {3, 4, 3};
  // "3" occurred at 0; what followed it is "4 3", then the same again:
  // the sequence repeats with period 2.
  EXPECT_EQ(p->lookup(t, 5), (std::vector<TokenId>{4, 3, 4, 3, 4}));
  // A loop of period 3 caught by a 2-gram: 9 5 | 7 9 5 | 7 9 5.
  std::vector<TokenId> loop = {1, 7, 9, 5, 7, 9, 5, 7, 9, 5};
  EXPECT_EQ(p->lookup(loop, 7), (std::vector<TokenId>{7, 9, 5, 7, 9, 5, 7}));
  // Far from the end nothing is repeated: the continuation is the text.
  std::vector<TokenId> text = {1, 2, 3, 4, 5, 6, 1};
  EXPECT_EQ(p->lookup(text, 4), (std::vector<TokenId>{2, 3, 4, 5}));
}

TEST(RuntimeNgramProposer, LongerMatchWinsOverMoreRecentShorterOne) {
  auto p = make(1, 3);
  // Suffix "1 2 3": the 3-gram occurred at 0 (followed by 10); the 1-gram
  // "3" occurs more recently at 6 (followed by 20).
  std::vector<TokenId> t = {1, 2, 3, 10, 0, 0, 3, 20, 1, 2, 3};
  EXPECT_EQ(p->lookup(t, 1), (std::vector<TokenId>{10}));
}

TEST(RuntimeNgramProposer, MostRecentOccurrenceWins) {
  auto p = make(2, 2);
  std::vector<TokenId> t = {7, 8, 1, 7, 8, 2, 7, 8};
  EXPECT_EQ(p->lookup(t, 1), (std::vector<TokenId>{2}));
}

TEST(RuntimeNgramProposer, RespectsTheMinimumLength) {
  auto p = make(2, 3);
  // Only the 1-gram "4" recurs: below the minimum, no proposal.
  std::vector<TokenId> t = {4, 9, 1, 4};
  EXPECT_TRUE(p->lookup(t, 2).empty());
  EXPECT_TRUE(p->lookup({}, 2).empty());
  EXPECT_TRUE(p->lookup({4}, 2).empty());
}

TEST(RuntimeNgramProposer, ProposeHonoursMaxDrafts) {
  auto p = make(1, 2);
  std::vector<TokenId> t = {1, 2, 3, 4, 1};
  RequestId id = "r";
  SamplingParams params;
  ProposeInput in;
  in.requestId = &id;
  in.tokens = &t;
  in.params = &params;
  in.maxDrafts = 2;
  std::vector<Proposal> out;
  ASSERT_TRUE(p->propose({in, in}, 3, out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].tokens, (std::vector<TokenId>{2, 3}));
  EXPECT_TRUE(out[0].probs.empty()) << "n-gram drafts are deterministic";
}

TEST(RuntimeNgramProposer, RefusesBadBounds) {
  auto zero = NgramProposer::create(0, 3);
  ASSERT_FALSE(zero);
  EXPECT_NE(zero.status().message().find("--ngram-prompt-lookup-min"),
            std::string::npos);
  EXPECT_FALSE(NgramProposer::create(4, 3));
}

} // namespace
