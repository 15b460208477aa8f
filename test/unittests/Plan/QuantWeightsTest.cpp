//===- QuantWeightsTest.cpp - fp8_e4m3 and int4 weights stored in a plan --===//
//
// The stored forms round-trip through a file, validation names each bad
// field, and the bundled model's greedy tokens with each dtype mostly agree
// with f32's: an agreement a wrong dequantization (a row taking another
// row's scale, int4 without its min) cannot reach.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/CPUFeatures.h"
#include "compiler/Plan/LowerToPlan.h"
#include "compiler/Plan/StoreWeights.h"
#include "runtime/Core/Engine.h"
#include "runtime/Core/TeacherForced.h"
#include "runtime/Executor/Executor.h"
#include "runtime/Plan/PlanIO.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>

using namespace folio;

namespace {

const char *kZoo = FOLIO_SOURCE_DIR "/models/zoo/llama/cached.onnx";
const char *kBundled = FOLIO_SOURCE_DIR "/models/bundled/target.onnx";
const char *kHeldout = FOLIO_SOURCE_DIR "/models/bundled/heldout_slice.i32";

plan::Plan compile(const char *model, const std::string &dtype,
                   int64_t group = 0, const std::string &int4Activations = "") {
  mlir::folio::CompileToPlanOptions o;
  o.weightDtype = dtype;
  o.weightGroupSize = group;
  o.int4Activations = int4Activations;
  o.kvCacheDtype = "f32";
  auto p = mlir::folio::compileONNXToPlan(model, o);
  if (!p) {
    ADD_FAILURE() << llvm::toString(p.takeError());
    return {};
  }
  return std::move(*p);
}

TEST(QuantWeights, ParseAndGroupSizeRules) {
  for (const char *ok : {"fp8_e4m3", "int4"})
    EXPECT_TRUE(bool(mlir::folio::parseWeightDtype(ok))) << ok;
  auto i4 = mlir::folio::parseWeightDtype("int4");
  ASSERT_TRUE(bool(i4));
  for (int64_t g : {int64_t(0), int64_t(32), int64_t(64), int64_t(128)}) {
    auto r = mlir::folio::resolveWeightGroupSize(*i4, g);
    ASSERT_TRUE(bool(r)) << g;
    EXPECT_EQ(*r, g ? g : 128);
  }
  auto bad = mlir::folio::resolveWeightGroupSize(*i4, 48);
  ASSERT_FALSE(bad);
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "--weight-group-size 48 is not an int4 group size; supported: "
            "32, 64, 128");
  auto fp8 = mlir::folio::parseWeightDtype("fp8_e4m3");
  auto notInt4 = mlir::folio::resolveWeightGroupSize(*fp8, 64);
  ASSERT_FALSE(notInt4);
  EXPECT_NE(llvm::toString(notInt4.takeError())
                .find("applies to --weight-dtype int4 only, not fp8_e4m3"),
            std::string::npos);
}

