//===- EmitterTest.cpp - Specs, names, keys and sources of CUDA kernels ---===//

#include "codegen/CUDA/Emitter.h"
#include "codegen/CUDA/Templates.h"
#include "test/unittests/CUDA/KernelStructure.h"
#include "test/unittests/CUDA/TestVariants.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <memory>
#include <set>
#include <vector>

namespace folio::cuda::test {
namespace {

using cpu::DType;

std::string errorOf(const cpu::Status &st) {
  return st.ok() ? std::string("ok") : st.message();
}

TEST(CudaEmitter, RefusesWhatItCannotGenerate) {
  GeneratedKernel k;
  EXPECT_EQ(errorOf(emitKVWrite({DType::I2, 64, 2, 32}, k)),
            "kv_write (cache int2, head_dim 64): the int2 cache is not "
            "generated for CUDA; supported: f32, bf16, f16, fp8_e4m3, "
            "fp8_e5m2, int8, int4");
  EXPECT_EQ(errorOf(emitKVWrite({DType::I4, 64, 2, 7}, k)),
            "kv_write (cache int4, head_dim 64): group 7 must divide "
            "head_dim and be even");
  EXPECT_EQ(errorOf(emitKVWrite({DType::F16, 64, 2, 32}, k)),
            "kv_write (cache f16, head_dim 64): group 32 is only used by "
            "int8 and int4 caches; use 0");
  EXPECT_EQ(errorOf(emitKVWrite({DType::F16, 0, 2, 0}, k)),
            "kv_write (cache f16, head_dim 0): head_dim must be in [1, 512]");
  GeneratedKernel main, combine;
  PagedDecodeSpec s{DType::F32, 128, 16, 2, 8, 0, 2048, 128};
  EXPECT_EQ(errorOf(emitPagedDecode(s, main, combine)),
            "paged decode attention " + kernelName(s) +
                ": needs 77824 bytes of shared memory, more than the 49152 "
                "a launch gets by default; use a smaller partition");
  s.partition = 256;
  s.threads = 100;
  EXPECT_EQ(errorOf(emitPagedDecode(s, main, combine)),
            "paged decode attention " + kernelName(s) +
                ": threads 100 must be a multiple of 32 in [32, 1024]");
  s.threads = 128;
  s.queriesPerKv = 17;
  EXPECT_NE(errorOf(emitPagedDecode(s, main, combine))
                .find("query heads per kv head 17 must be in [1, 16]"),
            std::string::npos);
}

TEST(CudaEmitter, KeysAndNamesDistinguishEveryParameter) {
  // Distinct specs must give distinct keys and names.
  std::set<std::string> keys, names;
  std::set<std::vector<int>> specs;
  for (const KVWriteSpec &s : kvWriteVariants()) {
    keys.insert(canonicalKey(s));
    names.insert(kernelName(s));
    specs.insert({0, int(s.cacheType), s.headDim, s.numKvHeads, s.group});
  }
  for (PagedDecodeSpec s : pagedDecodeVariants()) {
    // Change each parameter in turn: each must show in key and name.
    for (int field = 0; field < 8; ++field) {
      PagedDecodeSpec t = s;
      switch (field) {
      case 0:
        t.headDim += 2, t.group = t.group ? t.headDim : 0;
        break;
      case 1:
        t.blockSize *= 2;
        break;
      case 2:
        t.numKvHeads += 1;
        break;
      case 3:
        t.queriesPerKv += 1;
        break;
      case 4:
        t.partition += 32;
        break;
      case 5:
        t.threads += 32;
        break;
      case 6:
        t.cacheType = t.cacheType == DType::F32 ? DType::F16 : DType::F32;
        t.group = 0;
        break;
      case 7:
        if (!t.group)
          continue;
        t.group = t.headDim;
        if (t.group == s.group)
          t.group /= 2;
        break;
      }
      keys.insert(canonicalKey(t));
      names.insert(kernelName(t));
      specs.insert({1, int(t.cacheType), t.headDim, t.blockSize, t.numKvHeads,
                    t.queriesPerKv, t.group, t.partition, t.threads});
    }
  }
  EXPECT_GT(specs.size(), 50u);
  EXPECT_EQ(keys.size(), specs.size());
  EXPECT_EQ(names.size(), specs.size());
  std::string key =
      canonicalKey(PagedDecodeSpec{DType::I8, 128, 16, 4, 2, 64, 256, 128});
  EXPECT_EQ(key.substr(0, key.find(";templates=")),
            "paged_decode:cache=int8;head_dim=128;block_size=16;kv_heads=4;"
            "q_per_kv=2;group=64;partition=256;threads=128");
  EXPECT_EQ(key.size() - key.find(";templates=") - 11, 16u); // the hash
}

TEST(CudaEmitter, SourcesAreSelfContainedAndPortable) {
  GeneratedKernel main, combine, write;
  PagedDecodeSpec s{DType::FP8E4M3, 128, 16, 2, 4, 0, 256, 128};
  ASSERT_TRUE(emitPagedDecode(s, main, combine).ok());
  ASSERT_TRUE(emitKVWrite({DType::I4, 128, 2, 32}, write).ok());
  for (const GeneratedKernel *k : {&main, &combine, &write}) {
    SCOPED_TRACE(k->name);
    EXPECT_NE(k->source.find("extern \"C\" __global__ void"),
              std::string::npos);
    EXPECT_NE(k->source.find("\n" + k->name + "(folio_cuda::"),
              std::string::npos);
    // Only the toolkit's headers; no inline PTX anywhere.
    size_t at = 0;
    while ((at = k->source.find("#include", at)) != std::string::npos) {
      std::string line = k->source.substr(at, k->source.find('\n', at) - at);
      EXPECT_TRUE(line == "#include <cuda_bf16.h>" ||
                  line == "#include <cuda_fp16.h>" ||
                  line == "#include <cuda_fp8.h>")
          << line;
      ++at;
    }
    EXPECT_EQ(k->source.find("asm"), std::string::npos);
  }
  EXPECT_NE(main.source.find("kType = folio_cuda::CacheType::E4M3"),
            std::string::npos);
  EXPECT_NE(main.source.find("kQueriesPerKv = 4;"), std::string::npos);
  EXPECT_NE(write.source.find("kGroup = 32;"), std::string::npos);
}

TEST(CudaEmitter, DecodeSplitsLongContexts) {
  PagedDecodeSpec s{DType::BF16, 64, 16, 2, 4, 0, 128, 128};
  PagedDecodeLaunch one = pagedDecodeLaunch(s, 3, 128);
  EXPECT_EQ(one.numPartitions, 1);
  EXPECT_EQ(one.partialFloats, 0u);
  PagedDecodeLaunch split = pagedDecodeLaunch(s, 3, 129);
  EXPECT_EQ(split.numPartitions, 2);
  EXPECT_EQ(split.main.grid[0], 2u);
  EXPECT_EQ(split.main.grid[1], 3u);
  EXPECT_EQ(split.main.grid[2], 2u);
  EXPECT_EQ(split.combine.grid[0], 8u);
  EXPECT_EQ(split.statFloats, 3u * 8 * 2);
  EXPECT_EQ(split.partialFloats, 3u * 8 * 2 * 64);
  EXPECT_EQ(split.main.dynamicShared, pagedDecodeSharedBytes(s));
  EXPECT_EQ(pagedDecodeSharedBytes(s), size_t(4 * (64 + 128) * 4 + 128 * 4));
}

} // namespace
} // namespace folio::cuda::test

