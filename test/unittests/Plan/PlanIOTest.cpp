//===- PlanIOTest.cpp - .folio round trip and corrupt artifacts
//------------===//

#include "runtime/Plan/PlanIO.h"
#include "compiler/Plan/LowerToPlan.h"
#include "compiler/Target/Target.h"
#include "runtime/Core/Engine.h"
#include "runtime/Plan/PlanMapping.h"
#include "test/unittests/Plan/ZooLlama.h"

#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>

using namespace folio;

namespace {

plan::Plan compileLlama() { return folio::testing::compileZooLlama(); }

core::GenerateResult run(std::shared_ptr<const plan::Plan> p) {
  return folio::testing::runZooLlama(std::move(p), 6);
}

std::string tempPath(const char *name) {
  return ::testing::TempDir() + "/" + name;
}

uint64_t field(const std::string &bytes, uint64_t offset) {
  uint64_t v = 0;
  std::memcpy(&v, bytes.data() + offset, 8);
  return v;
}

/// Recomputes the metadata hash of serialized `bytes` after a test patched
/// a record, so the parser's own checks behind the checksum are reached.
void resealMetadata(std::string &bytes) {
  uint64_t blobOffset = field(bytes, 32);
  std::string meta = bytes.substr(0, blobOffset);
  std::memset(&meta[plan::kMetadataHashOffset], 0, 8);
  uint64_t h = plan::planHash(meta.data(), meta.size());
  std::memcpy(&bytes[plan::kMetadataHashOffset], &h, 8);
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), bytes.size());
}

std::string hex(uint64_t v) {
  char buf[19];
  std::snprintf(buf, sizeof(buf), "0x%016llx", (unsigned long long)v);
  return buf;
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
  std::string current = std::to_string(plan::kPlanVersion);
  EXPECT_EQ(r.status().message(),
            "plan format version 99 is not supported (this runtime reads "
            "version " +
                current + "); recompile the model with folioc");
  // Version 2 had no KV-cache scale layouts, version 3 no KIVI residual
  // window, version 4 no checksums, version 5 no verify entries, version 6
  // no stored (packed) weights.
  for (char old : {char(2), char(3), char(4), char(5), char(6)}) {
    bytes[8] = old;
    r = plan::parsePlan(bytes);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().message(),
              "plan format version " + std::to_string(int(old)) +
                  " is not supported (this runtime reads version " + current +
                  "); recompile the model with folioc");
  }
}

TEST(PlanIO, RejectsTruncatedArtifacts) {
  plan::Plan original = compileLlama();
  std::string bytes = plan::serializePlan(original);
  std::string n = std::to_string(bytes.size());
  // Cut inside the header, inside the blob, or one byte short: the size
  // the header records says so, whether or not the weights are verified.
  for (size_t keep : {size_t(200), bytes.size() - 1000, bytes.size() - 1})
    for (bool verify : {true, false}) {
      auto r = plan::parsePlan(bytes.substr(0, keep), {verify});
      ASSERT_FALSE(r);
      EXPECT_EQ(r.status().message(),
                "plan: the file is " + std::to_string(keep) +
                    " bytes but its header says " + n + " (truncated)");
    }
  // Cut inside the fixed header.
  auto r = plan::parsePlan(bytes.substr(0, 40));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            "plan: the file is 40 bytes but its header says 64 (truncated)");
  // An appended byte, through readPlan: the message names the file.
  std::string path = tempPath("appended.folio");
  writeFile(path, bytes + '\0');
  r = plan::readPlan(path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            path + ": plan: the file is " + std::to_string(bytes.size() + 1) +
                " bytes but its header says " + n + " (bytes appended)");
  std::remove(path.c_str());
}

// Tests the checksum itself: XXH64 (seed 0), as the xxHash specification
// and its reference implementation give it, on the short-input path and
// the 32-byte-stripe path.
TEST(PlanIO, HashIsXXH64) {
  auto h = [](const std::string &s) {
    return plan::planHash(s.data(), s.size());
  };
  EXPECT_EQ(h(""), 0xEF46DB3751D8E999ULL);
  EXPECT_EQ(h("a"), 0xD24EC4F1A98C6E5BULL);
  EXPECT_EQ(h("abc"), 0x44BC2CF5AD770999ULL);
  EXPECT_EQ(h("Nobody inspects the spammish repetition"),
            0xFBCEA83C8A378BF1ULL);
}

// Tests that a written plan carries its size and both hashes and reads
// back verified, from a file and from memory.
TEST(PlanIO, RoundTripVerifiesChecksums) {
  plan::Plan original = compileLlama();
  std::string bytes = plan::serializePlan(original);
  uint64_t blobOffset = field(bytes, 32);
  EXPECT_EQ(field(bytes, plan::kFileBytesOffset), bytes.size());
  EXPECT_EQ(
      field(bytes, plan::kWeightsHashOffset),
      plan::planHash(bytes.data() + blobOffset, bytes.size() - blobOffset));
  std::string resealed = bytes;
  resealMetadata(resealed);
  EXPECT_EQ(resealed, bytes);
  std::string path = tempPath("verified.folio");
  ASSERT_TRUE(plan::writePlan(original, path));
  auto r = plan::readPlan(path);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(plan::serializePlan(*r), bytes);
  std::remove(path.c_str());
}

