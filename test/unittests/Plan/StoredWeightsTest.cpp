//===- StoredWeightsTest.cpp - Weights stored packed in a plan ------------===//

#include "codegen/CPU/DType.h"
#include "compiler/Plan/LowerToPlan.h"
#include "compiler/Plan/StoreWeights.h"
#include "runtime/Core/Engine.h"
#include "runtime/Plan/PlanIO.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace folio;

namespace {

const char *kModel = FOLIO_SOURCE_DIR "/models/zoo/llama/cached.onnx";

/// Qwen2 from transformers: its lm_head is the embedding table.
const char *kTiedModel =
    FOLIO_SOURCE_DIR "/models/zoo-hf/qwen2/eager_cached.onnx";

plan::Plan compile(const std::string &weightDtype, const char *model = kModel,
                   bool shareTables = true) {
  mlir::folio::CompileToPlanOptions o;
  o.weightDtype = weightDtype;
  o.shareTiedTables = shareTables;
  auto p = mlir::folio::compileONNXToPlan(model, o);
  if (!p) {
    ADD_FAILURE() << llvm::toString(p.takeError());
    return {};
  }
  return std::move(*p);
}

core::GenerateResult run(std::shared_ptr<const plan::Plan> p,
                         exec::WeightType packAs = exec::WeightType::F32) {
  // Long enough a prompt for the prefill GEMM path (M > kSmallM).
  std::vector<std::vector<TokenId>> prompts = {
      {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {9}};
  exec::ExecutorOptions eo;
  eo.weights = packAs;
  auto engine = core::Engine::create(p, exec::createCPUExecutor(eo),
                                     core::Engine::blocksFor(prompts, 6, 16));
  EXPECT_TRUE(engine) << engine.status().message();
  core::GenerateOptions o;
  o.maxNewTokens = 6;
  o.keepLogits = true;
  auto r = (*engine)->generateGreedy(prompts, o);
  EXPECT_TRUE(r) << r.status().message();
  return r ? *r : core::GenerateResult();
}

/// The same tokens, and logits within 1e-4 relative: two plans that
/// should compute the same model.
void expectSameRun(const core::GenerateResult &got,
                   const core::GenerateResult &want) {
  EXPECT_EQ(got.tokens, want.tokens);
  ASSERT_EQ(got.logits.size(), want.logits.size());
  for (size_t i = 0; i < got.logits.size(); ++i)
    ASSERT_NEAR(got.logits[i], want.logits[i],
                1e-4f * (1 + std::fabs(want.logits[i])))
        << i;
}

TEST(StoredWeights, ParseRefusesWhatIsNotAWeightDtype) {
  for (const char *ok :
       {"none", "f32", "bf16", "f16", "int8", "fp8_e4m3", "int4"})
    EXPECT_TRUE(bool(mlir::folio::parseWeightDtype(ok))) << ok;
  auto r = mlir::folio::parseWeightDtype("q8");
  ASSERT_FALSE(r);
  EXPECT_EQ(llvm::toString(r.takeError()),
            "--weight-dtype 'q8' is not a weight dtype; supported: f32, bf16, "
            "f16, int8, fp8_e4m3, int4");
}

TEST(StoredWeights, EveryLinearIsStoredAndItsConstantLeaves) {
  plan::Plan p = compile("int8");
  int64_t linears = 0, mlps = 0;
  for (const plan::Step &s : p.steps) {
    linears += s.kind == "linear";
    mlps += s.kind == "gated_mlp";
  }
  ASSERT_GT(linears + mlps, 0);
  EXPECT_EQ(int64_t(p.weights.size()), linears + 2 * mlps);
  std::vector<bool> isConstant(p.values.size(), false);
  for (const plan::Constant &c : p.constants)
    isConstant[size_t(c.value)] = true;
  for (const plan::StoredWeight &w : p.weights) {
    EXPECT_EQ(w.type, plan::ElemType::I8);
    EXPECT_EQ(w.scalesBytes, uint64_t(w.n) * 4);
    // Its operands' f32 copies are gone: nothing else reads them here.
    for (int32_t i = 0; i < w.numOperands; ++i)
      EXPECT_FALSE(isConstant[size_t(
          p.steps[size_t(w.step)].operands[size_t(w.operand + i)])]);
  }
  // The int8 blob is far smaller than the model's own (f32) one.
  plan::Plan none = compile("none");
  EXPECT_TRUE(none.weights.empty());
  EXPECT_LT(p.blob.size(), none.blob.size() / 2);
}

/// `p` with its embedding tables rounded to bf16 (kept f32): what a plan
/// with stored weights looks up.
plan::Plan withBf16Tables(plan::Plan p) {
  std::vector<uint8_t> bytes(p.blob.data(), p.blob.data() + p.blob.size());
  for (const plan::Step &s : p.steps) {
    if (s.kind != "embedding")
      continue;
    for (const plan::Constant &c : p.constants) {
      if (c.value != s.operands[0])
        continue;
      for (uint64_t i = 0; i + 4 <= c.bytes; i += 4) {
        float x;
        std::memcpy(&x, bytes.data() + c.offset + i, 4);
        x = cpu::bf16ToFloat(cpu::floatToBf16(x));
        std::memcpy(bytes.data() + c.offset + i, &x, 4);
      }
    }
  }
  plan::Blob blob; // appended at offset 0: every offset stays valid
  blob.append(bytes.data(), bytes.size());
  p.blob = std::move(blob);
  return p;
}

TEST(StoredWeights, EmbeddingTablesAreStored16Bit) {
  for (auto [dtype, want] :
       {std::pair<const char *, plan::ElemType>{"bf16", plan::ElemType::BF16},
        {"int8", plan::ElemType::BF16},
        {"f16", plan::ElemType::F16},
        {"f32", plan::ElemType::F32}}) {
    plan::Plan p = compile(dtype);
    int64_t tables = 0;
    for (const plan::Step &s : p.steps) {
      if (s.kind != "embedding")
        continue;
      const plan::ValueInfo &v = p.values[size_t(s.operands[0])];
      EXPECT_EQ(v.type, want) << dtype;
      for (const plan::Constant &c : p.constants)
        if (c.value == s.operands[0])
          EXPECT_EQ(c.bytes, uint64_t(v.dims[0] * v.dims[1]) *
                                 (want == plan::ElemType::F32 ? 4 : 2))
              << dtype;
      ++tables;
    }
    EXPECT_GT(tables, 0) << dtype;
  }
}

TEST(StoredWeights, Bf16PlanRunsAsTheLoadTimePacking) {
  // The compiler's bf16 packing rounds exactly as the executor's did at
  // load, so both give the same logits (the stored plan's embedding table
  // is bf16, so the load-time one gets the same rounding).
  auto packedAtLoad =
      std::make_shared<const plan::Plan>(withBf16Tables(compile("none")));
  auto stored = std::make_shared<const plan::Plan>(compile("bf16"));
  expectSameRun(run(stored), run(packedAtLoad, exec::WeightType::BF16));
}

/// The stored weight whose data holds the tied table (the lm_head), and the
/// table's constant (null when the lookup reads the lm_head's packing) or
/// stored weight (null when it is a constant), of a plan of kTiedModel.
struct TiedPair {
  const plan::StoredWeight *head = nullptr;
  const plan::Constant *table = nullptr;
  const plan::StoredWeight *lookup = nullptr;
};
TiedPair tiedPair(const plan::Plan &p) {
  TiedPair t;
  int64_t vocab = 0;
  for (size_t si = 0; si < p.steps.size(); ++si) {
    const plan::Step &s = p.steps[si];
    if (s.kind != "embedding")
      continue;
    vocab = p.values[size_t(s.operands[0])].dims[0];
    for (const plan::Constant &c : p.constants)
      if (c.value == s.operands[0])
        t.table = &c;
    t.lookup = p.findStoredWeight(int32_t(si), 0);
  }
  for (const plan::StoredWeight &w : p.weights)
    if (w.n == vocab && &w != t.lookup)
      t.head = &w;
  return t;
}

/// Bytes of every constant and stored-weight range, counted per record
/// (shared ranges more than once).
int64_t rangeBytes(const plan::Plan &p) {
  int64_t ranges = 0;
  for (const plan::Constant &c : p.constants)
    ranges += int64_t(c.bytes);
  for (const plan::StoredWeight &w : p.weights)
    ranges += int64_t(w.dataBytes + w.scalesBytes + w.outlierColsBytes +
                      w.outliersBytes);
  return ranges;
}

TEST(StoredWeights, ATiedTableIsStoredOnce) {
  // Where the lm_head is packed in the table's own dtype (bf16, f16, f32),
  // both are the same bytes and the weight points at the table's.
  for (const char *dtype : {"bf16", "f16", "f32"}) {
    plan::Plan p = compile(dtype, kTiedModel);
    TiedPair t = tiedPair(p);
    ASSERT_TRUE(t.head && t.table && !t.lookup) << dtype;
    EXPECT_EQ(t.head->dataOffset, t.table->offset) << dtype;
    EXPECT_EQ(t.head->dataBytes, t.table->bytes) << dtype;
    // No range is stored twice: the blob holds the table once.
    EXPECT_GE(rangeBytes(p) - int64_t(p.blob.size()), int64_t(t.table->bytes))
        << dtype << ": blob " << p.blob.size();
  }
  // The shared plan survives a file round trip and runs as the same model
  // packed at load, on the prompts (the decode tokens follow).
  plan::Plan bf16 = compile("bf16", kTiedModel);
  std::string path = ::testing::TempDir() + "/tied-bf16.folio";
  ASSERT_TRUE(plan::writePlan(bf16, path));
  auto mapped = plan::readPlan(path);
  ASSERT_TRUE(mapped) << mapped.status().message();
  EXPECT_EQ(tiedPair(*mapped).head->dataOffset,
            tiedPair(*mapped).table->offset);
  expectSameRun(run(std::make_shared<const plan::Plan>(std::move(*mapped))),
                run(std::make_shared<const plan::Plan>(
                        withBf16Tables(compile("none", kTiedModel))),
                    exec::WeightType::BF16));
}

TEST(StoredWeights, AQuantizedLmHeadIsTheTiedTablesOnlyCopy) {
  // int8, fp8_e4m3 and int4 codes differ from a 16-bit table: the lookup
  // reads the lm_head's packing (a stored weight for the embedding's
  // operand 0, on the same ranges) and no table constant is kept.
  auto f32 = std::make_shared<const plan::Plan>(compile("f32", kTiedModel));
  core::GenerateResult ref = run(f32);
  for (const char *dtype : {"int8", "fp8_e4m3", "int4"}) {
    plan::Plan p = compile(dtype, kTiedModel);
    TiedPair t = tiedPair(p);
    ASSERT_TRUE(t.head && t.lookup && !t.table) << dtype;
    EXPECT_EQ(t.lookup->dataOffset, t.head->dataOffset) << dtype;
    EXPECT_EQ(t.lookup->scalesOffset, t.head->scalesOffset) << dtype;
    EXPECT_EQ(t.lookup->outliersOffset, t.head->outliersOffset) << dtype;
    EXPECT_EQ(t.lookup->type, t.head->type) << dtype;
    EXPECT_EQ(t.lookup->n, t.head->n) << dtype;
    EXPECT_EQ(t.lookup->k, t.head->k) << dtype;
    EXPECT_EQ(t.lookup->activations, plan::ElemType::F32) << dtype;
    int64_t shared = int64_t(t.head->dataBytes + t.head->scalesBytes +
                             t.head->outlierColsBytes + t.head->outliersBytes);
    EXPECT_EQ(rangeBytes(p) - int64_t(p.blob.size()), shared) << dtype;
    // Against the same dtype with the 16-bit table kept beside the codes:
    // smaller by the table, and the lookup's rounding moves the logits
    // only a little.
    plan::Plan separate = compile(dtype, kTiedModel, /*shareTables=*/false);
    TiedPair s = tiedPair(separate);
    ASSERT_TRUE(s.head && s.table && !s.lookup) << dtype;
    EXPECT_EQ(int64_t(separate.blob.size()) - int64_t(p.blob.size()),
              int64_t(s.table->bytes))
        << dtype;
    // A file round trip keeps the shared ranges, and the plan runs.
    std::string path = ::testing::TempDir() + "/tied-" + dtype + ".folio";
    ASSERT_TRUE(plan::writePlan(p, path));
    auto mapped = plan::readPlan(path);
    ASSERT_TRUE(mapped) << mapped.status().message();
    EXPECT_EQ(tiedPair(*mapped).lookup->dataOffset, t.head->dataOffset);
    core::GenerateResult got =
        run(std::make_shared<const plan::Plan>(std::move(*mapped)));
    core::GenerateResult kept =
        run(std::make_shared<const plan::Plan>(std::move(separate)));
    ASSERT_EQ(got.logits.size(), ref.logits.size());
    ASSERT_EQ(kept.logits.size(), ref.logits.size());
    // The prompts' logits (later ones follow tokens that may differ).
    size_t vocab = size_t(ref.vocab), steps = 6;
    for (size_t prompt = 0; prompt < 2; ++prompt) {
      double num = 0, keptNum = 0, den = 0;
      for (size_t v = 0; v < vocab; ++v) {
        size_t i = prompt * steps * vocab + v;
        num += std::pow(double(got.logits[i]) - ref.logits[i], 2);
        keptNum += std::pow(double(kept.logits[i]) - ref.logits[i], 2);
        den += std::pow(double(ref.logits[i]), 2);
      }
      double err = std::sqrt(num / den), keptErr = std::sqrt(keptNum / den);
      // This fixture's random weights round coarsely (the kept table's
      // fp8 and int4 errors are 0.06-0.25): the bound is the dtype's own
      // error with the table kept.
      EXPECT_LT(err, 1.5 * keptErr + 0.01)
          << dtype << " prompt " << prompt << ": kept table " << keptErr;
    }
  }
}

TEST(StoredWeights, Int8PlanRoundTripsThroughAFileAndStaysClose) {
  auto f32 = std::make_shared<const plan::Plan>(compile("f32"));
  plan::Plan int8 = compile("int8");
  std::string path = ::testing::TempDir() + "/stored-int8.folio";
  ASSERT_TRUE(plan::writePlan(int8, path));
  auto mapped = plan::readPlan(path);
  ASSERT_TRUE(mapped) << mapped.status().message();
  ASSERT_EQ(mapped->weights.size(), int8.weights.size());
  for (size_t i = 0; i < int8.weights.size(); ++i) {
    const plan::StoredWeight &a = int8.weights[i], &b = mapped->weights[i];
    EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << i;
  }
  auto inMemory = std::make_shared<const plan::Plan>(std::move(int8));
  auto fromFile = std::make_shared<const plan::Plan>(std::move(*mapped));
  core::GenerateResult a = run(inMemory), b = run(fromFile);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.logits, b.logits);
  // int8 against f32 on the prompts' logits (later ones follow tokens
  // that may differ): per-channel rounding moves the logits by a small
  // part of their size.
  core::GenerateResult ref = run(f32);
  ASSERT_EQ(ref.logits.size(), a.logits.size());
  size_t vocab = size_t(ref.vocab), steps = 6;
  for (size_t prompt = 0; prompt < 2; ++prompt) {
    double num = 0, den = 0;
    for (size_t v = 0; v < vocab; ++v) {
      size_t i = prompt * steps * vocab + v;
      num += std::pow(double(a.logits[i]) - ref.logits[i], 2);
      den += std::pow(double(ref.logits[i]), 2);
    }
    EXPECT_LT(std::sqrt(num / den), 0.03) << "prompt " << prompt;
  }
}

/// validatePlan's message for `p` with its first stored weight changed by
/// `mutate`.
std::string refusal(const plan::Plan &p,
                    const std::function<void(plan::Plan &)> &mutate) {
  plan::Plan copy = p;
  mutate(copy);
  Status s = plan::validatePlan(copy);
  return s ? std::string("(accepted)") : s.message();
}

TEST(StoredWeights, ValidationNamesEveryBadField) {
  plan::Plan p = compile("int8");
  ASSERT_FALSE(p.weights.empty());
  ASSERT_TRUE(plan::validatePlan(p)) << plan::validatePlan(p).message();
  auto has = [](const std::string &msg, const char *what) {
    return msg.find(what) != std::string::npos;
  };
  using P = plan::Plan;
  struct Case {
    std::function<void(P &)> mutate;
    const char *message;
  } cases[] = {
      {[](P &q) { q.weights[0].step = int32_t(q.steps.size()); },
       "names no step"},
      {[](P &q) { q.weights[0].operand = 2; }, "stored weights are a linear"},
      {[](P &q) { q.weights.push_back(q.weights[0]); },
       "another stored weight stands for operand"},
      {[](P &q) { q.weights[0].n += 1; }, "but its operands are"},
      {[](P &q) { q.weights[0].type = plan::ElemType::I2; },
       "its dtype is int2; stored weights are f32, bf16, f16, int8, fp8_e4m3 "
       "or int4"},
      {[](P &q) { q.weights[0].type = plan::ElemType(200); },
       "its dtype is unknown"},
      {[](P &q) { q.weights[0].layout = plan::WeightLayout(9); },
       "layout 9 is not one this runtime reads for int8 weights"},
      {[](P &q) { q.weights[0].layout = plan::WeightLayout::Int4G64; },
       "layout int4_g64 is not one this runtime reads for int8 weights"},
      {[](P &q) { q.weights[0].dataOffset += 1; }, "not a multiple of 64"},
      {[](P &q) { q.weights[0].dataBytes -= 1; }, "the weight data is"},
      {[](P &q) { q.weights[0].scalesOffset = q.blob.size() + 64; },
       "the scales ("},
      {[](P &q) { q.weights[0].scalesBytes = 0; }, "the scales is 0 bytes"},
      {[](P &q) { q.weights[0].numOutliers = q.weights[0].k + 1; },
       "outlier columns; int8 weights have 0 to k"},
      {[](P &q) {
         q.weights[0].type = plan::ElemType::BF16;
         q.weights[0].dataBytes *= 2;
       },
       "the scales is"},
  };
  std::string msg;
  for (const Case &c : cases) {
    msg = refusal(p, c.mutate);
    EXPECT_TRUE(has(msg, c.message)) << c.message << "\n  got: " << msg;
    EXPECT_TRUE(has(msg, "plan: stored weight")) << msg;
  }
  // A stored-only weight read by another step would have no tensor.
  msg = refusal(p, [](P &q) {
    const plan::StoredWeight &w = q.weights[0];
    int32_t weight = q.steps[size_t(w.step)].operands[size_t(w.operand)];
    for (plan::Step &s : q.steps)
      if (&s != &q.steps[size_t(w.step)] && s.operands.size() > 1 &&
          s.kind == "binary") {
        s.operands[1] = weight;
        return;
      }
  });
  EXPECT_TRUE(has(msg, "exists only as a stored weight (it has no constant), "
                       "but step 'binary'"))
      << msg;
  // Outlier columns must increase and stay below k: appended to the blob.
  msg = refusal(p, [](P &q) {
    plan::StoredWeight &w = q.weights[0];
    int32_t cols[2] = {3, 3};
    w.numOutliers = 2;
    w.outlierColsBytes = 8;
    w.outlierColsOffset = q.blob.append(cols, 8);
    std::vector<uint16_t> o(size_t(w.n * 2), 0);
    w.outliersBytes = o.size() * 2;
    w.outliersOffset = q.blob.append(o.data(), w.outliersBytes);
  });
  EXPECT_TRUE(has(msg, "outlier column 1 is 3; the columns are increasing"))
      << msg;

  // A tied table's lookup record: an embedding's operand 0 only, shaped as
  // the table ([rows, dim]).
  plan::Plan tied = compile("int8", kTiedModel);
  const plan::StoredWeight *lookup = tiedPair(tied).lookup;
  ASSERT_TRUE(lookup);
  ASSERT_TRUE(plan::validatePlan(tied)) << plan::validatePlan(tied).message();
  const size_t li = size_t(lookup - tied.weights.data());
  msg = refusal(tied, [&](P &q) { q.weights[li].operand = 1; });
  EXPECT_TRUE(has(msg, "or an embedding's table (operand 0)")) << msg;
  msg =
      refusal(tied, [&](P &q) { std::swap(q.weights[li].n, q.weights[li].k); });
  EXPECT_TRUE(has(msg, "but its operands are")) << msg;
}

TEST(StoredWeights, TheChecksumCoversTheRecords) {
  plan::Plan p = compile("int8");
  std::string bytes = plan::serializePlan(p);
  uint64_t headerBytes = 0;
  std::memcpy(&headerBytes, bytes.data() + 24, 8);
  // The last record's last field (outliersBytes) ends the header.
  bytes[64 + headerBytes - 12] ^= 1;
  auto r = plan::parsePlan(bytes);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("metadata section"), std::string::npos)
      << r.status().message();
}

TEST(StoredWeights, APlanKeepsTheDtypeItWasCompiledWith) {
  std::string path = ::testing::TempDir() + "/stored-bf16.folio";
  ASSERT_TRUE(plan::writePlan(compile("bf16"), path));
  mlir::folio::CompileToPlanOptions o;
  o.weightDtype = "int8";
  auto r = mlir::folio::loadOrCompilePlan(path, o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("stores its weights as bf16"),
            std::string::npos)
      << r.status().message();
  o.weightDtype = "bf16";
  EXPECT_TRUE(mlir::folio::loadOrCompilePlan(path, o));
  o.weightDtype = "none";
  EXPECT_TRUE(mlir::folio::loadOrCompilePlan(path, o));
}

} // namespace
