//===- KVQuantModelTest.cpp - Quantized KV caches on the bundled model ----===//
//
// The bundled target model compiled with each KV-cache dtype and run
// teacher-forced over held-out windows: its perplexity stays within the
// documented bound of the f32 cache's, int8's greedy choices agree with
// f32's, fp8 plans carry the calibrated scales, and a plan refuses a
// request for a dtype it was not compiled with.
//
//===----------------------------------------------------------------------===//

#include "compiler/Plan/LowerToPlan.h"
#include "compiler/Target/PlanKVCache.h"
#include "runtime/Core/KVCalibration.h"
#include "runtime/Core/TeacherForced.h"
#include "runtime/Plan/PlanIO.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

using namespace folio;

namespace {

const std::string kBundled = std::string(FOLIO_SOURCE_DIR) + "/models/bundled/";
using Seqs = std::vector<std::vector<TokenId>>;

Seqs heldOut(int first, int count) {
  std::ifstream in(kBundled + "heldout_slice.i32", std::ios::binary);
  std::vector<int32_t> ids(16 * 256);
  in.read(reinterpret_cast<char *>(ids.data()),
          std::streamsize(ids.size() * sizeof(int32_t)));
  EXPECT_EQ(in.gcount(), std::streamsize(ids.size() * sizeof(int32_t)));
  Seqs out;
  for (int w = first; w < first + count; ++w)
    out.emplace_back(ids.begin() + w * 256, ids.begin() + (w + 1) * 256);
  return out;
}

std::shared_ptr<const plan::Plan>
compile(const std::string &dtype, const core::KVAbsMax *calibration = nullptr,
        std::vector<std::string> *warnings = nullptr, int64_t residual = 0,
        int64_t blockSize = 0) {
  mlir::folio::CompileToPlanOptions o;
  o.kvCacheDtype = dtype;
  o.kvCacheResidual = residual;
  o.blockSize = blockSize;
  if (calibration) {
    o.kvCalibration = calibration->values;
    o.kvCalibrationLayers = calibration->layers;
    o.kvCalibrationHeads = calibration->kvHeads;
  }
  o.onWarning = [warnings](const std::string &w) {
    if (warnings)
      warnings->push_back(w);
  };
  auto p = mlir::folio::compileONNXToPlan(kBundled + "target.onnx", o);
  if (!p) {
    ADD_FAILURE() << dtype << ": " << llvm::toString(p.takeError());
    return nullptr;
  }
  return std::make_shared<const plan::Plan>(std::move(*p));
}

/// Logits rows of every position of `seqs`, in order.
struct LogitsRun {
  std::vector<float> logits;
  int64_t vocab = 0;
};

/// Decode-style by default (one token of every sequence per step), so each
/// token reads the cache as decoding would leave it.
LogitsRun teacherForced(std::shared_ptr<const plan::Plan> plan,
                        const Seqs &seqs, int64_t chunk = 1024,
                        int64_t perSequence = 1) {
  LogitsRun r;
  auto e = exec::createCPUExecutor();
  EXPECT_TRUE(e->load(plan));
  int64_t block = e->kvCacheLayout().blockSize;
  EXPECT_TRUE(e->allocateKVCache(core::teacherForcedBlocks(seqs, block)));
  size_t total = 0;
  for (const auto &s : seqs)
    total += s.size();
  std::vector<std::pair<int64_t, int64_t>> order;
  std::map<std::pair<int64_t, int64_t>, std::vector<float>> rows;
  core::TeacherForcedOptions o;
  o.chunkTokens = chunk;
  o.tokensPerSequence = perSequence;
  o.onLogits = [&](const std::vector<float> &logits, int64_t vocab,
                   const std::vector<int64_t> &seq,
                   const std::vector<int64_t> &pos) {
    r.vocab = vocab;
    for (size_t i = 0; i < seq.size(); ++i)
      rows[{seq[i], pos[i]}].assign(logits.begin() + i * size_t(vocab),
                                    logits.begin() + (i + 1) * size_t(vocab));
  };
  Status s = core::runTeacherForced(*e, seqs, o);
  EXPECT_TRUE(s) << s.message();
  EXPECT_EQ(rows.size(), total);
  for (auto &[key, row] : rows)
    r.logits.insert(r.logits.end(), row.begin(), row.end());
  return r;
}

double perplexity(const LogitsRun &r, const Seqs &seqs) {
  double nll = 0;
  size_t scored = 0, row = 0;
  for (const auto &s : seqs)
    for (size_t t = 0; t < s.size(); ++t, ++row) {
      if (t + 1 == s.size())
        continue;
      const float *x = r.logits.data() + row * size_t(r.vocab);
      double peak = *std::max_element(x, x + r.vocab), sum = 0;
      for (int64_t v = 0; v < r.vocab; ++v)
        sum += std::exp(double(x[v]) - peak);
      nll += peak + std::log(sum) - x[s[t + 1]];
      ++scored;
    }
  return std::exp(nll / double(scored));
}

double argmaxAgreement(const LogitsRun &a, const LogitsRun &b) {
  size_t rows = a.logits.size() / size_t(a.vocab), same = 0;
  for (size_t r = 0; r < rows; ++r) {
    const float *x = a.logits.data() + r * size_t(a.vocab);
    const float *y = b.logits.data() + r * size_t(b.vocab);
    same += (std::max_element(x, x + a.vocab) - x) ==
            (std::max_element(y, y + b.vocab) - y);
  }
  return double(same) / double(rows);
}

struct Baseline {
  Seqs eval = heldOut(0, 8);
  std::shared_ptr<const plan::Plan> f32 = compile("f32");
  LogitsRun run = teacherForced(f32, eval);
  double ppl = perplexity(run, eval);
};

const Baseline &baseline() {
  static Baseline b;
  return b;
}

/// The per-dtype bounds on the perplexity increase: about three times what
/// was measured on these eight windows, decoded one token a step (f16
/// 0.000 %, bf16 0.005 %, fp8_e4m3 0.14 %, fp8_e5m2 0.08 %, int8 0.008 %,
/// int4 0.10 %, int2 0.02 % with half the context in its window), so a
/// doubled error fails; all inside docs/kv-cache-quantization.md's targets.
double maxDeltaPct(const std::string &dtype) {
  static const std::map<std::string, double> bound = {
      {"f16", 0.01},  {"bf16", 0.02}, {"fp8_e4m3", 0.45}, {"fp8_e5m2", 0.25},
      {"int8", 0.03}, {"int4", 0.3},  {"int2", 0.1}};
  return bound.at(dtype);
}

} // namespace