// Tests that one flipped bit anywhere is an error naming the section, the
// file and both hashes; the weights' check alone can be turned off.
TEST(PlanIO, RejectsFlippedBits) {
  plan::Plan original = compileLlama();
  std::string bytes = plan::serializePlan(original);
  uint64_t blobOffset = field(bytes, 32);
  uint64_t blobBytes = bytes.size() - blobOffset;
  std::string path = tempPath("flipped.folio");

  // A bit of the last weight byte.
  std::string weights = bytes;
  weights.back() ^= 0x10;
  uint64_t want = field(bytes, plan::kWeightsHashOffset);
  uint64_t got = plan::planHash(weights.data() + blobOffset, blobBytes);
  ASSERT_NE(want, got);
  writeFile(path, weights);
  auto r = plan::readPlan(path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            path + ": plan: the weights section (" + std::to_string(blobBytes) +
                " bytes at offset " + std::to_string(blobOffset) +
                ") fails its checksum: the header says " + hex(want) +
                ", the bytes hash to " + hex(got) +
                "; the file is corrupt (re-copy or recompile it)");
  EXPECT_FALSE(plan::parsePlan(weights));
  auto trusted = plan::readPlan(path, {/*verifyWeights=*/false});
  ASSERT_TRUE(trusted) << trusted.status().message();
  EXPECT_TRUE(plan::parsePlan(weights, {false}));

  // A bit of the metadata: the entry name's first character, a value's
  // dims, the padding before the blob; verified with or without weights.
  for (uint64_t at : {uint64_t(64 + 4), uint64_t(200), blobOffset - 1}) {
    std::string meta = bytes;
    meta[at] ^= 0x01;
    writeFile(path, meta);
    for (bool verify : {true, false}) {
      r = plan::readPlan(path, {verify});
      ASSERT_FALSE(r);
      EXPECT_NE(r.status().message().find(
                    path + ": plan: the metadata section (" +
                    std::to_string(blobOffset) +
                    " bytes) fails its checksum: the header says " +
                    hex(field(bytes, plan::kMetadataHashOffset)) +
                    ", the bytes hash to 0x"),
                std::string::npos)
          << r.status().message();
    }
  }
  // Both stored hashes are metadata too.
  for (uint64_t at : {plan::kMetadataHashOffset, plan::kWeightsHashOffset}) {
    std::string hashes = bytes;
    hashes[at] ^= 0x01;
    r = plan::parsePlan(hashes, {false});
    ASSERT_FALSE(r);
    EXPECT_NE(r.status().message().find("plan: the metadata section"),
              std::string::npos)
        << r.status().message();
  }
  std::remove(path.c_str());
}

TEST(PlanIO, RejectsOutOfRangeIds) {
  plan::Plan p;
  p.values.resize(2);
  p.inputs.push_back({"x", 0});
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
  p.steps[0].results = {1};
  r = plan::parsePlan(plan::serializePlan(p));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            "plan: kernel 0 ('elementwise') names a value out of range");
}

