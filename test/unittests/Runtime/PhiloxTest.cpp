//===- PhiloxTest.cpp - Counter-based random numbers ----------------------===//

#include "runtime/Sampler/Philox.h"

#include <gtest/gtest.h>

#include <set>

using namespace folio;

namespace {

// Known-answer vectors from Random123's kat_vectors (philox4x32_10).
TEST(RuntimePhilox, MatchesRandom123KnownAnswers) {
  EXPECT_EQ(philox4x32({0, 0, 0, 0}, {0, 0}),
            (PhiloxCounter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                       {0xffffffff, 0xffffffff}),
            (PhiloxCounter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                       {0xa4093822, 0x299f31d0}),
            (PhiloxCounter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(RuntimePhilox, UniformsAreInRangeAndDistinct) {
  std::set<double> seen;
  double sum = 0;
  for (uint64_t position = 0; position < 4096; ++position) {
    double u = philoxUniform(42, position);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    seen.insert(u);
    sum += u;
  }
  EXPECT_EQ(seen.size(), 4096u);
  EXPECT_NEAR(sum / 4096, 0.5, 0.02);
  EXPECT_EQ(philoxUniform(42, 7), philoxUniform(42, 7));
  EXPECT_NE(philoxUniform(42, 7), philoxUniform(43, 7));
  EXPECT_NE(philoxUniform(42, 7), philoxUniform(42, 7, /*stream=*/1));
}

} // namespace
