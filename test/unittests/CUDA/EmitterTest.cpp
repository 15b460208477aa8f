//===- EmitterTest.cpp - Specs, names, keys and sources of CUDA kernels ---===//

#include "codegen/CUDA/Emitter.h"
#include "test/unittests/CUDA/TestVariants.h"

#include <gtest/gtest.h>

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