// Tests that steps name only op kinds of the closed set, kernels only
// kernel kinds, and that the kernels cover the steps in order.
TEST(PlanIO, RejectsUnknownKindsAndUncoveredSteps) {
  plan::Plan p;
  p.values.resize(2);
  p.inputs.push_back({"x", 0});
  plan::Step s;
  s.kind = "onnx.Tanh";
  s.name = "/model/t";
  s.operands = {0};
  s.results = {1};
  p.steps.push_back(s);
  auto r = plan::parsePlan(plan::serializePlan(p));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            "plan: step '/model/t' has the unknown op kind 'onnx.Tanh'");
  p.steps[0].kind = "unary";
  r = plan::parsePlan(plan::serializePlan(p));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "plan: 1 steps belong to no kernel");
  p.kernels.push_back({"fused_everything", 0, 1, {0}, {1}, {}});
  r = plan::parsePlan(plan::serializePlan(p));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            "plan: kernel 0 ('fused_everything') has an unknown kind");
  p.kernels[0] = {"elementwise", 0, 2, {0}, {1}, {}};
  r = plan::parsePlan(plan::serializePlan(p));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "plan: kernel 0 ('elementwise') does not "
                                  "cover the steps after the previous kernel");
  p.kernels[0].numSteps = 1;
  EXPECT_TRUE(plan::parsePlan(plan::serializePlan(p)));
  // Releasing the output (or a constant) would leave later forwards
  // without it.
  p.outputs = {1};
  p.kernels[0].releases = {1};
  r = plan::parsePlan(plan::serializePlan(p));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            "plan: kernel 0 ('elementwise') releases value 1, a constant, "
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
    EXPECT_NE(loadError(p).find("more than 1099511627776 (2^40) elements"),
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

namespace {

using Scale = plan::ValueInfo::KVScale;

plan::ValueInfo cacheValue(plan::ElemType type, Scale scale, int64_t group = 0,
                           int64_t heads = 2, int64_t headDim = 64) {
  plan::ValueInfo v;
  v.kind = plan::ValueInfo::Kind::KVCache;
  v.type = type;
  v.kvHeads = heads;
  v.headDim = headDim;
  v.blockSize = 16;
  v.kvScale = scale;
  v.kvGroup = group;
  return v;
}

/// An int2 KIVI cache of 2 heads (block 16).
plan::ValueInfo kiviValue(int64_t group, int64_t residual,
                          int64_t headDim = 64) {
  plan::ValueInfo v =
      cacheValue(plan::ElemType::I2, Scale::Kivi, group, 2, headDim);
  v.kvResidual = residual;
  return v;
}

plan::ValueInfo tensorValue(plan::ElemType type, std::vector<int64_t> dims) {
  plan::ValueInfo v;
  v.type = type;
  v.dims = std::move(dims);
  return v;
}

/// A plan of one cache argument and nothing else.
plan::Plan planWithCache(const plan::ValueInfo &cache) {
  plan::Plan p;
  p.inputs.push_back({"kv_cache.0", p.addValue(cache)});
  return p;
}

} // namespace

// Tests that every KV-cache dtype and scale layout a compiled plan can
// hold survives serialisation, and the names and sizes of the new element
// types.
TEST(PlanIO, EveryCacheDTypeRoundTrips) {
  using T = plan::ElemType;
  const std::vector<plan::ValueInfo> caches = {
      cacheValue(T::F32, Scale::None),
      cacheValue(T::F16, Scale::None),
      cacheValue(T::BF16, Scale::None),
      cacheValue(T::F8E4M3, Scale::PerHead),
      cacheValue(T::F8E5M2, Scale::PerTensor),
      cacheValue(T::I8, Scale::PerTokenHead),
      cacheValue(T::I8, Scale::PerTokenGroup, 16),
      cacheValue(T::I8, Scale::PerHead),
      cacheValue(T::I4, Scale::PerTokenGroup, 32),
      kiviValue(32, 128),
      kiviValue(1, 16),
  };
  plan::Plan p;
  for (const plan::ValueInfo &c : caches)
    p.inputs.push_back(
        {"kv_cache." + std::to_string(p.values.size()), p.addValue(c)});
  auto r = plan::parsePlan(plan::serializePlan(p));
  ASSERT_TRUE(r) << r.status().message();
  ASSERT_EQ(r->values.size(), caches.size());
  for (size_t i = 0; i < caches.size(); ++i) {
    const plan::ValueInfo &got = r->values[i];
    EXPECT_EQ(got.kind, plan::ValueInfo::Kind::KVCache);
    EXPECT_EQ(got.type, caches[i].type) << i;
    EXPECT_EQ(got.kvScale, caches[i].kvScale) << i;
    EXPECT_EQ(got.kvGroup, caches[i].kvGroup) << i;
    EXPECT_EQ(got.kvResidual, caches[i].kvResidual) << i;
    EXPECT_EQ(got.kvHeads, 2);
    EXPECT_EQ(got.headDim, 64);
  }
  EXPECT_EQ(plan::serializePlan(*r), plan::serializePlan(p));

  EXPECT_STREQ(plan::elemTypeName(T::F8E4M3), "fp8_e4m3");
  EXPECT_STREQ(plan::elemTypeName(T::F8E5M2), "fp8_e5m2");
  EXPECT_STREQ(plan::elemTypeName(T::I8), "int8");
  EXPECT_STREQ(plan::elemTypeName(T::I4), "int4");
  EXPECT_STREQ(plan::elemTypeName(T::I2), "int2");
  EXPECT_EQ(int(T::I2), 9);
  EXPECT_EQ(int(Scale::Kivi), 4);
  EXPECT_EQ(plan::elemTypeSize(T::F8E4M3), 1u);
  EXPECT_EQ(plan::elemTypeSize(T::I8), 1u);
  EXPECT_EQ(plan::elemTypeSize(T::I4), 0u);
  EXPECT_EQ(plan::elemTypeBits(T::I4), 4u);
  EXPECT_EQ(plan::elemTypeSize(T::I2), 0u);
  EXPECT_EQ(plan::elemTypeBits(T::I2), 2u);
  EXPECT_FALSE(plan::isTensorElemType(T::I2));
  EXPECT_EQ(plan::elemTypeBits(T::F8E5M2), 8u);
  EXPECT_EQ(plan::elemTypeBits(T::BF16), 16u);
  EXPECT_STREQ(plan::kvScaleName(Scale::PerTokenGroup), "per_token_group");
  EXPECT_STREQ(plan::kvScaleName(Scale::Kivi), "kivi");
  // A tensor of a cache-only type has no size expression.
  EXPECT_EQ(plan::bufferBytes(tensorValue(T::I4, {4}), 1, 1, 1), -1);
  EXPECT_EQ(plan::bufferBytes(tensorValue(T::I2, {4}), 1, 1, 1), -1);
}

// Tests that a cache's dtype, scale layout and group are checked together
// as the dialect's type verifier does, and that tensors never carry the
// cache-only types.
TEST(PlanIO, RejectsBadCacheFormats) {
  using T = plan::ElemType;
  auto error = [](const plan::ValueInfo &cache) {
    return loadError(planWithCache(cache));
  };
  EXPECT_EQ(error(cacheValue(T::F8E4M3, Scale::None)),
            "plan: value 0 is a KV cache of fp8_e4m3 with scale none and "
            "group 0: fp8 caches take static scales (per_head or per_tensor)");
  EXPECT_EQ(error(cacheValue(T::F8E5M2, Scale::PerTokenHead)),
            "plan: value 0 is a KV cache of fp8_e5m2 with scale "
            "per_token_head and group 0: fp8 caches take static scales "
            "(per_head or per_tensor)");
  EXPECT_EQ(error(cacheValue(T::F16, Scale::PerHead)),
            "plan: value 0 is a KV cache of f16 with scale per_head and group "
            "0: an unquantized cache takes no scales");
  EXPECT_EQ(error(cacheValue(T::I8, Scale::None)),
            "plan: value 0 is a KV cache of int8 with scale none and group 0: "
            "int8 caches take per_token_head, per_token_group, per_head or "
            "per_tensor scales");
  EXPECT_EQ(error(cacheValue(T::I4, Scale::PerTokenHead)),
            "plan: value 0 is a KV cache of int4 with scale per_token_head "
            "and group 0: int4 caches take per_token_group scales");
  EXPECT_EQ(error(cacheValue(T::I4, Scale::PerTokenGroup, 0)),
            "plan: value 0 is a KV cache of int4 with scale per_token_group "
            "and group 0: the group must divide head_dim 64");
  EXPECT_EQ(error(cacheValue(T::I8, Scale::PerTokenGroup, 24)),
            "plan: value 0 is a KV cache of int8 with scale per_token_group "
            "and group 24: the group must divide head_dim 64");
  EXPECT_EQ(error(cacheValue(T::I4, Scale::PerTokenGroup, 1)),
            "plan: value 0 is a KV cache of int4 with scale per_token_group "
            "and group 1: an int4 group must be even (two elements per byte)");
  EXPECT_EQ(error(cacheValue(T::I8, Scale::PerTokenHead, 16)),
            "plan: value 0 is a KV cache of int8 with scale per_token_head "
            "and group 16: a group only goes with per_token_group or kivi "
            "scales");
  // int2 (KIVI): kivi scales, a residual window of whole blocks, a value
  // group dividing head_dim, four elements per byte; no other dtype has a
  // residual window, and int4 has no kivi.
  EXPECT_EQ(error(cacheValue(T::I2, Scale::PerTokenGroup, 32)),
            "plan: value 0 is a KV cache of int2 with scale per_token_group "
            "and group 32: int2 caches take kivi scales");
  EXPECT_EQ(error(kiviValue(32, 0)),
            "plan: value 0 is a KV cache of int2 with scale kivi, group 32 "
            "and residual 0: the residual window must be a positive multiple "
            "of the block size 16 up to 8192 tokens");
  EXPECT_EQ(error(kiviValue(32, -16)),
            "plan: value 0 is a KV cache of int2 with scale kivi, group 32 "
            "and residual -16: the residual window must be a positive "
            "multiple of the block size 16 up to 8192 tokens");
  EXPECT_EQ(error(kiviValue(32, 24)),
            "plan: value 0 is a KV cache of int2 with scale kivi, group 32 "
            "and residual 24: the residual window must be a positive multiple "
            "of the block size 16 up to 8192 tokens");
  EXPECT_EQ(error(kiviValue(32, 8192 + 16)),
            "plan: value 0 is a KV cache of int2 with scale kivi, group 32 "
            "and residual 8208: the residual window must be a positive "
            "multiple of the block size 16 up to 8192 tokens");
  EXPECT_EQ(error(kiviValue(0, 128)),
            "plan: value 0 is a KV cache of int2 with scale kivi, group 0 and "
            "residual 128: the group must divide head_dim 64");
  EXPECT_EQ(error(kiviValue(24, 128)),
            "plan: value 0 is a KV cache of int2 with scale kivi, group 24 "
            "and residual 128: the group must divide head_dim 64");
  EXPECT_EQ(error(kiviValue(2, 128, 66)),
            "plan: value 0 is a KV cache of int2 with scale kivi, group 2 and "
            "residual 128: an int2 head_dim must be a multiple of 4 (four "
            "elements per byte)");
  {
    plan::ValueInfo v = kiviValue(32, 128);
    v.type = T::I4;
    EXPECT_EQ(error(v), "plan: value 0 is a KV cache of int4 with scale "
                        "kivi, group 32 and residual 128: int4 caches take "
                        "per_token_group scales");
    v = cacheValue(T::I8, Scale::PerTokenHead);
    v.kvResidual = 16;
    EXPECT_EQ(error(v), "plan: value 0 is a KV cache of int8 with scale "
                        "per_token_head, group 0 and residual 16: a residual "
                        "window only goes with kivi scales");
  }
  EXPECT_EQ(error(cacheValue(T::I32, Scale::None)),
            "plan: value 0 is a KV cache of i32 with scale none and group 0: "
            "not a KV-cache dtype");
  for (T t : {T::F8E4M3, T::F8E5M2, T::I8, T::I4, T::I2}) {
    plan::Plan p;
    p.addValue(tensorValue(t, {4}));
    EXPECT_EQ(loadError(p), std::string("plan: value 0 is a tensor of ") +
                                plan::elemTypeName(t) +
                                "; fp8_e4m3, fp8_e5m2, int8, int4 and int2 "
                                "are KV-cache dtypes only");
  }
  for (bool residual : {false, true}) {
    plan::Plan p;
    plan::ValueInfo v = tensorValue(T::F32, {4});
    if (residual)
      v.kvResidual = 128;
    else
      v.kvScale = Scale::PerHead;
    p.addValue(v);
    EXPECT_EQ(loadError(p), "plan: value 0 is a tensor with KV-cache scales");
  }
  // A scale layout and an element type the format does not know (6 is past
  // per_token_group, 10 past int2).
  {
    std::string bytes = plan::serializePlan(
        planWithCache(cacheValue(T::I8, Scale::PerTokenHead)));
    // The one value record follows the entry name "forward", the empty
    // config and the value count: kind, type, dims, 3 x i64, symbol,
    // buffer, then the scale layout.
    size_t record = 64 + (4 + 7) + 4 + 4;
    ASSERT_EQ(bytes[record], char(plan::ValueInfo::Kind::KVCache));
    ASSERT_EQ(bytes[record + 1], char(T::I8));
    size_t scaleAt = record + 2 + 4 + 3 * 8 + 1 + 4;
    ASSERT_EQ(bytes[scaleAt], char(Scale::PerTokenHead));
    std::string badScale = bytes;
    badScale[scaleAt] = 6;
    resealMetadata(badScale);
    auto r = plan::parsePlan(badScale);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().message(), "plan: bad KV-cache scale layout");
    std::string badType = bytes;
    badType[record + 1] = 10;
    resealMetadata(badType);
    r = plan::parsePlan(badType);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().message(), "plan: bad value kind or element type");
  }
}

