//===- PlanIOTest.cpp - .folio round trip and corrupt artifacts
//------------===//

#include "runtime/Plan/PlanIO.h"
#include "compiler/Plan/LowerToPlan.h"
#include "runtime/Core/Engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

using namespace folio;

namespace {

plan::Plan compileLlama() {
  auto p = mlir::folio::compileONNXToPlan(
      std::string(FOLIO_SOURCE_DIR) + "/models/zoo/llama/cached.onnx", {});
  if (!p) {
    ADD_FAILURE() << llvm::toString(p.takeError());
    return {};
  }
  return std::move(*p);
}

core::GenerateResult run(std::shared_ptr<const plan::Plan> p) {
  std::vector<std::vector<TokenId>> prompts = {{5, 6, 7}, {9}};
  auto engine = core::Engine::create(p, exec::createCPUExecutor(),
                                     core::Engine::blocksFor(prompts, 6, 16));
  EXPECT_TRUE(engine) << engine.status().message();
  core::GenerateOptions o;
  o.maxNewTokens = 6;
  o.keepLogits = true;
  auto r = (*engine)->generateGreedy(prompts, o);
  EXPECT_TRUE(r) << r.status().message();
  return *r;
}

std::string tempPath(const char *name) {
  return ::testing::TempDir() + "/" + name;
}

// Serialise, load (mapped from a file and parsed from memory) and run: the
// same tokens and bit-identical logits as the plan that was never written.
TEST(PlanIO, RoundTripGivesIdenticalResults) {
  auto original = std::make_shared<const plan::Plan>(compileLlama());
  ASSERT_FALSE(original->steps.empty());
  core::GenerateResult want = run(original);

  std::string path = tempPath("llama.folio");
  ASSERT_TRUE(plan::writePlan(*original, path));
  auto mapped = plan::readPlan(path);
  ASSERT_TRUE(mapped) << mapped.status().message();
  EXPECT_EQ(uintptr_t(mapped->blob.data()) % plan::kBlobAlignment, 0u);
  EXPECT_EQ(mapped->steps.size(), original->steps.size());
  EXPECT_EQ(mapped->configValue("vocab", 0), 256);
  auto fromFile = std::make_shared<const plan::Plan>(std::move(*mapped));
  core::GenerateResult got = run(fromFile);
  EXPECT_EQ(got.tokens, want.tokens);
  EXPECT_EQ(got.logits, want.logits);

  auto parsed = plan::parsePlan(plan::serializePlan(*original));
  ASSERT_TRUE(parsed) << parsed.status().message();
  EXPECT_EQ(plan::serializePlan(*parsed), plan::serializePlan(*original));
  std::remove(path.c_str());
}

TEST(PlanIO, RejectsWhatIsNotAPlan) {
  auto r = plan::parsePlan("definitely not a plan, just some text here......");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            "not a Folio plan (missing the FOLIOPLN magic)");
  r = plan::readPlan(tempPath("does-not-exist.folio"));
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("cannot open"), std::string::npos);
}

TEST(PlanIO, RejectsOtherVersions) {
  plan::Plan p;
  std::string bytes = plan::serializePlan(p);
  bytes[8] = 99;
  auto r = plan::parsePlan(bytes);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            "plan format version 99 is not supported (this runtime reads "
            "version 2); recompile the model with folioc");
}

TEST(PlanIO, RejectsTruncatedArtifacts) {
  plan::Plan original = compileLlama();
  std::string bytes = plan::serializePlan(original);
  // Cut inside the header: offsets then point past the end.
  auto r = plan::parsePlan(bytes.substr(0, 200));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "plan: header or blob offsets out of range");
  // Cut inside the blob: constants then lie outside it.
  r = plan::parsePlan(bytes.substr(0, bytes.size() - 1000));
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("lies outside the blob"),
            std::string::npos)
      << r.status().message();
}

TEST(PlanIO, RejectsOutOfRangeIds) {
  plan::Plan p;
  p.values.push_back({});
  plan::Step s;
  s.kind = "unary";
  s.operands = {0};
  s.results = {7};
  p.steps.push_back(s);
  p.kernels.push_back({"elementwise", 0, 1, {0}, {7}, {}});
  auto r = plan::parsePlan(plan::serializePlan(p));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            "plan: step 'unary' has a result out of range");
  p.steps[0].results = {0};
  r = plan::parsePlan(plan::serializePlan(p));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            "plan: kernel 0 ('elementwise') names a value out of range");
}