TEST(QuantWeights, StoredFormsRoundTripThroughAFile) {
  struct Case {
    const char *dtype;
    int64_t group;
    plan::ElemType type;
    plan::WeightLayout layout;
  } cases[] = {
      {"fp8_e4m3", 0, plan::ElemType::F8E4M3, plan::WeightLayout::RowsNK},
      {"int4", 32, plan::ElemType::I4, plan::WeightLayout::Int4G32},
      {"int4", 64, plan::ElemType::I4, plan::WeightLayout::Int4G64},
      {"int4", 128, plan::ElemType::I4, plan::WeightLayout::Int4G128},
  };
  for (const Case &c : cases) {
    plan::Plan p = compile(kZoo, c.dtype, c.group);
    ASSERT_FALSE(p.weights.empty()) << c.dtype;
    for (const plan::StoredWeight &w : p.weights) {
      EXPECT_EQ(w.type, c.type);
      EXPECT_EQ(w.layout, c.layout);
      // int4 weights quantized by folioc allow int8 x by default.
      EXPECT_EQ(w.activations, c.type == plan::ElemType::I4
                                   ? plan::ElemType::I8
                                   : plan::ElemType::F32);
      if (c.type == plan::ElemType::I4) {
        EXPECT_EQ(w.dataBytes, uint64_t(w.n * ((w.k + 127) / 128) * 64));
        // A short last group where k is not a multiple of the group.
        EXPECT_EQ(w.scalesBytes,
                  uint64_t(w.n * ((w.k + c.group - 1) / c.group) * 4));
      } else {
        EXPECT_EQ(w.dataBytes, uint64_t(w.n * w.k));
        EXPECT_EQ(w.scalesBytes, uint64_t(w.n) * 4);
      }
    }
    std::string path = ::testing::TempDir() + "/stored-quant.folio";
    ASSERT_TRUE(plan::writePlan(p, path));
    auto mapped = plan::readPlan(path);
    ASSERT_TRUE(mapped) << mapped.status().message();
    ASSERT_EQ(mapped->weights.size(), p.weights.size());
    for (size_t i = 0; i < p.weights.size(); ++i) {
      const plan::StoredWeight &a = p.weights[i], &b = mapped->weights[i];
      EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << i;
      EXPECT_EQ(std::memcmp(p.blob.data() + a.scalesOffset,
                            mapped->blob.data() + b.scalesOffset,
                            a.scalesBytes),
                0);
    }
    // The same tokens and logits from memory and from the mapped file.
    std::vector<std::vector<TokenId>> prompts = {
        {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {9}};
    std::vector<core::GenerateResult> results;
    for (auto q : {std::make_shared<const plan::Plan>(std::move(p)),
                   std::make_shared<const plan::Plan>(std::move(*mapped))}) {
      auto engine =
          core::Engine::create(q, exec::createCPUExecutor(),
                               core::Engine::blocksFor(prompts, 6, 16));
      ASSERT_TRUE(engine) << engine.status().message();
      core::GenerateOptions o;
      o.maxNewTokens = 6;
      o.keepLogits = true;
      auto r = (*engine)->generateGreedy(prompts, o);
      ASSERT_TRUE(r) << r.status().message();
      results.push_back(*r);
    }
    EXPECT_EQ(results[0].tokens, results[1].tokens) << c.dtype;
    EXPECT_EQ(results[0].logits, results[1].logits) << c.dtype;
  }
}

/// Greedy tokens and logits of the zoo llama's plan `p` on two prompts.
core::GenerateResult generate(plan::Plan p) {
  std::vector<std::vector<TokenId>> prompts = {
      {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {9}};
  auto engine = core::Engine::create(
      std::make_shared<const plan::Plan>(std::move(p)),
      exec::createCPUExecutor(), core::Engine::blocksFor(prompts, 6, 16));
  EXPECT_TRUE(engine) << engine.status().message();
  if (!engine)
    return {};
  core::GenerateOptions o;
  o.maxNewTokens = 6;
  o.keepLogits = true;
  auto r = (*engine)->generateGreedy(prompts, o);
  EXPECT_TRUE(r) << r.status().message();
  return r ? *r : core::GenerateResult{};
}

// The stored activation dtype reaches the kernels: where the int8-x GEMV
// runs, a plan that allows int8 x decodes differently from one that does
// not, and exactly like it with the int8-x GEMV ruled out.
TEST(QuantWeights, Int4ActivationsReachTheKernels) {
  plan::Plan int8X = compile(kZoo, "int4", 0, "int8");
  plan::Plan f32X = compile(kZoo, "int4", 0, "f32");
  ASSERT_FALSE(f32X.weights.empty());
  for (const plan::StoredWeight &w : f32X.weights)
    EXPECT_EQ(w.activations, plan::ElemType::F32);
  core::GenerateResult a = generate(int8X), b = generate(f32X);
  if (cpu::int4X8Active())
    EXPECT_NE(a.logits, b.logits);
  else
    EXPECT_EQ(a.logits, b.logits);
  cpu::setInt4X8Enabled(false);
  core::GenerateResult ruledOut = generate(compile(kZoo, "int4", 0, "int8"));
  cpu::setInt4X8Enabled(true);
  EXPECT_EQ(ruledOut.logits, b.logits);
  EXPECT_EQ(ruledOut.tokens, b.tokens);
}

std::string refusal(const plan::Plan &p,
                    const std::function<void(plan::Plan &)> &mutate) {
  plan::Plan copy = p;
  mutate(copy);
  Status s = plan::validatePlan(copy);
  return s ? std::string("(accepted)") : s.message();
}

/// Gives `q` a blob of its own (copies of a Plan share their blob), at the
/// same offsets, and returns its bytes for writing.
uint8_t *ownBlob(plan::Plan &q) {
  plan::Blob copy;
  if (q.blob.size())
    EXPECT_EQ(copy.append(q.blob.data(), q.blob.size()), 0u);
  q.blob = std::move(copy);
  return const_cast<uint8_t *>(q.blob.data());
}

/// Overwrites `bytes` at blob offset `at` of q's own blob.
void poke(plan::Plan &q, uint64_t at, const void *bytes, size_t n) {
  std::memcpy(ownBlob(q) + at, bytes, n);
}

TEST(QuantWeights, ValidationNamesEveryBadField) {
  plan::Plan fp8 = compile(kZoo, "fp8_e4m3");
  plan::Plan int4 = compile(kZoo, "int4", 32);
  ASSERT_FALSE(fp8.weights.empty());
  ASSERT_FALSE(int4.weights.empty());
  ASSERT_TRUE(plan::validatePlan(fp8)) << plan::validatePlan(fp8).message();
  ASSERT_TRUE(plan::validatePlan(int4)) << plan::validatePlan(int4).message();
  // The cases below change one weight with k = 64: two int4 groups of 32
  // per row (one of 64), so that rows and groups are told apart.
  static size_t wi = 0;
  while (wi < int4.weights.size() && int4.weights[wi].k != 64)
    ++wi;
  ASSERT_LT(wi, int4.weights.size());
  ASSERT_EQ(fp8.weights[wi].k, 64);
  using P = plan::Plan;
  struct Case {
    const plan::Plan *plan;
    std::function<void(P &)> mutate;
    const char *message;
  } cases[] = {
      {&fp8, [](P &q) { q.weights[wi].scalesBytes -= 4; }, "the scales is"},
      {&fp8, [](P &q) { q.weights[wi].layout = plan::WeightLayout::Int4G32; },
       "its layout int4_g32 is not one this runtime reads for fp8_e4m3 "
       "weights (rows_nk = 1)"},
      {&fp8,
       [](P &q) {
         float nan = NAN;
         poke(q, q.weights[wi].scalesOffset + 8, &nan, 4);
       },
       "the scale of row 2 is nan; scales are finite and >= 0"},
      {&fp8,
       [](P &q) {
         float neg = -1.0f;
         poke(q, q.weights[wi].scalesOffset, &neg, 4);
       },
       "the scale of row 0 is -1"},
      {&int4, [](P &q) { q.weights[wi].layout = plan::WeightLayout::RowsNK; },
       "its layout rows_nk is not one this runtime reads for int4 weights "
       "(int4_g32 = 2, int4_g64 = 3, int4_g128 = 4)"},
      {&fp8, [](P &q) { q.weights[wi].activations = plan::ElemType::I8; },
       "its activations are int8; stored weights take f32 activations, or "
       "int8 ones for int4 weights"},
      {&int4, [](P &q) { q.weights[wi].activations = plan::ElemType::BF16; },
       "its activations are bf16"},
      {&int4, [](P &q) { q.weights[wi].activations = plan::ElemType(200); },
       "its activations are unknown"},
      {&int4, [](P &q) { q.weights[wi].layout = plan::WeightLayout(7); },
       "its layout 7 is not one this runtime reads for int4"},
      {&int4, [](P &q) { q.weights[wi].layout = plan::WeightLayout::Int4G64; },
       "the scales is"},
      {&int4, [](P &q) { q.weights[wi].dataBytes = q.weights[wi].n * 32; },
       "the weight data is"},
      {&int4,
       [](P &q) {
         uint16_t inf = 0x7c00;
         poke(q, q.weights[wi].scalesOffset + 2 * 3, &inf, 2);
       },
       "the min of int4 group 1 of row 0 is not finite"},
      {&int4,
       [](P &q) {
         uint16_t neg = 0xbc00; // -1
         poke(q, q.weights[wi].scalesOffset + 4 * 2, &neg, 2);
       },
       "the scale of int4 group 0 of row 1 is negative"},
  };
  for (const Case &c : cases) {
    std::string msg = refusal(*c.plan, c.mutate);
    EXPECT_NE(msg.find(c.message), std::string::npos)
        << c.message << "\n  got: " << msg;
    EXPECT_NE(msg.find("plan: stored weight " + std::to_string(wi)),
              std::string::npos)
        << msg;
  }
}

/// The bundled held-out windows' first `prompt` tokens each.
std::vector<std::vector<TokenId>> heldoutPrompts(int64_t windows,
                                                 int64_t prompt) {
  std::ifstream in(kHeldout, std::ios::binary);
  std::vector<std::vector<TokenId>> out;
  for (int64_t w = 0; w < windows; ++w) {
    std::vector<int32_t> ids(256);
    in.read(reinterpret_cast<char *>(ids.data()), 256 * 4);
    EXPECT_TRUE(in) << "reading " << kHeldout;
    out.emplace_back(ids.begin(), ids.begin() + prompt);
  }
  return out;
}

/// f32's greedy continuations, fed to `p` teacher-forced: the fraction of
/// positions where p's argmax is f32's next token.
double agreement(std::shared_ptr<const plan::Plan> p,
                 const std::vector<std::vector<TokenId>> &seqs,
                 int64_t prompt) {
  auto e = exec::createCPUExecutor();
  EXPECT_TRUE(e->load(p));
  EXPECT_TRUE(e->allocateKVCache(
      core::teacherForcedBlocks(seqs, p->configValue("block_size", 16))));
  int64_t same = 0, total = 0;
  core::TeacherForcedOptions o;
  o.onLogits = [&](const std::vector<float> &logits, int64_t vocab,
                   const std::vector<int64_t> &seq,
                   const std::vector<int64_t> &pos) {
    for (size_t r = 0; r < seq.size(); ++r) {
      const std::vector<TokenId> &s = seqs[size_t(seq[r])];
      if (pos[r] < prompt - 1 || pos[r] + 1 >= int64_t(s.size()))
        continue;
      const float *row = logits.data() + r * size_t(vocab);
      same += std::max_element(row, row + vocab) - row == s[size_t(pos[r] + 1)];
      ++total;
    }
  };
  Status s = core::runTeacherForced(*e, seqs, o);
  EXPECT_TRUE(s) << s.message();
  return total ? double(same) / double(total) : 0.0;
}

TEST(QuantWeights, BundledGreedyTokensAgreeWithF32) {
  const int64_t prompt = 32, newTokens = 48;
  std::vector<std::vector<TokenId>> prompts = heldoutPrompts(6, prompt);
  auto f32 = std::make_shared<const plan::Plan>(compile(kBundled, "f32"));
  std::vector<std::vector<TokenId>> seqs;
  {
    auto engine =
        core::Engine::create(f32, exec::createCPUExecutor(),
                             core::Engine::blocksFor(prompts, newTokens, 16));
    ASSERT_TRUE(engine) << engine.status().message();
    core::GenerateOptions o;
    o.maxNewTokens = newTokens;
    auto r = (*engine)->generateGreedy(prompts, o);
    ASSERT_TRUE(r) << r.status().message();
    for (size_t i = 0; i < prompts.size(); ++i) {
      seqs.push_back(prompts[i]);
      seqs.back().insert(seqs.back().end(), r->tokens[i].begin(),
                         r->tokens[i].end());
    }
  }
  // The measurement itself: f32 teacher-forced on its own continuations.
  EXPECT_GE(agreement(f32, seqs, prompt), 0.99);
  // Each plan with its stored dequantization, and with it deliberately
  // broken: every row reads the next row's scale (fp8), every int4 group
  // loses its min.
  auto rotateScales = [](plan::Plan &q) {
    uint8_t *blob = ownBlob(q);
    for (const plan::StoredWeight &w : q.weights) {
      auto *s = reinterpret_cast<float *>(blob + w.scalesOffset);
      std::rotate(s, s + 1, s + w.n);
    }
  };
  auto dropMins = [](plan::Plan &q) {
    uint8_t *blob = ownBlob(q);
    for (const plan::StoredWeight &w : q.weights) {
      auto *s = reinterpret_cast<uint16_t *>(blob + w.scalesOffset);
      for (uint64_t j = 1; j < w.scalesBytes / 2; j += 2)
        s[j] = 0;
    }
  };
  struct Case {
    const char *dtype;
    int64_t group;
    double least;
    std::function<void(plan::Plan &)> breakIt;
  } cases[] = {{"fp8_e4m3", 0, 0.9, rotateScales},
               {"int4", 128, 0.85, dropMins},
               {"int4", 32, 0.85, dropMins}};
  for (const Case &c : cases) {
    plan::Plan good = compile(kBundled, c.dtype, c.group);
    plan::Plan bad = good;
    c.breakIt(bad);
    double ok = agreement(std::make_shared<const plan::Plan>(std::move(good)),
                          seqs, prompt);
    double wrong = agreement(std::make_shared<const plan::Plan>(std::move(bad)),
                             seqs, prompt);
    std::cerr << c.dtype << " g=" << c.group << ": agreement " << ok
              << ", broken " << wrong << "\n";
    EXPECT_GE(ok, c.least) << c.dtype << " g=" << c.group;
    EXPECT_LT(wrong, c.least) << c.dtype << " g=" << c.group;
  }
}

} // namespace