// Tests that a cache's geometry is bounded (heads and head_dim at most
// 4096 each) so no size computed from it can overflow, and that the
// limits themselves load.
TEST(PlanIO, BoundsCacheGeometry) {
  using T = plan::ElemType;
  auto error = [](int64_t heads, int64_t headDim) {
    return loadError(
        planWithCache(cacheValue(T::F32, Scale::None, 0, heads, headDim)));
  };
  EXPECT_EQ(error(plan::kMaxKVHeads, plan::kMaxHeadDim), "");
  EXPECT_EQ(error(4097, 64), "plan: value 0 is a KV cache with 4097 heads of "
                             "64 elements; heads may be at most 4096 and "
                             "head_dim at most 4096");
  EXPECT_EQ(error(8, 4098), "plan: value 0 is a KV cache with 8 heads of 4098 "
                            "elements; heads may be at most 4096 and "
                            "head_dim at most 4096");
  // Sizes whose product wraps 64 bits.
  EXPECT_NE(error(int64_t(1) << 40, int64_t(1) << 40)
                .find("heads may be at most 4096"),
            std::string::npos);
}

// Tests that the config's kv_cache_dtype, when present, is a resolved
// folio::KVCacheDType (f32 = 1 to int2 = 8; never auto = 0).
TEST(PlanIO, ChecksConfigKVCacheDType) {
  static_assert(plan::kMinConfigKVCacheDType == int64_t(KVCacheDType::F32));
  static_assert(plan::kMaxConfigKVCacheDType == int64_t(KVCacheDType::Int2));
  plan::Plan p = planWithCache(cacheValue(plan::ElemType::BF16, Scale::None));
  for (int64_t ok : {int64_t(KVCacheDType::F32), int64_t(KVCacheDType::Int8),
                     int64_t(KVCacheDType::Int2)}) {
    p.config = {{"kv_cache_dtype", ok}};
    EXPECT_EQ(loadError(p), "") << ok;
  }
  for (int64_t bad : {int64_t(0), int64_t(9), int64_t(-1)}) {
    p.config = {{"kv_cache_dtype", bad}};
    EXPECT_EQ(loadError(p), "plan: the config's kv_cache_dtype " +
                                std::to_string(bad) +
                                " is not a KV-cache dtype; it must be 1 "
                                "(f32) to 8 (int2)");
  }
}