namespace folio::cuda::test {
namespace {

TEST(CudaEmitter, RefusesRowProgramsItCannotGenerate) {
  GeneratedKernel k;
  RowBuilder b("bad", 64, 32);
  int x = b.input(RowInputKind::Row);
  b.output(b.unary("softplus", x));
  EXPECT_EQ(errorOf(emitRowKernel(b.spec, k)),
            "row kernel bad (dim 64), op 1: unknown unary function "
            "'softplus'; supported: neg, abs, exp, tanh, erf, sqrt, "
            "reciprocal, sigmoid, relu, silu, gelu_erf, gelu_tanh");
  RowBuilder late("late", 64, 32);
  late.input(RowInputKind::Row);
  late.spec.ops.push_back({RowOpKind::Binary, "add", 0, 2});
  late.output(0);
  EXPECT_EQ(errorOf(emitRowKernel(late.spec, k)),
            "row kernel late (dim 64), op 1: an operand is not an earlier "
            "value");
  RowBuilder twice("twice", 64, 32);
  int y = twice.input(RowInputKind::Row);
  twice.output(y);
  twice.spec.ops.push_back(twice.spec.ops.back());
  EXPECT_EQ(errorOf(emitRowKernel(twice.spec, k)),
            "row kernel twice (dim 64): output 0 is written 2 times; each "
            "output exactly once");
  RowBuilder wide("wide", 8192, 64);
  wide.output(wide.input(RowInputKind::Row));
  EXPECT_EQ(errorOf(emitRowKernel(wide.spec, k)),
            "row kernel wide (dim 8192): 128 elements per thread is over the "
            "64 kept in registers; use more threads");
  RowBuilder scalarNorm("scalar_norm", 64, 32);
  scalarNorm.output(
      scalarNorm.rmsNorm(scalarNorm.input(RowInputKind::Scalar), -1, 1e-5));
  EXPECT_EQ(errorOf(emitRowKernel(scalarNorm.spec, k)),
            "row kernel scalar_norm, op 1: a norm needs a per-element "
            "operand, not a constant or scalar");

  PagedPrefillSpec p{DType::F32, 128, 16, 2, 4, 0, 16, 64, 128};
  EXPECT_EQ(errorOf(emitPagedPrefill(p, k)),
            "paged prefill attention " + kernelName(p) +
                ": needs 116480 bytes of shared memory, more than the 49152 a "
                "launch gets by default; use smaller tiles");
  p = {DType::F32, 256, 16, 2, 8, 0, 16, 8, 128};
  EXPECT_NE(errorOf(emitPagedPrefill(p, k))
                .find("an output tile of 256 floats per thread is over the "
                      "128 kept in registers"),
            std::string::npos);
  // Tensor cores: mma.m16n8k16 tiles, one warp per 16 rows, registers.
  p = {DType::BF16, 40, 16, 2, 2, 0, 8, 16, 32, true};
  EXPECT_NE(errorOf(emitPagedPrefill(p, k))
                .find("tensor-core prefill needs head_dim (40) and the key "
                      "tile (16) to be multiples of 16"),
            std::string::npos);
  p = {DType::BF16, 64, 16, 2, 2, 0, 8, 24, 32, true};
  EXPECT_NE(errorOf(emitPagedPrefill(p, k)).find("key tile (24)"),
            std::string::npos);
  p = {DType::BF16, 64, 16, 2, 2, 0, 16, 16, 32, true};
  EXPECT_NE(errorOf(emitPagedPrefill(p, k))
                .find("one warp per 16 of its 32 rows: 64 threads, not 32"),
            std::string::npos);
  p = {DType::BF16, 256, 16, 2, 2, 0, 8, 64, 32, true};
  EXPECT_NE(errorOf(emitPagedPrefill(p, k))
                .find("take 224 registers per thread, over the 200"),
            std::string::npos);
  EXPECT_EQ(errorOf(emitGather({true, DType::FP8E5M2, 64, 32}, k)),
            "embedding (dim 64): a fp8_e5m2 table is not generated; "
            "supported: f32, bf16, f16, and a stored int8, fp8_e4m3 or int4 "
            "weight");
  EXPECT_EQ(errorOf(emitGather({false, DType::I8, 64, 32}, k)),
            "gather_rows (dim 64): gather_rows reads f32 rows, not int8");
  EXPECT_EQ(errorOf(emitGather({true, DType::I4, 64, 32, 16}, k)),
            "embedding (dim 64): group size 16 is not an int4 group (32, 64, "
            "128)");
  EXPECT_EQ(errorOf(emitGather({true, DType::I8, 64, 32, 32}, k)),
            "embedding (dim 64): group size 32 is for int4 tables only");
  EXPECT_EQ(errorOf(emitSample({SampleMode::Draw, 100}, k)),
            "sampling: threads 100 must be a multiple of 32 in [32, 1024]");
  EXPECT_EQ(errorOf(emitRotary({64, 63, false, 2}, k)),
            "rotary (head_dim 64, rotary_dim 63): rotary_dim must be even and "
            "in [2, head_dim]");
}

TEST(CudaEmitter, DefaultPrefillTilesFitEveryLayout) {
  for (int d : {8, 64, 80, 128, 256})
    for (int g : {1, 2, 4, 8, 16}) {
      PagedPrefillSpec s =
          defaultPagedPrefillSpec(DType::I4, d, 16, 2, g, d % 32 ? d : 32);
      EXPECT_TRUE(validate(s).ok()) << validate(s).message();
      EXPECT_LE(pagedPrefillSharedBytes(s), kMaxDefaultSharedBytes);
    }
  // Nothing fits one query token of 16 heads of 512: refused (folioc then
  // leaves every batch to the decode kernel).
  PagedPrefillSpec big = defaultPagedPrefillSpec(DType::F16, 512, 16, 1, 16, 0);
  EXPECT_EQ(big.queryTile, 1);
  EXPECT_NE(errorOf(emitPagedPrefill(big, *std::make_unique<GeneratedKernel>()))
                .find("bytes of shared memory, more than the 49152"),
            std::string::npos);
  // Tensor cores where head_dim allows: every layout fits, one warp per 16
  // rows; head_dim 80 keeps the CUDA-core kernel.
  for (int d : {64, 80, 128, 256})
    for (int g : {1, 3, 4, 16}) {
      PagedPrefillSpec t =
          defaultPagedPrefillSpec(DType::FP8E4M3, d, 16, 2, g, 0, true);
      EXPECT_EQ(t.tensorCores, d % 16 == 0) << d << " " << g;
      EXPECT_TRUE(validate(t).ok()) << validate(t).message();
      if (t.tensorCores) {
        EXPECT_EQ(t.threads, 32 * ((t.queryTile * g + 15) / 16));
        EXPECT_LE(t.queryTile * g, 64);
      }
    }
  PagedPrefillSpec s = defaultPagedPrefillSpec(DType::BF16, 128, 16, 8, 4, 0);
  EXPECT_EQ(s.queryTile * s.queriesPerKv, 64); // 64 rows per block
  LaunchGeometry g = pagedPrefillLaunch(s, 3, 40);
  EXPECT_EQ(g.grid[0], 8u);
  EXPECT_EQ(g.grid[1], unsigned((40 + s.queryTile - 1) / s.queryTile));
  EXPECT_EQ(g.grid[2], 3u);
  EXPECT_EQ(g.dynamicShared, pagedPrefillSharedBytes(s));
}

TEST(CudaEmitter, EveryNewKernelIsNamedKeyedAndSelfContained) {
  std::vector<GeneratedKernel> all;
  GeneratedKernel k;
  for (const PagedPrefillSpec &s : pagedPrefillVariants()) {
    ASSERT_TRUE(emitPagedPrefill(s, k).ok()) << kernelName(s);
    all.push_back(k);
    // Every parameter shows in name and key.
    for (int field = 0; field < 3; ++field) {
      PagedPrefillSpec t = s;
      (field == 0 ? t.queryTile : field == 1 ? t.keyTile : t.threads) += 32;
      EXPECT_NE(kernelName(t), kernelName(s));
      EXPECT_NE(canonicalKey(t), canonicalKey(s));
    }
    PagedPrefillSpec other = s;
    other.tensorCores = !s.tensorCores;
    EXPECT_NE(kernelName(other), kernelName(s));
    EXPECT_NE(canonicalKey(other), canonicalKey(s));
    // Not a number: the NVRTC tests keep the two kernels' structures apart.
    EXPECT_NE(kernelStructure(canonicalKey(other)),
              kernelStructure(canonicalKey(s)));
  }
  for (const RowKernelSpec &s : rowKernelVariants()) {
    ASSERT_TRUE(emitRowKernel(s, k).ok()) << s.label;
    all.push_back(k);
    // A changed constant is another program: another name and key.
    RowKernelSpec t = s;
    for (RowOp &op : t.ops)
      if (op.kind == RowOpKind::RmsNorm || op.kind == RowOpKind::LayerNorm ||
          op.kind == RowOpKind::Constant)
        op.value += 1e-7;
    if (canonicalProgram(t) != canonicalProgram(s)) {
      EXPECT_NE(kernelName(t), kernelName(s));
      EXPECT_NE(canonicalKey(t), canonicalKey(s));
    }
  }
  for (const RotarySpec &s : rotaryVariants()) {
    ASSERT_TRUE(emitRotary(s, k).ok());
    all.push_back(k);
  }
  for (const GatherSpec &s : gatherVariants()) {
    ASSERT_TRUE(emitGather(s, k).ok());
    all.push_back(k);
  }
  for (const SampleSpec &s : sampleVariants()) {
    ASSERT_TRUE(emitSample(s, k).ok());
    all.push_back(k);
  }
  for (const LinearSpec &s : linearVariants()) {
    ASSERT_TRUE(emitLinear(s, k).ok()) << kernelName(s);
    all.push_back(k);
    for (int field = 0; field < 4; ++field) {
      LinearSpec t = s;
      (field == 0   ? t.k
       : field == 1 ? t.rowsPerPass
       : field == 2 ? t.threads
                    : t.outputsPerWarp) += field == 3 ? 1 : 32;
      EXPECT_NE(kernelName(t), kernelName(s));
      EXPECT_NE(canonicalKey(t), canonicalKey(s));
    }
    // A block computes threads / 32 warps' outputsPerWarp rows each.
    const int perBlock = s.threads / 32 * s.outputsPerWarp;
    EXPECT_EQ(linearLaunch(s, 37).grid[0],
              unsigned((37 + perBlock - 1) / perBlock));
    EXPECT_EQ(linearLaunch(s, 37).block[0], unsigned(s.threads));
  }
  for (const CastSpec &s : castVariants()) {
    ASSERT_TRUE(emitCast(s, k).ok()) << kernelName(s);
    all.push_back(k);
  }
  std::set<std::string> names, keys;
  for (const GeneratedKernel &g : all) {
    SCOPED_TRACE(g.name);
    names.insert(g.name);
    keys.insert(g.key);
    EXPECT_NE(g.source.find("\n" + g.name + "(folio_cuda::"),
              std::string::npos);
    // Inline PTX only on the device's fast path, which has a portable
    // twin after its #else.
    for (size_t at = g.source.find("asm"); at != std::string::npos;
         at = g.source.find("asm", at + 1)) {
      size_t guard = g.source.rfind("#ifdef FOLIO_DEVICE_FAST_PATH", at);
      ASSERT_NE(guard, std::string::npos) << "asm at " << at << " unguarded";
      std::string between = g.source.substr(guard, at - guard);
      EXPECT_EQ(between.find("#else"), std::string::npos) << at;
      EXPECT_EQ(between.find("#endif"), std::string::npos) << at;
    }
    size_t at = 0;
    while ((at = g.source.find("#include", at)) != std::string::npos) {
      std::string line = g.source.substr(at, g.source.find('\n', at) - at);
      EXPECT_TRUE(line == "#include <cuda_bf16.h>" ||
                  line == "#include <cuda_fp16.h>" ||
                  line == "#include <cuda_fp8.h>")
          << line;
      ++at;
    }
  }
  EXPECT_EQ(names.size(), all.size());
  EXPECT_EQ(keys.size(), all.size());
}

TEST(CudaEmitter, RefusesLinearSpecsItCannotGenerate) {
  using cpu::DType;
  auto refused = [](LinearSpec s, const std::string &why) {
    GeneratedKernel k;
    cpu::Status st = emitLinear(s, k);
    EXPECT_FALSE(st.ok()) << why;
    EXPECT_NE(st.message().find(why), std::string::npos) << st.message();
  };
  refused({DType::FP8E5M2, 64, 0, 8, 128},
          "supported: f32, bf16, f16, int8, fp8_e4m3, int4");
  refused({DType::I2, 64, 0, 8, 128}, "int2 weights are not generated");
  refused({DType::BF16, 0, 0, 8, 128}, "k must be in [1, 16777216]");
  refused({DType::I4, 64, 16, 8, 128}, "group size 16 is not one of 32");
  refused({DType::I4, 64, 0, 8, 128}, "group size 0 is not one of 32");
  refused({DType::I8, 64, 32, 8, 128}, "given for weights without groups");
  refused({DType::F32, 64, 0, 0, 128}, "rows per pass 0 must be in [1, 16]");
  refused({DType::F32, 64, 0, 17, 128}, "rows per pass 17");
  refused({DType::F32, 64, 0, 8, 128, 0},
          "outputs per warp 0 must be in [1, 8]");
  refused({DType::F32, 64, 0, 8, 128, 9}, "outputs per warp 9");
  refused({DType::F32, 64, 0, 8, 48}, "threads 48 must be a multiple of 32");
  refused({DType::BF16, 64, 0, 8, 128, 2, true},
          "dequantizing to bf16 takes int8, fp8_e4m3 or int4 weights");
  refused({DType::I8, 64, 0, 8, 128, 2, false, true},
          "quantizing x to fp8 is for the GEMMs of fp8_e4m3 weights");
  refused({DType::FP8E4M3, 64, 0, 8, 128, 2, true, true},
          "and not with dequantToBf16");
  // The key tells element loads from 16-byte chunks, so the NVRTC tests
  // keep both structures apart.
  EXPECT_NE(canonicalKey(LinearSpec{DType::BF16, 96, 0, 8, 128})
                .find(";loads=chunks16;"),
            std::string::npos);
  EXPECT_NE(canonicalKey(LinearSpec{DType::BF16, 100, 0, 8, 128})
                .find(";loads=elements;"),
            std::string::npos);
  EXPECT_NE(kernelName(LinearSpec{DType::I4, 64, 64, 8, 128}),
            kernelName(LinearSpec{DType::I4, 64, 128, 8, 128}));
}

TEST(CudaEmitter, EachSpecNamesTheArgumentStructItsKernelTakes) {
  auto expectTakes = [](const AnyKernelSpec &spec, const GeneratedKernel &k) {
    EXPECT_NE(
        k.source.find(k.name + "(folio_cuda::" + argsTypeName(spec) + " args)"),
        std::string::npos)
        << k.name;
  };
  GeneratedKernel k, c;
  ASSERT_TRUE(emitKVWrite(kvWriteVariants()[0], k).ok());
  expectTakes(kvWriteVariants()[0], k);
  ASSERT_TRUE(emitPagedDecode(pagedDecodeVariants()[0], k, c).ok());
  expectTakes(pagedDecodeVariants()[0], k);
  expectTakes(PagedDecodeCombineSpec{pagedDecodeVariants()[0]}, c);
  ASSERT_TRUE(emitPagedPrefill(pagedPrefillVariants()[0], k).ok());
  expectTakes(pagedPrefillVariants()[0], k);
  ASSERT_TRUE(emitRowKernel(rowKernelVariants()[0], k).ok());
  expectTakes(rowKernelVariants()[0], k);
  ASSERT_TRUE(emitRotary(rotaryVariants()[0], k).ok());
  expectTakes(rotaryVariants()[0], k);
  ASSERT_TRUE(emitGather(gatherVariants()[0], k).ok());
  expectTakes(gatherVariants()[0], k);
  ASSERT_TRUE(emitSample(sampleVariants()[0], k).ok());
  expectTakes(sampleVariants()[0], k);
  ASSERT_TRUE(emitLinear(linearVariants()[0], k).ok());
  expectTakes(linearVariants()[0], k);
  ASSERT_TRUE(emitCast(castVariants()[0], k).ok());
  expectTakes(castVariants()[0], k);
}

TEST(CudaEmitter, EveryEmbeddedTemplateIsInTheKeys) {
  // The keys hash the build's own list of templates, so the argument
  // structs and the newest templates are in it with the rest.
  const std::vector<const char *> &names = embeddedTemplateNames();
  for (const char *want : {"Prelude.cuh", "KernelArgs.cuh", "Linear.cuh",
                           "Cast.cuh", "PagedDecode.cuh"})
    EXPECT_NE(
        std::find_if(names.begin(), names.end(),
                     [&](const char *n) { return std::string(n) == want; }),
        names.end())
        << want;
  for (const char *n : names)
    EXPECT_NE(embeddedTemplate(n), nullptr) << n;
}

TEST(CudaEmitter, CastsStayWithinIntegersOrFloats) {
  GeneratedKernel k;
  cpu::Status st = emitCast({CastType::I32, CastType::F32, 256}, k);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cast from i32 to f32: casts are within "
                              "integers or within floats only"),
            std::string::npos)
      << st.message();
  EXPECT_FALSE(emitCast({CastType::F32, CastType::F16, 100}, k).ok());
  EXPECT_EQ(kernelName(CastSpec{CastType::I64, CastType::I32, 64}),
            "folio_cast_i64_i32_t64");
  EXPECT_EQ(castLaunch(CastSpec{CastType::I64, CastType::I32, 64}, 130).grid[0],
            3u);
}