TEST(TeacherForced, ChunkedEqualsWhole) {
  const Baseline &b = baseline();
  ASSERT_TRUE(b.f32);
  Seqs two = heldOut(0, 2);
  LogitsRun whole = teacherForced(b.f32, two, 1024, 0);
  LogitsRun chunked = teacherForced(b.f32, two, 37, 0);
  LogitsRun decode = teacherForced(b.f32, two, 1024, 1);
  ASSERT_EQ(whole.logits.size(), decode.logits.size());
  ASSERT_EQ(whole.logits.size(), chunked.logits.size());
  double worst = 0, peak = 0;
  for (size_t i = 0; i < whole.logits.size(); ++i) {
    worst =
        std::max(worst, double(std::fabs(whole.logits[i] - chunked.logits[i])));
    peak = std::max(peak, double(std::fabs(whole.logits[i])));
  }
  EXPECT_LE(worst, 1e-5 * peak);
  worst = 0;
  for (size_t i = 0; i < whole.logits.size(); ++i)
    worst =
        std::max(worst, double(std::fabs(whole.logits[i] - decode.logits[i])));
  EXPECT_LE(worst, 1e-5 * peak);
}

class KVQuantModel : public ::testing::TestWithParam<std::string> {};

TEST_P(KVQuantModel, PerplexityWithinBound) {
  const Baseline &b = baseline();
  ASSERT_TRUE(b.f32);
  std::string dtype = GetParam();
  std::unique_ptr<core::KVAbsMax> calibration;
  if (dtype.rfind("fp8", 0) == 0) {
    // Calibrated on windows the evaluation does not use.
    Seqs calib = heldOut(8, 8);
    std::vector<TokenId> ids;
    for (const auto &s : calib)
      ids.insert(ids.end(), s.begin(), s.end());
    auto r = core::calibrateKVAbsMax(b.f32, ids);
    ASSERT_TRUE(r) << r.status().message();
    calibration = std::make_unique<core::KVAbsMax>(std::move(*r));
  }
  auto p = compile(dtype, calibration.get());
  ASSERT_TRUE(p);
  EXPECT_EQ(folio::planKVCacheDType(*p), dtype);
  LogitsRun run = teacherForced(p, b.eval);
  double ppl = perplexity(run, b.eval);
  double delta = 100.0 * (ppl - b.ppl) / b.ppl;
  double agree = argmaxAgreement(run, b.run);
  std::printf("%s: perplexity %.4f (f32 %.4f, %+.3f %%), argmax agreement "
              "%.4f\n",
              dtype.c_str(), ppl, b.ppl, delta, agree);
  EXPECT_LE(std::fabs(delta), maxDeltaPct(dtype));
  if (dtype == "int8") {
    EXPECT_GE(agree, 0.99);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, KVQuantModel,
                         ::testing::Values("f16", "bf16", "fp8_e4m3",
                                           "fp8_e5m2", "int8", "int4", "int2"));

// int2 with the smallest window (one block of 16): almost every key is
// read at two bits, which is what KIVI's bound is about.
TEST(KVQuantModel, Int2OneBlockWindowWithinTenPercent) {
  const Baseline &b = baseline();
  ASSERT_TRUE(b.f32);
  auto p = compile("int2", nullptr, nullptr, 16, 16);
  ASSERT_TRUE(p);
  LogitsRun run = teacherForced(p, b.eval);
  double ppl = perplexity(run, b.eval);
  double delta = 100.0 * (ppl - b.ppl) / b.ppl;
  std::printf("int2, 16-token window: perplexity %.4f (%+.3f %%), argmax "
              "agreement %.4f\n",
              ppl, delta, argmaxAgreement(run, b.run));
  EXPECT_LE(std::fabs(delta), 10.0);
  // The prefill-all run reads every key in full precision: the window
  // matters only once tokens age out of it.
  LogitsRun prefill = teacherForced(p, b.eval, 4096, 0);
  EXPECT_NEAR(perplexity(prefill, b.eval), b.ppl, 1e-3 * b.ppl);
}

TEST(KVCalibration, ScalesReachThePlan) {
  const Baseline &b = baseline();
  ASSERT_TRUE(b.f32);
  std::vector<TokenId> ids = heldOut(8, 1)[0];
  auto r = core::calibrateKVAbsMax(b.f32, ids);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->layers, 6);
  EXPECT_EQ(r->kvHeads, 4);
  for (float v : r->values)
    EXPECT_TRUE(std::isfinite(v) && v > 0) << v;
  // A prefix of the data sees no larger range than all of it.
  std::vector<TokenId> prefix(ids.begin(), ids.begin() + 64);
  auto small = core::calibrateKVAbsMax(b.f32, prefix);
  ASSERT_TRUE(small);
  for (size_t i = 0; i < r->values.size(); ++i)
    EXPECT_LE(small->values[i], r->values[i]);

  // The fp8 plan's scale constants are absmax / 448, per layer and head.
  std::vector<std::string> warnings;
  auto p = compile("fp8_e4m3", &*r, &warnings);
  ASSERT_TRUE(p);
  EXPECT_TRUE(warnings.empty());
  std::vector<float> seen;
  for (const plan::Step &s : p->steps) {
    if (s.kind != "kv_write")
      continue;
    ASSERT_EQ(s.operands.size(), 6u);
    for (int i : {4, 5})
      for (const plan::Constant &c : p->constants)
        if (c.value == s.operands[size_t(i)]) {
          const float *x =
              reinterpret_cast<const float *>(p->blob.data() + c.offset);
          seen.insert(seen.end(), x, x + 4);
        }
  }
  ASSERT_EQ(seen.size(), r->values.size());
  for (size_t i = 0; i < seen.size(); ++i)
    EXPECT_FLOAT_EQ(seen[i], r->values[i] / 448.0f) << i;

  // Without data: the documented default, and a warning.
  warnings.clear();
  ASSERT_TRUE(compile("fp8_e4m3", nullptr, &warnings));
  EXPECT_FALSE(warnings.empty());
}