namespace {

/// kv_write and paged_attention over one cache with per-head static
/// scales: constants [kScale..., vScale...] of `heads` elements.
plan::Plan staticScalePlan(Scale scale, std::vector<float> kScale,
                           std::vector<float> vScale) {
  using T = plan::ElemType;
  plan::Plan p;
  int32_t cache = p.addValue(cacheValue(T::F8E4M3, scale, 0, 2, 8));
  p.inputs.push_back({"kv_cache.0", cache});
  int32_t rows = p.addValue(tensorValue(T::F32, {-1, 2, 8}));
  int32_t slots = p.addValue(tensorValue(T::I64, {-1}));
  int32_t q = p.addValue(tensorValue(T::F32, {-1, 4, 8}));
  int32_t tables = p.addValue(tensorValue(T::I32, {-1, -1}));
  int32_t lens = p.addValue(tensorValue(T::I32, {-1}));
  int32_t starts = p.addValue(tensorValue(T::I32, {-1}));
  // Defined before the steps read them (validatePlan checks dataflow).
  for (auto [name, id] : {std::pair{"rows", rows},
                          {"slot_mapping", slots},
                          {"q", q},
                          {"block_tables", tables},
                          {"seq_lens", lens},
                          {"query_start_loc", starts}})
    p.inputs.push_back({name, id});
  // Per tensor: a scalar, unless the test wants a wrong one.
  auto dimsOf = [&](const std::vector<float> &v) {
    return scale == Scale::PerTensor && v.size() == 1
               ? std::vector<int64_t>{}
               : std::vector<int64_t>{int64_t(v.size())};
  };
  int32_t ks = p.addValue(tensorValue(T::F32, dimsOf(kScale)));
  int32_t vs = p.addValue(tensorValue(T::F32, dimsOf(vScale)));
  p.constants.push_back(
      {ks, p.blob.append(kScale.data(), kScale.size() * 4), kScale.size() * 4});
  p.constants.push_back(
      {vs, p.blob.append(vScale.data(), vScale.size() * 4), vScale.size() * 4});
  int32_t out = p.addValue(tensorValue(T::F32, {-1, 4, 8}));
  plan::Step write;
  write.kind = "kv_write";
  write.name = "/layers.0/write";
  write.operands = {cache, rows, rows, slots, ks, vs};
  plan::Step read;
  read.kind = "paged_attention";
  read.name = "/layers.0/attn";
  read.operands = {q, cache, tables, lens, starts, ks, vs};
  read.results = {out};
  read.attrs = {{"scale", 0.35}};
  p.steps = {write, read};
  p.kernels.push_back({"kv_write", 0, 1, write.operands, {}, {}});
  p.kernels.push_back({"paged_attention", 1, 1, read.operands, {out}, {}});
  return p;
}

} // namespace