// Tests that steps name only op kinds of the closed set, kernels only
// kernel kinds, and that the kernels cover the steps in order.
TEST(PlanIO, RejectsUnknownKindsAndUncoveredSteps) {
  plan::Plan p;
  p.values.push_back({});
  plan::Step s;
  s.kind = "onnx.Tanh";
  s.name = "/model/t";
  s.operands = {0};
  s.results = {0};
  p.steps.push_back(s);
  auto r = plan::parsePlan(plan::serializePlan(p));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            "plan: step '/model/t' has the unknown op kind 'onnx.Tanh'");
  p.steps[0].kind = "unary";
  r = plan::parsePlan(plan::serializePlan(p));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "plan: 1 steps belong to no kernel");
  p.kernels.push_back({"fused_everything", 0, 1, {0}, {0}, {}});
  r = plan::parsePlan(plan::serializePlan(p));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            "plan: kernel 0 ('fused_everything') has an unknown kind");
  p.kernels[0] = {"elementwise", 0, 2, {0}, {0}, {}};
  r = plan::parsePlan(plan::serializePlan(p));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "plan: kernel 0 ('elementwise') does not "
                                  "cover the steps after the previous kernel");
  p.kernels[0].numSteps = 1;
  EXPECT_TRUE(plan::parsePlan(plan::serializePlan(p)));
  // Releasing the output (or a constant) would leave later forwards
  // without it.
  p.outputs = {0};
  p.kernels[0].releases = {0};
  r = plan::parsePlan(plan::serializePlan(p));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            "plan: kernel 0 ('elementwise') releases value 0, a constant, "
            "output or KV cache that must live on");
}

// Tests that buffer sizes are expressions of the step's counts.
TEST(PlanIO, BufferBytesFollowTheDimSymbol) {
  plan::Plan original = compileLlama();
  auto r = plan::parsePlan(plan::serializePlan(original));
  ASSERT_TRUE(r) << r.status().message();
  int64_t tokens = 0, rows = 0;
  for (const plan::ValueInfo &v : r->values) {
    tokens += v.symbol == plan::DimSymbol::Tokens;
    rows += v.symbol == plan::DimSymbol::Rows;
  }
  EXPECT_GT(tokens, 10);
  EXPECT_GE(rows, 2); // logits_indices, the gathered rows, the logits
  const plan::ValueInfo &logits = r->values[size_t(r->outputs[0])];
  EXPECT_EQ(logits.symbol, plan::DimSymbol::Rows);
  // The buffer plan survives the round trip.
  ASSERT_EQ(r->buffers.size(), original.buffers.size());
  for (size_t b = 0; b < r->buffers.size(); ++b) {
    EXPECT_EQ(r->buffers[b].staticBytes, original.buffers[b].staticBytes);
    EXPECT_EQ(r->buffers[b].symbol, original.buffers[b].symbol);
  }
  EXPECT_EQ(plan::bufferBytes(logits, 100, 3, 2), 3 * 256 * 4);
  plan::ValueInfo kv;
  kv.kind = plan::ValueInfo::Kind::KVCache;
  EXPECT_EQ(plan::bufferBytes(kv, 1, 1, 1), -1);
}

TEST(PlanIO, AttributesSurviveTheRoundTrip) {
  plan::Plan p;
  p.values.push_back({});
  plan::Step s;
  s.kind = "cast";
  s.results = {0};
  s.attrs = {{"i", int64_t(-3)},
             {"f", 0.25},
             {"s", std::string("interleaved")},
             {"is", std::vector<int64_t>{1, -1, 4}},
             {"fs", std::vector<double>{0.5, 2.0}}};
  p.steps.push_back(s);
  p.kernels.push_back({"elementwise", 0, 1, {}, {0}, {0}});
  auto r = plan::parsePlan(plan::serializePlan(p));
  ASSERT_TRUE(r) << r.status().message();
  ASSERT_EQ(r->kernels.size(), 1u);
  EXPECT_EQ(r->kernels[0].kind, "elementwise");
  EXPECT_EQ(r->kernels[0].releases, (std::vector<int32_t>{0}));
  const plan::Step &t = r->steps[0];
  EXPECT_EQ(t.getInt("i", 0), -3);
  EXPECT_EQ(t.getFloat("f", 0), 0.25);
  EXPECT_EQ(t.getString("s", ""), "interleaved");
  EXPECT_EQ(t.getInts("is"), (std::vector<int64_t>{1, -1, 4}));
  EXPECT_EQ(std::get<std::vector<double>>(t.find("fs")->value),
            (std::vector<double>{0.5, 2.0}));
}

} // namespace