TEST(KVCalibration, MergeKeepsNaN) {
  std::vector<float> into = {1, 5, NAN, 2};
  core::mergeAbsMax(into, {3, 4, 1, NAN});
  EXPECT_EQ(into[0], 3);
  EXPECT_EQ(into[1], 5);
  EXPECT_TRUE(std::isnan(into[2]));
  EXPECT_TRUE(std::isnan(into[3]));
}

TEST(KVCalibration, WindowRespectsThePlansLimits) {
  plan::Plan p;
  EXPECT_EQ(core::calibrationWindow(p), 2048);
  p.config.push_back({"max_positions", 128});
  EXPECT_EQ(core::calibrationWindow(p), 128);
  p.config.push_back({"max_context", 64});
  EXPECT_EQ(core::calibrationWindow(p), 64);
}

TEST(KVQuantPlan, RequestedDtypeMustMatchTheFile) {
  auto p = compile("int8");
  ASSERT_TRUE(p);
  std::string path = ::testing::TempDir() + "kvquant-int8.folio";
  ASSERT_TRUE(plan::writePlan(*p, path));
  mlir::folio::CompileToPlanOptions o;
  o.kvCacheDtype = "int8";
  EXPECT_TRUE(mlir::folio::loadOrCompilePlan(path, o));
  o.kvCacheDtype = "auto";
  EXPECT_TRUE(mlir::folio::loadOrCompilePlan(path, o));
  o.kvCacheDtype = "f32";
  auto refused = mlir::folio::loadOrCompilePlan(path, o);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.status().message().find("compiled with int8"),
            std::string::npos)
      << refused.status().message();
}