// Tests that the steps of a cache with static scales take them as positive,
// finite f32 constants of the cache's head count (a scalar per tensor), and
// that other caches take none.
TEST(PlanIO, ChecksStaticCacheScales) {
  EXPECT_EQ(loadError(staticScalePlan(Scale::PerHead, {0.5f, 2.f}, {1.f, 1.f})),
            "");
  EXPECT_EQ(loadError(staticScalePlan(Scale::PerTensor, {0.5f}, {1.f})), "");
  const std::string write = "plan: step 'kv_write' ('/layers.0/write') on KV "
                            "cache value 0 (per_head scales)";
  const std::string read = "plan: step 'paged_attention' ('/layers.0/attn') "
                           "on KV cache value 0 (per_head scales)";
  {
    plan::Plan p = staticScalePlan(Scale::PerHead, {1.f, 1.f}, {1.f, 1.f});
    p.steps[0].operands.resize(4);
    EXPECT_EQ(loadError(p),
              write + " needs k_scale and v_scale operands, got 4 operands");
  }
  {
    plan::Plan p = staticScalePlan(Scale::PerHead, {1.f, 1.f}, {1.f, 1.f});
    p.steps[1].operands.pop_back();
    EXPECT_EQ(loadError(p),
              read + " needs k_scale and v_scale operands, got 6 operands");
  }
  {
    // A computed value (the key rows), not a constant.
    plan::Plan p = staticScalePlan(Scale::PerHead, {1.f, 1.f}, {1.f, 1.f});
    p.steps[0].operands[5] = 1;
    EXPECT_EQ(loadError(p),
              write + ": v_scale (value 1) must be a constant f32 [2]");
  }
  {
    plan::Plan p = staticScalePlan(Scale::PerHead, {1.f, 1.f, 1.f}, {1.f});
    EXPECT_EQ(loadError(p),
              write + ": k_scale (value 7) must be a constant f32 [2]");
  }
  {
    plan::Plan p = staticScalePlan(Scale::PerTensor, {1.f, 1.f}, {1.f, 1.f});
    EXPECT_NE(loadError(p).find("k_scale (value 7) must be a constant f32 "
                                "scalar"),
              std::string::npos)
        << loadError(p);
  }
  {
    plan::Plan p = staticScalePlan(Scale::PerHead, {1.f, 0.f}, {1.f, 1.f});
    EXPECT_EQ(loadError(p), write + ": k_scale (value 7) element 1 is "
                                    "0.000000; scales must be positive and "
                                    "finite");
  }
  {
    plan::Plan p =
        staticScalePlan(Scale::PerHead, {1.f, 1.f}, {-1.f, std::nanf("")});
    EXPECT_EQ(loadError(p), write + ": v_scale (value 8) element 0 is "
                                    "-1.000000; scales must be positive and "
                                    "finite");
    p = staticScalePlan(Scale::PerHead, {1.f, 1.f}, {1.f, std::nanf("")});
    EXPECT_NE(loadError(p).find("v_scale (value 8) element 1 is nan"),
              std::string::npos)
        << loadError(p);
  }
  {
    // A cache whose scales are stored with its slots takes no operands.
    plan::Plan p = staticScalePlan(Scale::PerHead, {1.f, 1.f}, {1.f, 1.f});
    p.values[0].type = plan::ElemType::I8;
    p.values[0].kvScale = Scale::PerTokenHead;
    EXPECT_EQ(loadError(p),
              "plan: step 'kv_write' ('/layers.0/write') on KV cache value 0 "
              "(per_token_head scales) takes no scale operands, got 6 "
              "operands");
  }
  {
    // So does a KIVI cache: its scales live in its blocks.
    plan::Plan p = staticScalePlan(Scale::PerHead, {1.f, 1.f}, {1.f, 1.f});
    p.values[0].type = plan::ElemType::I2;
    p.values[0].kvScale = Scale::Kivi;
    p.values[0].kvGroup = 4;
    p.values[0].kvResidual = 128;
    EXPECT_EQ(loadError(p),
              "plan: step 'kv_write' ('/layers.0/write') on KV cache value 0 "
              "(kivi scales) takes no scale operands, got 6 operands");
    p.steps[0].operands.resize(4);
    p.kernels[0].inputs.resize(4);
    EXPECT_EQ(loadError(p),
              "plan: step 'paged_attention' ('/layers.0/attn') on KV cache "
              "value 0 (kivi scales) takes no scale operands, got 7 operands");
    p.steps[1].operands.resize(5);
    p.kernels[1].inputs.resize(5);
    EXPECT_EQ(loadError(p), "");
  }
}