namespace {
/// Parses `p` and returns the error message ("" when it loads).
std::string loadError(const plan::Plan &p) {
  auto r = plan::parsePlan(plan::serializePlan(p));
  return r ? std::string() : r.status().message();
}
} // namespace

// Tests that corrupted or crafted fields are refused at load, naming the
// value, constant or step, instead of crashing a kernel or running with
// wrong numbers.
TEST(PlanIO, RejectsCorruptValuesConstantsAndAttributes) {
  const plan::Plan good = compileLlama();
  ASSERT_EQ(loadError(good), "");
  int32_t cache = -1;
  for (const plan::Argument &a : good.inputs)
    if (good.values[size_t(a.value)].kind == plan::ValueInfo::Kind::KVCache)
      cache = a.value;
  ASSERT_GE(cache, 0);
  std::string c = std::to_string(cache);
  {
    plan::Plan p = compileLlama();
    p.values[size_t(cache)].kvHeads = 0;
    EXPECT_EQ(loadError(p), "plan: value " + c +
                                " is a KV cache with 0 heads "
                                "of 8 elements; both must be positive");
  }
  {
    plan::Plan p = compileLlama();
    p.values[size_t(cache)].headDim = -4;
    EXPECT_NE(loadError(p).find("both must be positive"), std::string::npos);
  }
  {
    plan::Plan p = compileLlama();
    p.values[size_t(cache)].blockSize = 0;
    EXPECT_EQ(loadError(p),
              "plan: value " + c +
                  " is a KV cache with block "
                  "size 0; it must be a power of two from 1 to 256");
  }
  {
    plan::Plan p = compileLlama();
    p.values[size_t(cache)].blockSize = 32;
    EXPECT_EQ(loadError(p), "plan: value " + c +
                                " is a KV cache with block "
                                "size 32 but the plan's config says 16");
  }
  {
    plan::Plan p = compileLlama();
    p.values[0].dims = {-5};
    EXPECT_EQ(loadError(p), "plan: value 0 has the dim -5; dims are sizes or "
                            "-1");
  }
  {
    plan::Plan p = compileLlama();
    p.constants[0].offset += 1;
    EXPECT_NE(loadError(p).find("not a multiple of 64"), std::string::npos);
  }
  {
    plan::Plan p = compileLlama();
    p.values[size_t(p.constants[0].value)].dims = {int64_t(1) << 40, int64_t(1)
                                                                         << 40};
    EXPECT_NE(loadError(p).find("more elements than fit in 64 bits"),
              std::string::npos);
  }
  {
    plan::Plan p = compileLlama();
    bool changed = false;
    for (plan::Step &s : p.steps)
      for (plan::Attr &a : s.attrs)
        if (!changed && std::holds_alternative<double>(a.value)) {
          a.value = std::nan("");
          changed = true;
        }
    ASSERT_TRUE(changed);
    EXPECT_NE(loadError(p).find("has the non-finite attribute"),
              std::string::npos);
  }
  {
    plan::Plan p = compileLlama();
    ASSERT_FALSE(p.buffers.empty());
    int32_t id = -1;
    for (size_t v = 0; v < p.values.size() && id < 0; ++v)
      if (p.values[v].buffer >= 0)
        id = int32_t(v);
    ASSERT_GE(id, 0);
    p.values[size_t(id)].buffer = int32_t(p.buffers.size());
    EXPECT_EQ(loadError(p),
              "plan: value " + std::to_string(id) + " names buffer " +
                  std::to_string(p.buffers.size()) + ", which does not exist");
  }
  {
    plan::Plan p = compileLlama();
    for (auto &kv : p.config)
      if (kv.first == "vocab")
        kv.second = 255;
    EXPECT_EQ(loadError(p), "plan: the config's vocab 255 is not the width of "
                            "the logits output");
  }
}