TEST(CudaEmitter, EveryDeviceGetsACubinOrPtxItRuns) {
  struct Case {
    int major, minor;
    const char *arch;
    bool cubin;
  } cases[] = {{8, 0, "sm_80", true},  {8, 6, "sm_86", true},
               {8, 7, "sm_86", true},  {8, 9, "sm_89", true},
               {9, 0, "sm_90a", true}, {10, 0, "sm_89", false},
               {12, 0, "sm_89", false}};
  for (const Case &c : cases) {
    DeviceTarget t = deviceTarget(c.major, c.minor);
    EXPECT_EQ(t.arch, c.arch) << c.major << "." << c.minor;
    EXPECT_EQ(t.cubinRuns, c.cubin) << c.major << "." << c.minor;
  }
  EXPECT_TRUE(deviceTarget(7, 5).arch.empty());
}

TEST(CudaEmitter, RowProgramsBecomeExpressions) {
  // The emitted loop is the program: each op one assignment, constants as
  // exact hex literals, norms closing the loop with a block reduction.
  GeneratedKernel k;
  RowBuilder b("demo", 100, 32);
  int x = b.input(RowInputKind::Row), w = b.input(RowInputKind::Vector);
  int t = b.unary("gelu_erf", b.binary("mul", x, b.constant(0.1)));
  b.output(b.layerNorm(t, w, -1, 1e-5));
  ASSERT_TRUE(emitRowKernel(b.spec, k).ok());
  EXPECT_NE(k.source.find("v3[i] = (v0[i] * 0x1.99999ap-4f);"),
            std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("v4[i] = (0.5f * v3[i] * (1.0f + erff(v3[i] * "
                          "0.70710678118654752f)));"),
            std::string::npos);
  EXPECT_NE(k.source.find("const float v5_mean = folio_cuda::rowSum<kPer, "
                          "kThreads, kDim>(v4, red) / float(kDim);"),
            std::string::npos);
  EXPECT_NE(k.source.find("v5[i] = (v4[i] - v5_mean) * v5_inv * v1[i] + "
                          "0.0f;"),
            std::string::npos);
  EXPECT_NE(k.source.find("kPer = 4;"), std::string::npos);
}

} // namespace
} // namespace folio::cuda::test