// Tests that every step of a cache names the same k_scale and v_scale
// values: a read with other constants (even of equal values) or with the
// two swapped would dequantize with scales the write did not use.
TEST(PlanIO, ChecksOneSetOfScalesPerCache) {
  auto withOtherScales = [](bool swap) {
    plan::Plan p = staticScalePlan(Scale::PerHead, {1.f, 1.f}, {1.f, 1.f});
    int32_t ks = p.steps[0].operands[4];
    if (swap) {
      std::swap(p.steps[1].operands[5], p.steps[1].operands[6]);
    } else {
      // A copy of k_scale: the same bytes under another value id.
      int32_t copy = p.addValue(p.values[size_t(ks)]);
      std::vector<float> ones = {1.f, 1.f};
      p.constants.push_back({copy, p.blob.append(ones.data(), 8), 8});
      p.steps[1].operands[5] = copy;
    }
    return p;
  };
  const std::string read = "plan: step 'paged_attention' ('/layers.0/attn') "
                           "on KV cache value 0 has ";
  const std::string first = " but step 'kv_write' ('/layers.0/write') on the "
                            "same cache has k_scale value 7, v_scale value 8; "
                            "every step of a cache uses the same scales";
  plan::Plan p = withOtherScales(false);
  int32_t copy = int32_t(p.values.size()) - 1;
  EXPECT_EQ(loadError(p), read + "k_scale value " + std::to_string(copy) +
                              ", v_scale value 8" + first);
  EXPECT_EQ(loadError(withOtherScales(true)),
            read + "k_scale value 8, v_scale value 7" + first);
  // Two reads that agree with the write load.
  plan::Plan twice = staticScalePlan(Scale::PerHead, {1.f, 1.f}, {1.f, 1.f});
  twice.steps.push_back(twice.steps[1]);
  twice.steps[2].name = "/layers.0/attn2";
  twice.steps[2].results = {
      twice.addValue(twice.values[size_t(twice.steps[1].results[0])])};
  twice.kernels.push_back({"paged_attention",
                           2,
                           1,
                           twice.steps[2].operands,
                           twice.steps[2].results,
                           {}});
  EXPECT_EQ(loadError(twice), "");
}

// Tests that the compiler maps each quantized cache to its plan dtype,
// scale layout and group, and gives fp8 caches' steps their scales.
TEST(PlanIO, LowersQuantizedCaches) {
  auto compile = [](const std::string &dtype, int64_t group = 32,
                    int64_t residual = 0) {
    mlir::folio::CompileToPlanOptions o;
    o.kvCacheDtype = dtype;
    o.kvCacheGroupSize = group;
    o.kvCacheResidual = residual;
    o.onWarning = [](const std::string &) {};
    auto p = mlir::folio::compileONNXToPlan(
        std::string(FOLIO_SOURCE_DIR) + "/models/zoo/llama/cached.onnx", o);
    if (!p) {
      ADD_FAILURE() << llvm::toString(p.takeError());
      return plan::Plan();
    }
    return std::move(*p);
  };
  auto caches = [](const plan::Plan &p) {
    std::vector<plan::ValueInfo> out;
    for (const plan::Argument &a : p.inputs)
      if (p.values[size_t(a.value)].kind == plan::ValueInfo::Kind::KVCache)
        out.push_back(p.values[size_t(a.value)]);
    return out;
  };
  struct Case {
    std::string dtype;
    plan::ElemType type;
    Scale scale;
    int64_t group;
    int64_t residual = 0;
  };
  for (const Case &c :
       {Case{"f32", plan::ElemType::F32, Scale::None, 0},
        Case{"bf16", plan::ElemType::BF16, Scale::None, 0},
        Case{"int8", plan::ElemType::I8, Scale::PerTokenHead, 0},
        Case{"int4", plan::ElemType::I4, Scale::PerTokenGroup, 4},
        Case{"int2", plan::ElemType::I2, Scale::Kivi, 4, 128},
        Case{"fp8_e5m2", plan::ElemType::F8E5M2, Scale::PerHead, 0}}) {
    plan::Plan p = compile(c.dtype, 4);
    std::vector<plan::ValueInfo> cs = caches(p);
    ASSERT_FALSE(cs.empty()) << c.dtype;
    for (const plan::ValueInfo &v : cs) {
      EXPECT_EQ(v.type, c.type) << c.dtype;
      EXPECT_EQ(v.kvScale, c.scale) << c.dtype;
      EXPECT_EQ(v.kvGroup, c.group) << c.dtype;
      EXPECT_EQ(v.kvResidual, c.residual) << c.dtype;
    }
    // Static scales ride on the steps: two more operands, and nothing of
    // the operand segments leaks into the attributes.
    size_t writes = 0;
    for (const plan::Step &s : p.steps) {
      if (s.kind != "kv_write" && s.kind != "paged_attention")
        continue;
      size_t base = s.kind == "kv_write" ? 4 : 5;
      EXPECT_EQ(s.operands.size(), base + (c.scale == Scale::PerHead ? 2 : 0))
          << c.dtype << " " << s.kind;
      EXPECT_EQ(s.find("operandSegmentSizes"), nullptr);
      writes += s.kind == "kv_write";
    }
    EXPECT_EQ(writes, cs.size()) << c.dtype;
    // The requested dtype, as folio::KVCacheDType's value.
    EXPECT_EQ(p.configValue("kv_cache_dtype", -1),
              int64_t(*parseKVCacheDType(c.dtype)))
        << c.dtype;
    auto r = plan::parsePlan(plan::serializePlan(p));
    EXPECT_TRUE(r) << c.dtype << ": " << r.status().message();
  }
  // An explicit KIVI residual window reaches the plan.
  for (const plan::ValueInfo &v : caches(compile("int2", 0, 32))) {
    EXPECT_EQ(v.kvResidual, 32);
    EXPECT_EQ(v.kvGroup, 8); // head_dim 8: the largest even divisor
  }
  // auto resolves before the plan records it (int8 on the CPU).
  EXPECT_EQ(compile("auto", 0).configValue("kv_cache_dtype", -1),
            int64_t(KVCacheDType::Int8));
}

