//===- Bf16ParityTest.cpp - Zoo models with bf16 weights ------------------===//
//
// bf16 keeps 8 significant bits: rounding a weight (and, on the oneDNN path
// for more than 4 rows, its input) costs a relative error of at most 2^-9
// each, so one dot product is off by at most 2^-8 * sum|x_i w_i|. A logit
// sits behind every linear stage of the model in series (per layer: the
// q/k/v projection, the output projection, gate/up and down; then the
// lm_head), and each stage's error reaches the residual stream and so the
// logits. Summing the worst cases over the 4L + 1 stages, relative to the
// largest logit:
//
//   max |logit_bf16 - logit_ref| <= (4L + 1) * 2^-8 * max |logit_ref|
//
// (3.5e-2 for the zoo's L = 2). The bound is loose in one way (rounding
// errors are random and partly cancel) and not strict in another
// (sum|x w| may exceed |sum x w|), so the test also records the measured
// ratio; see docs/bench-cpu-roofline.md.
//
// Greedy tokens may legitimately differ where the reference's top-2 margin
// is smaller than twice that bound: two logits can each move by it. So
// tokens must match (and logits stay within the bound) at every step up to
// the first whose reference margin is below 2 * bound; after that the
// contexts may differ and nothing is compared. Step 0 is always compared.
//
//===----------------------------------------------------------------------===//

#include "test/unittests/Core/ZooRun.h"

using namespace folio;
using namespace folio::testing;

namespace {

/// Top-1 minus top-2 of a row.
double topMargin(const float *row, int64_t n) {
  double a = -INFINITY, b = -INFINITY;
  for (int64_t i = 0; i < n; ++i) {
    double v = row[i];
    if (v > a) {
      b = a;
      a = v;
    } else if (v > b) {
      b = v;
    }
  }
  return a - b;
}

double maxAbs(const float *row, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i)
    m = std::max(m, double(std::fabs(row[i])));
  return m;
}

class ZooBf16 : public ::testing::TestWithParam<ModelForm> {};

TEST_P(ZooBf16, WithinBoundOfOnnxRuntimeWhileMarginsAllow) {
  ModelForm mf = GetParam();
  RefFixture ref = folio::testing::loadFixtureFor(mf);
  ASSERT_TRUE(ref.ok) << "missing fixture for " << mf;
  auto p = compile(mf.arch, mf.form);
  ASSERT_TRUE(p);
  int64_t layers = 0;
  for (const plan::Argument &a : p->inputs)
    layers += p->values[size_t(a.value)].kind == plan::ValueInfo::Kind::KVCache;
  ASSERT_GT(layers, 0);
  const double bound = double(4 * layers + 1) / 256.0;

  std::vector<std::vector<TokenId>> prompts;
  for (const auto &c : ref.cases)
    prompts.push_back(c.prompt);
  exec::ExecutorOptions eo;
  eo.weights = exec::WeightType::BF16;
  core::GenerateResult got = generate(p, prompts, ref.steps, {}, eo);
  ASSERT_EQ(got.vocab, ref.vocab);

  double worst = 0;
  int64_t compared = 0;
  for (size_t c = 0; c < ref.cases.size(); ++c) {
    for (int64_t s = 0; s < ref.steps; ++s) {
      const float *r = ref.row(c, s);
      const float *g = got.logits.data() +
                       (c * size_t(ref.steps) + size_t(s)) * size_t(ref.vocab);
      double d = relDiff(g, r, ref.vocab);
      worst = std::max(worst, d);
      ++compared;
      EXPECT_LE(d, bound) << mf << " " << ref.cases[c].name << " step " << s;
      double tol = bound * maxAbs(r, ref.vocab);
      if (topMargin(r, ref.vocab) <= 2 * tol)
        break; // this step's token may legitimately differ
      ASSERT_EQ(got.tokens[c][size_t(s)], ref.cases[c].tokens[size_t(s)])
          << mf << " " << ref.cases[c].name << " step " << s << " (margin "
          << topMargin(r, ref.vocab) << " > 2 * " << tol << ")";
    }
  }
  RecordProperty("max_rel_diff", std::to_string(worst));
  RecordProperty("steps_compared", std::to_string(compared));
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooBf16, ::testing::ValuesIn(zooModels()),
                         [](const ::testing::TestParamInfo<ModelForm> &info) {
                           return std::string(info.param.arch) + "_" +
                                  info.param.form;
                         });

// f16 weights are stored bf16 on the CPU (oneDNN 2.6 has no f16 matmul),
// so an f32 model gives bit-identical logits under both flags, and bf16
// differs from f32 (the conversion really happens).
TEST(ZooBf16, F16StoresBf16AndBothDifferFromF32) {
  auto p = compile("llama", "cached");
  ASSERT_TRUE(p);
  std::vector<std::vector<TokenId>> prompts = {{49, 130, 255, 72, 150}, {122}};
  exec::ExecutorOptions bf16, f16;
  bf16.weights = exec::WeightType::BF16;
  f16.weights = exec::WeightType::F16;
  core::GenerateResult a = generate(p, prompts, 4, {}, bf16);
  core::GenerateResult b = generate(p, prompts, 4, {}, f16);
  core::GenerateResult f = generate(p, prompts, 4);
  ASSERT_EQ(a.logits.size(), b.logits.size());
  EXPECT_EQ(a.logits, b.logits);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_GT(relDiff(a.logits.data(), f.logits.data(), int64_t(f.logits.size())),
            1e-6);
}

} // namespace