// --calibration-data for int8 weights: every linear weight group's inputs
// are recorded on the plan that ran, and the int8 plan compiled the same way
// keeps the columns they single out in bf16.
TEST(LinearInputCalibration, RecordsEveryWeightAndReachesTheInt8Plan) {
  const Baseline &b = baseline();
  ASSERT_TRUE(b.f32);
  std::vector<TokenId> ids = heldOut(8, 1)[0];
  auto r = core::calibrateLinearInputs(b.f32, ids);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->tokens, int64_t(ids.size()));
  size_t groups = 0;
  for (size_t si = 0; si < b.f32->steps.size(); ++si) {
    const plan::Step &s = b.f32->steps[si];
    for (auto [first, count] : plan::linearWeightGroups(s)) {
      ++groups;
      auto it = r->absMax.find({int32_t(si), first});
      ASSERT_NE(it, r->absMax.end()) << s.kind << " " << si;
      // In features: the weight's rows ([K, N], in_out) for linear and
      // gate/up, and gated_mlp's ffn width for down.
      const plan::ValueInfo &w =
          b.f32->values[size_t(s.operands[size_t(first)])];
      ASSERT_EQ(w.dims.size(), 2u);
      EXPECT_EQ(int64_t(it->second.size()), w.dims[0]) << s.kind << " " << si;
      float most = 0;
      for (float v : it->second) {
        EXPECT_TRUE(std::isfinite(v) && v >= 0) << v;
        most = std::max(most, v);
      }
      EXPECT_GT(most, 0.0f);
    }
  }
  EXPECT_EQ(r->absMax.size(), groups);
  // A prefix of the data sees no larger input than all of it.
  std::vector<TokenId> prefix(ids.begin(), ids.begin() + 64);
  auto small = core::calibrateLinearInputs(b.f32, prefix);
  ASSERT_TRUE(small);
  for (auto &[key, values] : small->absMax)
    for (size_t c = 0; c < values.size(); ++c)
      EXPECT_LE(values[c], r->absMax.at(key)[c])
          << key.first << "," << key.second << " c=" << c;

  auto compileInt8 = [&](const plan::LinearInputAbsMax *inputs) {
    mlir::folio::CompileToPlanOptions o;
    o.kvCacheDtype = "f32";
    o.weightDtype = "int8";
    o.inputAbsMax = inputs;
    return mlir::folio::compileONNXToPlan(kBundled + "target.onnx", o);
  };
  auto outliers = [](const plan::Plan &p) {
    int64_t n = 0;
    for (const plan::StoredWeight &w : p.weights)
      n += w.numOutliers;
    return n;
  };
  auto plain = compileInt8(nullptr);
  ASSERT_TRUE(bool(plain)) << llvm::toString(plain.takeError());
  auto calibrated = compileInt8(&r->absMax);
  ASSERT_TRUE(bool(calibrated)) << llvm::toString(calibrated.takeError());
  // The trained target has no weight-side outliers; its inputs have some.
  EXPECT_EQ(outliers(*plain), 0);
  EXPECT_GT(outliers(*calibrated), 0);

  // Statistics of another plan (a wrong width) are refused, naming the step.
  auto wrong = r->absMax;
  wrong.begin()->second.pop_back();
  auto refused = compileInt8(&wrong);
  ASSERT_FALSE(bool(refused));
  std::string message = llvm::toString(refused.takeError());
  EXPECT_NE(message.find("input columns for a weight of"), std::string::npos)
      << message;

  // A compiled plan's outlier columns are fixed: statistics for it are
  // refused, not ignored.
  std::string path = ::testing::TempDir() + "calibrated-int8.folio";
  ASSERT_TRUE(plan::writePlan(*calibrated, path));
  mlir::folio::CompileToPlanOptions o;
  o.kvCacheDtype = "f32";
  o.inputAbsMax = &r->absMax;
  auto compiled = mlir::folio::loadOrCompilePlan(path, o);
  ASSERT_FALSE(compiled);
  EXPECT_NE(compiled.status().message().find("outlier columns are fixed"),
            std::string::npos)
      << compiled.status().message();
}