// Tests that the plan names the requested KV dtype even when every layer
// is kept at 16 bits, where the caches alone would say bf16.
TEST(PlanIO, RecordsTheRequestedDTypeWhenEveryLayerIsSkipped) {
  mlir::folio::CompileToPlanOptions o;
  o.kvCacheDtype = "fp8_e4m3";
  o.onWarning = [](const std::string &) {};
  const std::string model =
      std::string(FOLIO_SOURCE_DIR) + "/models/zoo/llama/cached.onnx";
  auto first = mlir::folio::compileONNXToPlan(model, o);
  ASSERT_TRUE(bool(first)) << llvm::toString(first.takeError());
  int64_t layers = 0;
  for (const plan::Argument &a : first->inputs)
    layers +=
        first->values[size_t(a.value)].kind == plan::ValueInfo::Kind::KVCache;
  ASSERT_GT(layers, 0);
  for (int64_t l = 0; l < layers; ++l)
    o.kvCacheSkipLayers.push_back(l);
  auto p = mlir::folio::compileONNXToPlan(model, o);
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  for (const plan::Argument &a : p->inputs) {
    const plan::ValueInfo &v = p->values[size_t(a.value)];
    if (v.kind == plan::ValueInfo::Kind::KVCache) {
      EXPECT_EQ(v.type, plan::ElemType::BF16);
    }
  }
  EXPECT_EQ(p->configValue("kv_cache_dtype", -1),
            int64_t(KVCacheDType::FP8E4M3));
  EXPECT_EQ(loadError(*p), "");
}

namespace {

/// A plan of one 64 KiB f32 constant: its blob spans many pages.
plan::Plan planWithLargeBlob() {
  plan::Plan p;
  plan::ValueInfo v;
  v.dims = {16384};
  int32_t id = p.addValue(v);
  std::vector<float> weights(16384, 0.5f);
  uint64_t offset =
      p.blob.append(weights.data(), weights.size() * sizeof(float));
  p.constants.push_back({id, offset, weights.size() * sizeof(float)});
  return p;
}

/// Loads `path`, truncates the file under the mapping and reads the last
/// weight, as a forward would.
void truncateWhileMappedAndTouch(const std::string &path) {
  auto r = plan::readPlan(path);
  if (!r) {
    std::fprintf(stderr, "load failed: %s\n", r.status().message().c_str());
    std::_Exit(3);
  }
  if (::truncate(path.c_str(), 8) != 0)
    std::_Exit(4);
  const volatile uint8_t *last = r->blob.data() + r->blob.size() - 1;
  uint8_t byte = *last;
  std::fprintf(stderr, "read %d from a truncated file\n", int(byte));
  std::_Exit(0);
}

} // namespace

// A plan file truncated in place while its weights are mapped: touching a
// vanished page is an error naming the file and exit status 1, not a bare
// "Bus error".
TEST(PlanIODeathTest, TruncatedWhileMappedIsAClearError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::string path = tempPath("truncated-while-mapped.folio");
  ASSERT_TRUE(plan::writePlan(planWithLargeBlob(), path));
  {
    // Loads and reads fine before the truncation.
    auto r = plan::readPlan(path);
    ASSERT_TRUE(r) << r.status().message();
    EXPECT_STREQ(plan::planMappingAt(r->blob.data()), path.c_str());
    EXPECT_STREQ(plan::planMappingAt(r->blob.data() + r->blob.size() - 1),
                 path.c_str());
    EXPECT_EQ(plan::planMappingAt(&path), nullptr);
  }
  EXPECT_EXIT(truncateWhileMappedAndTouch(path), ::testing::ExitedWithCode(1),
              "folio: error: the plan file '.*truncated-while-mapped\\.folio' "
              "changed or was truncated while in use \\(its weights are "
              "mapped\\); reload it");
  std::remove(path.c_str());
}

// Unmapping forgets the range; a SIGBUS outside every plan keeps the
// default action.
TEST(PlanIODeathTest, OtherBusErrorsKeepTheDefaultAction) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::string path = tempPath("unmapped.folio");
  ASSERT_TRUE(plan::writePlan(planWithLargeBlob(), path));
  const uint8_t *data = nullptr;
  {
    auto r = plan::readPlan(path);
    ASSERT_TRUE(r) << r.status().message();
    data = r->blob.data();
  }
  EXPECT_EQ(plan::planMappingAt(data), nullptr);
  EXPECT_EXIT(
      {
        // With a plan mapped (and so the handler installed).
        auto r = plan::readPlan(path);
        if (r)
          std::raise(SIGBUS);
        std::_Exit(3);
      },
      ::testing::KilledBySignal(SIGBUS), "");
  std::remove(path.c_str());
}
