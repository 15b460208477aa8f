//===- RowEmulationTest.cpp - Row, rotary, gather, sample kernels vs CPU --===//
//
// The kernels of TestVariants.h that work row by row, generated at build
// time and run through the emulation against the CPU kernels: every row
// program (norms with residual adds, activations and gated activations,
// ops written out as the exporters write them, a soft-cap, a norm between
// elementwise stages) against codegen/CPU's norm / activation kernels;
// rotary in both styles, partial, in place and strided, against
// applyRotaryRows; embedding and gather_rows against the CPU gathers,
// including refused indices; greedy sampling and draws against
// runtime/Sampler; the verification of drafts (one-hot, or a draft model's
// distributions written by the draw) against the engine's host path
// (runtime/Core/SpeculativeStep.h with the CPU verify kernels); the
// logprobs against runtime/Sampler, with and without the samplers' keep
// sets.
//
//===----------------------------------------------------------------------===//

#include "codegen/CUDA/Emulation/Emulation.h"

// Generated at build time: the kernels and their tables (kFolioTestRow,
// kFolioTestRotary, kFolioTestGather, kFolioTestSample).
#include <RowTestKernels.inc>

#include "codegen/CPU/Activation.h"
#include "codegen/CPU/Elementwise.h"
#include "codegen/CPU/Gather.h"
#include "codegen/CPU/Norm.h"
#include "codegen/CPU/Rotary.h"
#include "codegen/CPU/WeightPack.h"
#include "runtime/Core/SpeculativeStep.h"
#include "runtime/Sampler/Philox.h"
#include "runtime/Sampler/Sampler.h"
#include "test/unittests/CUDA/EmulationLaunch.h"
#include "test/unittests/CUDA/TestVariants.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace folio::cuda::test {
namespace {

using cpu::DType;

/// The kernels' argument structs use long long, the CPU kernels int64_t
/// (long here): the same 64-bit integers.
const long long *asLongLong(const int64_t *p) {
  static_assert(sizeof(int64_t) == sizeof(long long));
  return reinterpret_cast<const long long *>(p);
}

template <typename Table>
auto findKernel(const Table &table, const std::string &key)
    -> decltype(&table[0]) {
  for (const auto &k : table)
    if (key == k.key)
      return &k;
  return nullptr;
}

void expectClose(const std::vector<float> &got, const std::vector<float> &want,
                 float tol, const char *what) {
  ASSERT_EQ(got.size(), want.size());
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= tol + tol * std::fabs(want[i])) &&
        ++bad <= 5)
      ADD_FAILURE() << what << " element " << i << ": emulated " << got[i]
                    << ", CPU kernel " << want[i];
  EXPECT_EQ(bad, 0) << what;
}

/// The CPU kernels' result for a row program of TestVariants.h, by label.
/// `in` holds each input's buffer, Row inputs `inStride` apart.
std::vector<std::vector<float>>
cpuRows(const RowKernelSpec &s, const std::vector<std::vector<float>> &in,
        const std::vector<int64_t> &inStride, int64_t rows) {
  const int64_t n = s.dim;
  std::vector<std::vector<float>> out(size_t(s.numOutputs),
                                      std::vector<float>(size_t(rows * n)));
  auto dense = [&](size_t i) { // a Row input without its stride
    std::vector<float> d(size_t(rows * n));
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(&d[size_t(r * n)], &in[i][size_t(r * inStride[i])],
                  size_t(n) * 4);
    return d;
  };
  const std::string &l = s.label;
  bool ok = true;
  if (l == "add_rms_norm") {
    ok = cpu::addRmsNorm(dense(0).data(), dense(1).data(), out[0].data(),
                         in[2].data(), out[1].data(), rows, n, 1e-5f, 0.0f)
             .ok();
  } else if (l == "gemma_rms_norm") {
    ok = cpu::rmsNorm(dense(0).data(), in[1].data(), out[0].data(), rows, n,
                      1e-6f, 1.0f)
             .ok();
  } else if (l == "add_layer_norm") {
    ok = cpu::addLayerNorm(dense(0).data(), dense(1).data(), out[0].data(),
                           in[2].data(), in[3].data(), out[1].data(), rows, n,
                           1e-5f)
             .ok();
  } else if (l == "layer_norm_plain") {
    ok = cpu::layerNorm(dense(0).data(), nullptr, nullptr, out[0].data(), rows,
                        n, 1e-5f)
             .ok();
  } else if (l == "swiglu" || l == "geglu_tanh") {
    ok = cpu::gatedActivation(in[0].data(), inStride[0], in[1].data(),
                              inStride[1], out[0].data(), rows, n,
                              l == "swiglu" ? cpu::Activation::Silu
                                            : cpu::Activation::GeluTanh)
             .ok();
  } else if (l == "gelu_erf" || l == "gelu_new_ops") {
    ok = cpu::activation(dense(0).data(), out[0].data(), rows * n,
                         l == "gelu_erf" ? cpu::Activation::GeluErf
                                         : cpu::Activation::GeluTanh)
             .ok();
  } else if (l == "soft_cap") {
    ok = cpu::softCap(dense(0).data(), out[0].data(), rows * n, 30.0f).ok();
  } else if (l == "norm_scale_bias") {
    std::vector<float> x = dense(0);
    for (float &v : x)
      v = v > 0.0f ? v : 0.0f;
    ok = cpu::rmsNorm(x.data(), in[1].data(), out[0].data(), rows, n, 1e-5f,
                      0.0f)
             .ok();
    for (int64_t i = 0; i < rows * n; ++i)
      out[0][size_t(i)] = out[0][size_t(i)] * in[2][0] + in[3][size_t(i % n)];
  } else {
    ADD_FAILURE() << "no CPU reference for row program " << l;
  }
  EXPECT_TRUE(ok) << l;
  return out;
}

TEST(CudaRowEmulation, EveryRowProgramMatchesTheCpuKernels) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.5f);
  for (const RowKernelSpec &s : rowKernelVariants()) {
    std::string name = kernelName(s);
    SCOPED_TRACE(name);
    const FolioTestRow *kernel = findKernel(kFolioTestRow, canonicalKey(s));
    ASSERT_NE(kernel, nullptr) << "no generated kernel for " << name;
    for (int64_t rows : {1, 6}) {
      // Gated programs read gate and up as the halves of one row (stride
      // 2 * dim); the other Row inputs are slices of wider rows.
      bool gated = s.label == "swiglu" || s.label == "geglu_tanh";
      std::vector<std::vector<float>> in;
      std::vector<int64_t> stride;
      folio_cuda::RowArgs a{};
      std::vector<float> fused;
      if (gated) {
        fused.resize(size_t(rows * 2 * s.dim));
        for (float &v : fused)
          v = normal(rng);
      }
      for (size_t i = 0; i < s.inputs.size(); ++i) {
        int64_t st = s.inputs[i] == RowInputKind::Row ? s.dim + 3 : 0;
        size_t count = s.inputs[i] == RowInputKind::Row      ? size_t(rows * st)
                       : s.inputs[i] == RowInputKind::Vector ? size_t(s.dim)
                                                             : 1;
        if (gated) {
          st = 2 * s.dim;
          in.push_back(
              std::vector<float>(fused.begin() + long(i * s.dim), fused.end()));
        } else {
          in.emplace_back(count);
          for (float &v : in.back())
            v = normal(rng);
        }
        stride.push_back(st);
      }
      for (size_t i = 0; i < in.size(); ++i) {
        a.in[i] = in[i].data();
        a.inStride[i] = stride[i];
      }
      // Outputs into rows wider than dim: the padding must stay untouched.
      const int64_t outStride = s.dim + 5;
      std::vector<std::vector<float>> out(
          size_t(s.numOutputs),
          std::vector<float>(size_t(rows * outStride), -7.0f));
      for (size_t o = 0; o < out.size(); ++o) {
        a.out[o] = out[o].data();
        a.outStride[o] = outStride;
      }
      cuda_emu::LaunchConfig config =
          emulationConfig(rowKernelLaunch(s, rows), name.c_str());
      config.scheduleSeed = rng();
      cuda_emu::launch(config, kernel->kernel, a);

      std::vector<std::vector<float>> want = cpuRows(s, in, stride, rows);
      for (size_t o = 0; o < out.size(); ++o) {
        std::vector<float> got;
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t d = 0; d < outStride; ++d) {
            float v = out[o][size_t(r * outStride + d)];
            if (d < s.dim)
              got.push_back(v);
            else
              EXPECT_EQ(v, -7.0f)
                  << "output " << o << " row " << r << " written past dim";
          }
        // Norms sum in another order than the CPU kernels.
        expectClose(got, want[o], 2e-5f, "row output");
      }
    }
  }
}

TEST(CudaRowEmulation, RotaryMatchesTheCpuKernel) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const RotarySpec &s : rotaryVariants()) {
    std::string name = kernelName(s);
    SCOPED_TRACE(name);
    const FolioTestRotary *kernel =
        findKernel(kFolioTestRotary, canonicalKey(s));
    ASSERT_NE(kernel, nullptr) << "no generated kernel for " << name;
    cpu::RotaryParams p;
    p.headDim = s.headDim;
    p.rotaryDim = s.rotaryDim;
    p.style = s.interleaved ? cpu::RotaryStyle::Interleaved
                            : cpu::RotaryStyle::HalfSplit;
    const int64_t tablePositions = 128, T = 7, H = s.numHeads, D = s.headDim;
    std::vector<float> table = cpu::rotaryCosSinTable(p, tablePositions);
    std::vector<int64_t> positions = {0, 1, 5, 17, 64, 126, tablePositions - 1};
    std::vector<float> x(size_t(T * H * D)), want(x.size());
    for (float &v : x)
      v = normal(rng);
    ASSERT_TRUE(cpu::applyRotaryRows(x.data(), want.data(), T, H, 1,
                                     positions.data(), table.data(),
                                     tablePositions, p)
                    .ok());
    // Strided source (a slice of a wider fused row) into a dense output,
    // then in place.
    const int64_t xStride = H * D + 6;
    std::vector<float> strided(size_t(T * xStride), 3.0f), y(x.size(), -1.0f);
    for (int64_t t = 0; t < T; ++t)
      std::memcpy(&strided[size_t(t * xStride)], &x[size_t(t * H * D)],
                  size_t(H * D) * 4);
    folio_cuda::RotaryArgs a{
        strided.data(), y.data(), xStride, H * D, asLongLong(positions.data()),
        table.data()};
    cuda_emu::launch(emulationConfig(rotaryLaunch(s, T), name.c_str()),
                     kernel->kernel, a);
    expectClose(y, want, 1e-6f, "rotary into a second buffer");
    std::vector<float> inPlace = x;
    a = {inPlace.data(),
         inPlace.data(),
         H * D,
         H * D,
         asLongLong(positions.data()),
         table.data()};
    cuda_emu::launch(emulationConfig(rotaryLaunch(s, T), name.c_str()),
                     kernel->kernel, a);
    expectClose(inPlace, want, 1e-6f, "rotary in place");
  }
}

/// A table of `rows` x `dim` random values in `t` and its f32 reading.
std::vector<uint8_t> randomTable(DType t, int64_t rows, int64_t dim,
                                 std::mt19937 &rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  size_t bytes = t == DType::F32 ? 4 : 2;
  std::vector<uint8_t> table(size_t(rows * dim) * bytes);
  for (size_t i = 0; i < size_t(rows * dim); ++i) {
    float f = normal(rng);
    if (t == DType::F32) {
      std::memcpy(&table[i * 4], &f, 4);
    } else {
      // Any 16-bit pattern of a finite value: bf16 from the f32's top
      // half, f16 from a random finite pattern.
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      uint16_t h =
          t == DType::BF16 ? uint16_t(bits >> 16) : uint16_t((rng() & 0xbfffu));
      std::memcpy(&table[i * 2], &h, 2);
    }
  }
  return table;
}

TEST(CudaRowEmulation, GathersMatchTheCpuKernels) {
  std::mt19937 rng(11);
  for (const GatherSpec &s : gatherVariants()) {
    if (!cpu::isPlainFloat(s.tableType))
      continue; // PackedTableLookupsMatchTheCpuKernel
    std::string name = kernelName(s);
    SCOPED_TRACE(name);
    const FolioTestGather *kernel =
        findKernel(kFolioTestGather, canonicalKey(s));
    ASSERT_NE(kernel, nullptr) << "no generated kernel for " << name;
    const int64_t vocab = 50, dim = s.dim;
    std::vector<uint8_t> table = randomTable(s.tableType, vocab, dim, rng);
    std::vector<int32_t> ids = {0, vocab - 1, 7, 7, 23};
    std::vector<int64_t> ids64(ids.begin(), ids.end());
    const int64_t n = int64_t(ids.size());
    for (float scale : {1.0f, 2.5f}) {
      if (!s.embedding && scale != 1.0f)
        continue;
      std::vector<float> want(size_t(n * dim)), got(want.size(), -1.0f);
      if (s.embedding)
        ASSERT_TRUE(cpu::embedding(ids.data(), n, table.data(), s.tableType,
                                   vocab, dim, want.data(), scale)
                        .ok());
      else
        ASSERT_TRUE(cpu::gatherRows(reinterpret_cast<float *>(table.data()),
                                    vocab, dim, ids.data(), n, want.data())
                        .ok());
      int error = 0;
      folio_cuda::GatherArgs a{table.data(), vocab, asLongLong(ids64.data()),
                               ids.data(),   scale, got.data(),
                               &error};
      cuda_emu::launch(emulationConfig(gatherLaunch(s, n), name.c_str()),
                       kernel->kernel, a);
      EXPECT_EQ(error, 0);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0)
          << "not bit for bit the CPU kernel's rows";
    }
    // An index outside the table: refused as the CPU refuses it.
    for (int32_t badId : {int32_t(vocab), -1}) {
      std::vector<int32_t> bad = {3, badId, 4};
      std::vector<int64_t> bad64(bad.begin(), bad.end());
      std::vector<float> want(size_t(3 * dim)), got(want.size(), -1.0f);
      EXPECT_FALSE(
          s.embedding ? cpu::embedding(bad.data(), 3, table.data(), s.tableType,
                                       vocab, dim, want.data())
                            .ok()
                      : cpu::gatherRows(reinterpret_cast<float *>(table.data()),
                                        vocab, dim, bad.data(), 3, want.data())
                            .ok());
      int error = 0;
      folio_cuda::GatherArgs a{table.data(), vocab, asLongLong(bad64.data()),
                               bad.data(),   1.0f,  got.data(),
                               &error};
      cuda_emu::launch(emulationConfig(gatherLaunch(s, 3), name.c_str()),
                       kernel->kernel, a);
      EXPECT_EQ(error, 2) << "the first bad row + 1";
      EXPECT_EQ(got[size_t(dim)], -1.0f) << "the bad row was written";
    }
  }
}

TEST(CudaRowEmulation, PackedTableLookupsMatchTheCpuKernel) {
  // A tied lm_head's int8 (outlier columns), fp8_e4m3 and int4 rows as the
  // embedding table: bit for bit cpu::embeddingRows, and an id outside the
  // rows flagged as the CPU refuses it.
  std::mt19937 rng(12);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  int tested = 0;
  for (const GatherSpec &s : gatherVariants()) {
    if (cpu::isPlainFloat(s.tableType))
      continue;
    std::string name = kernelName(s);
    SCOPED_TRACE(name);
    const FolioTestGather *kernel =
        findKernel(kFolioTestGather, canonicalKey(s));
    ASSERT_NE(kernel, nullptr) << "no generated kernel for " << name;
    const int64_t vocab = 50, dim = s.dim;
    std::vector<float> w(size_t(vocab * dim));
    for (float &x : w)
      x = normal(rng);
    for (int64_t r = 0; r < vocab; ++r)
      w[size_t(r * dim + 7)] *= 300.0f;
    cpu::WeightPacking p;
    ASSERT_TRUE(
        cpu::packWeightRows(w.data(), vocab, dim, s.tableType, p, s.groupSize)
            .ok());
    if (s.tableType == cpu::DType::I8) {
      ASSERT_FALSE(p.outlierCols.empty());
    }
    auto args = [&](const std::vector<int64_t> &ids64,
                    const std::vector<int32_t> &ids, float scale,
                    std::vector<float> &out, int &error) {
      folio_cuda::GatherArgs a{p.data.data(), vocab, asLongLong(ids64.data()),
                               ids.data(),    scale, out.data(),
                               &error};
      a.scales = p.scales.empty() ? nullptr : p.scales.data();
      a.groupParams = p.groupParams.empty() ? nullptr : p.groupParams.data();
      a.outlierCols = p.outlierCols.data();
      a.outliers = p.outliers.data();
      a.numOutliers = int(p.outlierCols.size());
      return a;
    };
    std::vector<int32_t> ids = {0, int32_t(vocab - 1), 7, 7, 23};
    std::vector<int64_t> ids64(ids.begin(), ids.end());
    const int64_t n = int64_t(ids.size());
    for (float scale : {1.0f, 2.5f}) {
      std::vector<float> want(size_t(n * dim)), got(want.size(), -1.0f);
      ASSERT_TRUE(
          cpu::embeddingRows(ids.data(), n, p.view(), want.data(), scale).ok());
      int error = 0;
      cuda_emu::launch(emulationConfig(gatherLaunch(s, n), name.c_str()),
                       kernel->kernel, args(ids64, ids, scale, got, error));
      EXPECT_EQ(error, 0);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0)
          << "not bit for bit the CPU kernel's rows";
    }
    std::vector<int32_t> bad = {3, int32_t(vocab), 4};
    std::vector<int64_t> bad64(bad.begin(), bad.end());
    std::vector<float> got(size_t(3 * dim), -1.0f);
    EXPECT_FALSE(
        cpu::embeddingRows(bad.data(), 3, p.view(), got.data(), 1.0f).ok());
    int error = 0;
    cuda_emu::launch(emulationConfig(gatherLaunch(s, 3), name.c_str()),
                     kernel->kernel, args(bad64, bad, 1.0f, got, error));
    EXPECT_EQ(error, 2) << "the first bad row + 1";
    EXPECT_EQ(got[size_t(dim)], -1.0f) << "the bad row was written";
    ++tested;
  }
  EXPECT_EQ(tested, 5);
}

TEST(CudaRowEmulation, GreedySamplingMatchesTheCpuSampler) {
  std::mt19937 rng(13);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const float inf = std::numeric_limits<float>::infinity();
  for (const SampleSpec &s : sampleVariants()) {
    if (s.mode != SampleMode::Greedy)
      continue;
    std::string name = kernelName(s);
    SCOPED_TRACE(name);
    const FolioTestSample *kernel =
        findKernel(kFolioTestSample, canonicalKey(s));
    ASSERT_NE(kernel, nullptr) << "no generated kernel for " << name;
    for (int vocab : {1, 37, 1000}) {
      const int rows = 7;
      std::vector<float> logits(size_t(rows * vocab));
      for (float &v : logits)
        v = normal(rng);
      auto row = [&](int r) { return &logits[size_t(r * vocab)]; };
      // Row 1: the maximum twice (the lower index wins); row 2: masked
      // tokens; rows 4-6: a NaN, a +inf, only -inf.
      row(1)[vocab - 1] = 50.0f;
      row(1)[vocab / 2] = 50.0f;
      for (int i = 0; i < vocab; i += 2)
        row(2)[i] = -inf;
      row(4)[vocab / 3] = std::nanf("");
      row(5)[vocab - 1] = inf;
      for (int i = 0; i < vocab; ++i)
        row(6)[i] = -inf;
      std::vector<int> tokens(rows, -2);
      folio_cuda::SampleArgs a{logits.data(), vocab, vocab, tokens.data()};
      cuda_emu::launch(emulationConfig(sampleLaunch(s, rows), name.c_str()),
                       kernel->kernel, a);
      SamplingParams greedy;
      greedy.temperature = 0.0f;
      for (int r = 0; r < rows; ++r) {
        SampleRow sr;
        sr.params = &greedy;
        Expected<SampledToken> cpu = sampleRow(row(r), size_t(vocab), sr);
        if (cpu)
          EXPECT_EQ(tokens[size_t(r)], cpu->token)
              << "vocab " << vocab << ", row " << r;
        else
          EXPECT_EQ(tokens[size_t(r)], -1)
              << "vocab " << vocab << ", row " << r
              << ": the CPU sampler refuses it: " << cpu.status().message();
      }
    }
  }
}

/// One request's draw settings in the sampler tests.
struct DrawSettings {
  float temperature; ///< 0: greedy
  int32_t topK;
  float topP;
  float minP;
};

/// n rows' or sequences' settings as the kernels read them (SampleArgs'
/// arrays) and as the host does (SamplingParams), each set from one
/// DrawSettings so that the two cannot disagree.
struct SettingArrays {
  explicit SettingArrays(size_t n)
      : params(n), temperature(n), topP(n), minP(n), topK(n) {}
  SamplingParams &set(size_t i, const DrawSettings &c) {
    SamplingParams &p = params[i];
    p.temperature = temperature[i] = c.temperature;
    p.topK = topK[i] = c.topK;
    p.topP = topP[i] = c.topP;
    p.minP = minP[i] = c.minP;
    return p;
  }
  /// A launch's arguments over `logits` ([rows, vocab]) into `tokens`
  /// with these settings (and a draw's `uniform`, or null).
  folio_cuda::SampleArgs args(const float *logits, int vocab, int *tokens,
                              const double *uniform = nullptr) const {
    return folio_cuda::SampleArgs{
        logits,      vocab,       vocab,   tokens,     temperature.data(),
        topK.data(), topP.data(), uniform, minP.data()};
  }
  std::vector<SamplingParams> params;
  std::vector<float> temperature, topP, minP;
  std::vector<int> topK;
};

// The draw sampler against runtime/Sampler's exact tokens: temperature,
// min-p, top-k and top-p, with greedy rows (temperature 0) in the same
// launch, as the engine sends a step mixing greedy and sampled requests.
TEST(CudaRowEmulation, TopKTopPSamplingMatchesTheCpuSampler) {
  std::mt19937 rng(17);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  using Config = DrawSettings; // temperature 0: a greedy row in the launch
  const std::vector<Config> configs = {
      {1.0f, 0, 1.0f, 0.0f},    {0.7f, 5, 1.0f, 0.0f},
      {1.3f, 0, 0.9f, 0.0f},    {0.5f, 50, 0.8f, 0.0f},
      {1.0f, 1, 1.0f, 0.0f},    {2.0f, 3, 0.5f, 0.0f},
      {1.0f, 0, 0.05f, 0.0f},   {0.8f, 1000, 0.99f, 0.0f},
      {0.0f, 0, 1.0f, 0.0f},    {1.0f, 0, 1.0f, 0.1f},
      {1.5f, 0, 1.0f, 0.5f},    {0.7f, 5, 0.9f, 0.05f},
      {2.0f, 20, 0.95f, 0.02f}, {1.0f, 0, 1.0f, 1.0f},
      {0.0f, 7, 0.5f, 0.3f},    {0.9f, 0, 0.7f, 0.25f}};
  // 16 settings: every one meets the plain, tied and masked rows below.
  int compared = 0;
  for (const SampleSpec &s : sampleVariants()) {
    if (s.mode != SampleMode::Draw)
      continue;
    std::string name = kernelName(s);
    SCOPED_TRACE(name);
    const FolioTestSample *kernel =
        findKernel(kFolioTestSample, canonicalKey(s));
    ASSERT_NE(kernel, nullptr) << "no generated kernel for " << name;
    for (int vocab : {1, 37, 1000}) {
      const int rows = int(configs.size()) * 3;
      std::vector<float> logits(size_t(rows * vocab));
      std::vector<float> temperature(rows), topP(rows), minP(rows);
      std::vector<int> topK(rows), tokens(size_t(rows), -2);
      std::vector<double> uniform(rows);
      std::vector<SamplingParams> params(static_cast<size_t>(rows));
      for (int r = 0; r < rows; ++r) {
        const Config &c = configs[size_t(r) % configs.size()];
        float *row = &logits[size_t(r * vocab)];
        for (int i = 0; i < vocab; ++i)
          row[i] = normal(rng);
        if (r % 3 == 1) // many ties: at the top-k threshold and top-p cut
          for (int i = 0; i < vocab; ++i)
            row[i] = std::round(row[i]);
        if (r % 3 == 2) // masked tokens
          for (int i = 1; i < vocab; i += 3)
            row[i] = -std::numeric_limits<float>::infinity();
        params[size_t(r)].temperature = c.temperature;
        params[size_t(r)].topK = c.topK;
        params[size_t(r)].topP = c.topP;
        params[size_t(r)].minP = c.minP;
        temperature[size_t(r)] = c.temperature;
        topK[size_t(r)] = c.topK;
        topP[size_t(r)] = c.topP;
        minP[size_t(r)] = c.minP;
        uniform[size_t(r)] = philoxUniform(1234 + uint64_t(r), 7);
      }
      folio_cuda::SampleArgs a{
          logits.data(),      vocab,       vocab,       tokens.data(),
          temperature.data(), topK.data(), topP.data(), uniform.data(),
          minP.data()};
      cuda_emu::LaunchConfig config =
          emulationConfig(sampleLaunch(s, rows), name.c_str());
      config.scheduleSeed = rng();
      cuda_emu::launch(config, kernel->kernel, a);
      for (int r = 0; r < rows; ++r) {
        SampleRow sr;
        sr.params = &params[size_t(r)];
        sr.seed = 1234 + uint64_t(r);
        sr.position = 7;
        Expected<SampledToken> cpu =
            sampleRow(&logits[size_t(r * vocab)], size_t(vocab), sr);
        if (cpu) {
          EXPECT_EQ(tokens[size_t(r)], cpu->token)
              << "vocab " << vocab << ", row " << r;
          ++compared;
        } else {
          EXPECT_EQ(tokens[size_t(r)], -1) << "vocab " << vocab << ", row " << r
                                           << ": " << cpu.status().message();
        }
      }
    }
  }
  EXPECT_GT(compared, 100);
}

// The logprobs kernel against runtime/Sampler's logprobs of the same
// draw: greedy rows (temperature 0: the logits as they are) and draws with
// temperature, min-p, top-k and top-p, tied and masked rows, top counts
// from none to 20 (more than a row keeps, so masked tokens at -inf come
// last by id; more than a vocabulary of 1 holds), rows that ask for none
// and rows the draw refused (token -1), whose outputs stay untouched; per
// row, and per verified sequence of three rows (numDraft 2).
TEST(CudaRowEmulation, LogprobsMatchTheCpuSampler) {
  std::mt19937 rng(41);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const float inf = std::numeric_limits<float>::infinity();
  struct Config {
    float temperature; // 0: greedy
    int32_t topK;
    float topP;
    float minP;
    int numTop; // -1: no logprobs
  };
  const std::vector<Config> configs = {
      {0.0f, 0, 1.0f, 0.0f, 5},   {1.0f, 0, 1.0f, 0.0f, 20},
      {0.7f, 5, 1.0f, 0.0f, 20},  {1.3f, 0, 0.9f, 0.0f, 3},
      {0.8f, 50, 0.95f, 0.1f, 1}, {1.0f, 0, 0.05f, 0.0f, 0},
      {2.0f, 3, 1.0f, 0.02f, 7},  {0.0f, 0, 1.0f, 0.0f, -1},
      {0.9f, 0, 1.0f, 0.5f, 12}};
  const int W = folio_cuda::kMaxTopLogprobs;
  int compared = 0, maskedInTop = 0;
  for (const SampleSpec &s : sampleVariants()) {
    if (s.mode != SampleMode::Logprobs)
      continue;
    std::string name = kernelName(s);
    SCOPED_TRACE(name);
    const FolioTestSample *kernel =
        findKernel(kFolioTestSample, canonicalKey(s));
    ASSERT_NE(kernel, nullptr) << "no generated kernel for " << name;
    for (int vocab : {1, 37, 1000})
      for (int numDraft : {0, 2}) {
        SCOPED_TRACE(vocab);
        SCOPED_TRACE(numDraft);
        const int rows = int(configs.size()) * 3, perSeq = numDraft + 1;
        const size_t V = size_t(vocab);
        std::vector<float> logits(size_t(rows) * V), temperature(rows),
            topP(rows), minP(rows), logprob(rows, 7.0f),
            topLogprobs(size_t(rows * W), 7.0f);
        std::vector<int> topK(rows), numTop(rows), tokens(rows),
            topTokens(size_t(rows * W), -7);
        std::vector<Expected<SampledToken>> want;
        for (int r = 0; r < rows; ++r) {
          // A verified sequence's rows share its settings (entry r / perSeq).
          const size_t seq = size_t(r / perSeq);
          const Config &c = configs[seq % configs.size()];
          float *row = &logits[size_t(r) * V];
          for (size_t i = 0; i < V; ++i)
            row[i] = normal(rng);
          if (r % 3 == 1) // ties at the top and at the cuts
            for (size_t i = 0; i < V; ++i)
              row[i] = std::round(row[i]);
          if (r % 3 == 2) // masked tokens
            for (size_t i = 1; i < V; i += 3)
              row[i] = -inf;
          if (r == rows - 1) // refused by the draw
            row[0] = std::nanf("");
          SamplingParams p;
          p.temperature = temperature[seq] = c.temperature;
          p.topK = topK[seq] = c.topK;
          p.topP = topP[seq] = c.topP;
          p.minP = minP[seq] = c.minP;
          numTop[seq] = c.numTop;
          if (c.numTop >= 0)
            p.logprobs = c.numTop;
          SampleRow sr;
          sr.params = &p;
          sr.seed = 99 + uint64_t(r);
          sr.position = 3;
          want.push_back(sampleRow(row, V, sr));
          tokens[size_t(r)] = want.back() ? want.back()->token : -1;
        }
        folio_cuda::SampleArgs a{
            logits.data(),      vocab,       vocab,       tokens.data(),
            temperature.data(), topK.data(), topP.data(), nullptr,
            minP.data()};
        a.numTop = numTop.data();
        a.numDraft = numDraft;
        a.logprob = logprob.data();
        a.topTokens = topTokens.data();
        a.topLogprobs = topLogprobs.data();
        cuda_emu::LaunchConfig config =
            emulationConfig(sampleLaunch(s, rows), name.c_str());
        config.scheduleSeed = rng();
        cuda_emu::launch(config, kernel->kernel, a);
        for (int r = 0; r < rows; ++r) {
          SCOPED_TRACE(r);
          const size_t first = size_t(r * W);
          const int asked = numTop[size_t(r / perSeq)];
          if (asked < 0 || !want[size_t(r)]) {
            EXPECT_EQ(logprob[size_t(r)], 7.0f) << "written";
            EXPECT_EQ(topTokens[first], -7) << "written";
            continue;
          }
          const TokenLogprobs &w = want[size_t(r)]->logprobs;
          EXPECT_NEAR(logprob[size_t(r)], w.logprob, 1e-5);
          ASSERT_EQ(w.top.size(), std::min<size_t>(size_t(asked), V));
          for (size_t j = 0; j < w.top.size(); ++j) {
            EXPECT_EQ(topTokens[first + j], w.top[j].first) << "top " << j;
            if (std::isinf(w.top[j].second)) {
              EXPECT_EQ(topLogprobs[first + j], w.top[j].second);
              ++maskedInTop;
            } else {
              EXPECT_NEAR(topLogprobs[first + j], w.top[j].second, 1e-5);
            }
          }
          if (w.top.size() < size_t(W))
            EXPECT_EQ(topTokens[first + w.top.size()], -7) << "past the count";
          ++compared;
        }
      }
  }
  EXPECT_GT(compared, 100);
  EXPECT_GT(maskedInTop, 10);
}

// Logits of -0 and +0 compare equal, so the host's top-k and top-p count
// them as ties at a cut, kept by lower id; the kernels' keep sets (read
// through the logprobs, which list the kept tokens before the masked
// ones) must too, not order -0 below +0.
TEST(CudaRowEmulation, SignedZerosTieAtTheCuts) {
  // p(1.0) = 0.40 and 0.15 per zero: top_p 0.6 keeps the largest and two
  // zeros; top_k 2 keeps every token tied at the second largest value.
  std::vector<float> logits = {1.0f, -0.0f, 0.0f, -0.0f, 0.0f, -5.0f};
  const int V = int(logits.size());
  for (const SampleSpec &s : sampleVariants()) {
    if (s.mode != SampleMode::Logprobs)
      continue;
    const FolioTestSample *kernel =
        findKernel(kFolioTestSample, canonicalKey(s));
    ASSERT_NE(kernel, nullptr);
    for (auto [topK, topP] : {std::pair{0, 0.6f}, std::pair{2, 1.0f}}) {
      SCOPED_TRACE(kernelName(s) + ", top_k " + std::to_string(topK) +
                   ", top_p " + std::to_string(topP));
      float temperature = 1.0f, minP = 0.0f, logprob = 0.0f;
      int numTop = V, token = 0;
      std::vector<int> ids(folio_cuda::kMaxTopLogprobs, -7);
      std::vector<float> values(folio_cuda::kMaxTopLogprobs);
      folio_cuda::SampleArgs a{logits.data(), V,     V,     &token,
                               &temperature,  &topK, &topP, nullptr,
                               &minP};
      a.numTop = &numTop;
      a.logprob = &logprob;
      a.topTokens = ids.data();
      a.topLogprobs = values.data();
      cuda_emu::launch(emulationConfig(sampleLaunch(s, 1), "logprobs"),
                       kernel->kernel, a);
      SamplingParams p;
      p.topK = topK;
      p.topP = topP;
      p.logprobs = V;
      SampleRow sr;
      sr.params = &p;
      Expected<std::vector<double>> processed =
          processLogits(logits.data(), size_t(V), sr);
      ASSERT_TRUE(processed);
      TokenLogprobs want = logprobsProcessed(*processed, 0, V);
      ASSERT_EQ(want.top.size(), size_t(V));
      for (int j = 0; j < V; ++j)
        EXPECT_EQ(ids[size_t(j)], want.top[size_t(j)].first) << "top " << j;
    }
  }
}

// The keep sets the draw and the verifier record (RowKeep) and the
// logprobs kernel reads: after a draw of greedy, sampled (temperature,
// min-p, top-k, top-p) and refused rows, and after verifying sequences of
// three rows, the logprobs read from them are bit for bit the ones the
// kernel computes rebuilding the sets, and the CPU sampler's for the draw.
// Every entry is written: each starts as a full record of another row's
// set, so an entry left unwritten would mislead the logprobs kernel. The
// rounded rows hold logits of +0 and -0, which the host counts as ties at
// a cut (the device once ordered -0 below +0).
TEST(CudaRowEmulation, LogprobsReadTheSamplersKeepSets) {
  std::mt19937 rng(43);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  using Config = DrawSettings;
  const std::vector<Config> configs = {
      {0.0f, 0, 1.0f, 0.0f},  {1.0f, 0, 1.0f, 0.0f},   {0.7f, 5, 1.0f, 0.0f},
      {1.3f, 0, 0.9f, 0.0f},  {0.8f, 50, 0.95f, 0.1f}, {1.0f, 0, 0.05f, 0.0f},
      {2.0f, 3, 1.0f, 0.02f}, {0.9f, 0, 1.0f, 0.5f}};
  const int W = folio_cuda::kMaxTopLogprobs, K = 2, perSeq = K + 1;
  const int numConfigs = int(configs.size());
  auto find = [](SampleMode m, int threads) {
    const FolioTestSample *k =
        findKernel(kFolioTestSample, canonicalKey(SampleSpec{m, threads}));
    EXPECT_NE(k, nullptr) << "no generated kernel, " << threads << " threads";
    return k;
  };
  int fromDraws = 0, fromVerifier = 0;
  for (int threads : {64, 256})
    for (int vocab : {37, 1000})
      for (bool verified : {false, true}) {
        SCOPED_TRACE(std::to_string(threads) + " threads, vocab " +
                     std::to_string(vocab) + (verified ? ", verified" : ""));
        const FolioTestSample *logprobsKernel =
            find(SampleMode::Logprobs, threads);
        const FolioTestSample *sampler =
            find(verified ? SampleMode::Verify : SampleMode::Draw, threads);
        ASSERT_TRUE(logprobsKernel && sampler);
        const int seqs = numConfigs * 2, rows = verified ? seqs * perSeq : seqs;
        const size_t V = size_t(vocab);
        std::vector<float> logits(size_t(rows) * V),
            uniforms(size_t(seqs * perSeq));
        std::vector<int> numTop(seqs, W), tokens(rows, -2), accepted(seqs),
            drafts(size_t(seqs * K));
        std::vector<double> uniform(seqs);
        SettingArrays settings(static_cast<size_t>(seqs));
        std::vector<SamplingParams> &params = settings.params;
        for (int q = 0; q < seqs; ++q) {
          SamplingParams &p =
              settings.set(size_t(q), configs[size_t(q % numConfigs)]);
          p.logprobs = W;
          uniform[size_t(q)] = philoxUniform(500 + uint64_t(q), 7);
          for (int j = 0; j < perSeq; ++j)
            uniforms[size_t(q * perSeq + j)] = float(rng() % 1000) / 1000.0f;
        }
        for (int r = 0; r < rows; ++r) {
          float *row = &logits[size_t(r) * V];
          for (size_t i = 0; i < V; ++i)
            row[i] = normal(rng);
          if (r % 2 == 1) // ties at the top and at the cuts
            for (size_t i = 0; i < V; ++i)
              row[i] = std::round(row[i]);
        }
        for (int q = 0; q < (verified ? seqs : 0); ++q)
          for (int j = 0; j < K; ++j) // kept (the argmax) or likely not
            drafts[size_t(q * K + j)] =
                (q + j) % 3 == 0
                    ? TokenId(rng() % V)
                    : firstMaximum(&logits[size_t(q * perSeq + j) * V], V);
        // A refused row: a plain draw's, or the first of a verified
        // sequence's rows (the verifier then emits nothing for it).
        logits[size_t(numConfigs + 1) * size_t(verified ? perSeq : 1) * V] =
            std::nanf("");
        // Poison: every entry a full record of another row's set.
        folio_cuda::RowKeep poison{0.5, -1.0, 0.25, 1u, 2u, 3, 3};
        std::vector<folio_cuda::RowKeep> keep(size_t(rows), poison);

        folio_cuda::SampleArgs a =
            settings.args(logits.data(), vocab, tokens.data(), uniform.data());
        a.keep = keep.data();
        if (verified) {
          a.numDraft = K;
          a.drafts = drafts.data();
          a.uniforms = uniforms.data();
          a.accepted = accepted.data();
        }
        std::string samplerName = verified ? "verify" : "draw";
        cuda_emu::LaunchConfig config = emulationConfig(
            sampleLaunch(
                SampleSpec{verified ? SampleMode::Verify : SampleMode::Draw,
                           threads},
                seqs),
            samplerName.c_str());
        config.scheduleSeed = rng();
        cuda_emu::launch(config, sampler->kernel, a);

        // The logprobs twice: reading the sets, and rebuilding them.
        struct Out {
          std::vector<float> logprob, top;
          std::vector<int> ids;
        };
        auto logprobsOf = [&](folio_cuda::RowKeep *sets) {
          Out o{std::vector<float>(size_t(rows), 7.0f),
                std::vector<float>(size_t(rows * W), 7.0f),
                std::vector<int>(size_t(rows * W), -7)};
          folio_cuda::SampleArgs l =
              settings.args(logits.data(), vocab, tokens.data());
          l.numDraft = verified ? K : 0;
          l.numTop = numTop.data();
          l.logprob = o.logprob.data();
          l.topTokens = o.ids.data();
          l.topLogprobs = o.top.data();
          l.keep = sets;
          cuda_emu::LaunchConfig lc = emulationConfig(
              sampleLaunch(SampleSpec{SampleMode::Logprobs, threads}, rows),
              "logprobs");
          lc.scheduleSeed = rng();
          cuda_emu::launch(lc, logprobsKernel->kernel, l);
          return o;
        };
        const Out read = logprobsOf(keep.data()), rebuilt = logprobsOf(nullptr);
        for (int r = 0; r < rows; ++r) {
          SCOPED_TRACE("row " + std::to_string(r));
          const int q = verified ? r / perSeq : r;
          const bool sampled = settings.temperature[size_t(q)] != 0.0f;
          const bool emitted = tokens[size_t(r)] >= 0;
          // A set where a sampled row was drawn or verified; the draw's
          // also carries its log-sum-exp.
          int wantFlags = 0;
          if (sampled && emitted)
            wantFlags = verified
                            ? folio_cuda::kRowKeepSet
                            : folio_cuda::kRowKeepSet | folio_cuda::kRowKeepLse;
          EXPECT_EQ(keep[size_t(r)].flags, wantFlags);
          if (wantFlags)
            ++(verified ? fromVerifier : fromDraws);
          EXPECT_EQ(0, std::memcmp(&read.logprob[size_t(r)],
                                   &rebuilt.logprob[size_t(r)], 4));
          for (int j = 0; j < W; ++j) {
            const size_t at = size_t(r * W + j);
            EXPECT_EQ(read.ids[at], rebuilt.ids[at]) << "top " << j;
            EXPECT_EQ(0, std::memcmp(&read.top[at], &rebuilt.top[at], 4))
                << "top " << j;
          }
          if (verified || !emitted)
            continue;
          // The CPU sampler drew the same token and reports the same.
          SampleRow sr;
          sr.params = &params[size_t(q)];
          sr.seed = 500 + uint64_t(q);
          sr.position = 7;
          Expected<SampledToken> cpu = sampleRow(&logits[size_t(r) * V], V, sr);
          ASSERT_TRUE(cpu) << cpu.status().message();
          ASSERT_EQ(tokens[size_t(r)], cpu->token);
          EXPECT_NEAR(read.logprob[size_t(r)], cpu->logprobs.logprob, 1e-5);
          for (size_t j = 0; j < cpu->logprobs.top.size(); ++j)
            EXPECT_EQ(read.ids[size_t(r * W) + j], cpu->logprobs.top[j].first);
        }
        // The kernel reads what is recorded: a log-sum-exp of 0 leaves each
        // token's l / temperature; a top-k key above every key keeps none.
        std::vector<folio_cuda::RowKeep> probe = keep;
        for (folio_cuda::RowKeep &k : probe)
          if (k.flags) {
            k.flags = folio_cuda::kRowKeepSet | folio_cuda::kRowKeepLse;
            k.lse = 0.0;
          }
        const Out shifted = logprobsOf(probe.data());
        for (folio_cuda::RowKeep &k : probe)
          k.kKey = ~0u;
        const Out none = logprobsOf(probe.data());
        for (int r = 0; r < rows; ++r) {
          if (!keep[size_t(r)].flags)
            continue;
          const int q = verified ? r / perSeq : r;
          const double l = double(logits[size_t(r) * V + size_t(tokens[r])]);
          EXPECT_EQ(shifted.logprob[size_t(r)],
                    float(l / double(settings.temperature[size_t(q)])))
              << "row " << r;
          EXPECT_EQ(none.logprob[size_t(r)],
                    -std::numeric_limits<float>::infinity())
              << "row " << r;
        }
      }
  EXPECT_GT(fromDraws, 40);
  EXPECT_GT(fromVerifier, 40);
}

/// Runs the verifier `kernel` (of `spec`) over `seqs` (one sequence per
/// block, the rows of sequence s from row s * (k + 1) of `logits`) with
/// their `settings`, drafts (-1 padded, [S, k]) and uniforms, and a draft
/// model's q rows where `probs` is set; `tokens` receives the rows'
/// tokens, `got` the outcomes as the engine reads them.
Status runVerifier(const FolioTestSample &kernel, const SampleSpec &spec,
                   const char *name, unsigned scheduleSeed,
                   const SettingArrays &settings,
                   const std::vector<float> &logits, int vocab, int k,
                   const std::vector<int> &drafts,
                   const std::vector<float> &uniforms,
                   const std::vector<core::SpecSequence> &seqs, float *probs,
                   const int *probRows, std::vector<int> &tokens,
                   std::vector<core::SpecOutcome> &got) {
  const int S = int(seqs.size());
  tokens.assign(size_t(S * (k + 1)), -2);
  std::vector<int> accepted(static_cast<size_t>(S), -2);
  folio_cuda::SampleArgs a = settings.args(logits.data(), vocab, tokens.data());
  a.numDraft = k;
  a.drafts = drafts.data();
  a.uniforms = uniforms.data();
  a.accepted = accepted.data();
  a.probs = probs;
  a.probRows = probRows;
  cuda_emu::LaunchConfig config = emulationConfig(sampleLaunch(spec, S), name);
  config.scheduleSeed = scheduleSeed;
  cuda_emu::launch(config, kernel.kernel, a);
  return core::verifiedOnDevice(accepted.data(), tokens.data(), k, vocab, seqs,
                                got);
}

// The verifier of one-hot drafts against the engine's host path on the
// same rows: greedy and sampled sequences (temperature, min-p, top-k,
// top-p) in one launch, every draft count from 0 to K, drafts that are
// the row's argmax (kept, or kept by chance), random and masked ones
// (rejected), tied and masked rows, and a faulty row inside a sequence's
// rows (it fails alone) or past them (not read).
TEST(CudaRowEmulation, VerifyOneHotMatchesTheHostPath) {
  std::mt19937 rng(29);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const float inf = std::numeric_limits<float>::infinity();
  using Config = DrawSettings;
  const std::vector<Config> configs = {
      {0.0f, 0, 1.0f, 0.0f}, {1.0f, 0, 1.0f, 0.0f},   {0.7f, 5, 1.0f, 0.0f},
      {1.3f, 0, 0.9f, 0.0f}, {0.8f, 50, 0.95f, 0.1f}, {1.0f, 0, 0.05f, 0.0f},
      {2.0f, 3, 1.0f, 0.02f}};
  const int K = 4, S = 23;
  int kept = 0, rejected = 0, bonus = 0, faulty = 0;
  for (const SampleSpec &spec : sampleVariants()) {
    if (spec.mode != SampleMode::Verify)
      continue;
    std::string name = kernelName(spec);
    SCOPED_TRACE(name);
    const FolioTestSample *kernel =
        findKernel(kFolioTestSample, canonicalKey(spec));
    ASSERT_NE(kernel, nullptr) << "no generated kernel for " << name;
    for (int vocab : {1, 37, 1000}) {
      SCOPED_TRACE(vocab);
      const size_t V = size_t(vocab), rowsPerSeq = size_t(K) + 1;
      std::vector<float> logits(size_t(S) * rowsPerSeq * V);
      std::vector<std::vector<TokenId>> drafts(static_cast<size_t>(S));
      std::vector<TokenId> none;
      std::vector<core::SpecSequence> seqs(static_cast<size_t>(S));
      std::vector<float> uniforms;
      std::vector<int> draftArray(size_t(S * K), -1);
      SettingArrays settings(static_cast<size_t>(S));
      for (int s = 0; s < S; ++s) {
        SamplingParams &p =
            settings.set(size_t(s), configs[size_t(s) % configs.size()]);
        const int k = s % (K + 1);
        for (size_t j = 0; j < rowsPerSeq; ++j) {
          float *row = &logits[(size_t(s) * rowsPerSeq + j) * V];
          for (size_t i = 0; i < V; ++i)
            row[i] = normal(rng);
          if (s % 3 == 1) // ties at the top, the top-k and top-p cuts
            for (size_t i = 0; i < V; ++i)
              row[i] = std::round(row[i]);
          if (s % 3 == 2) // masked tokens
            for (size_t i = 1; i < V; i += 3)
              row[i] = -inf;
          if (int(j) < k) {
            TokenId d = firstMaximum(row, V);
            if ((s + int(j)) % 4 == 1)
              d = TokenId(rng() % V); // likely rejected
            else if ((s + int(j)) % 4 == 3 && s % 3 == 2 && V > 1)
              d = 1; // masked: always rejected
            drafts[size_t(s)].push_back(d);
            draftArray[size_t(s * K) + j] = d;
          }
        }
        core::SpecSequence &seq = seqs[size_t(s)];
        seq.prompt = seq.output = &none;
        seq.drafts = &drafts[size_t(s)];
        seq.params = &p;
        seq.seed = 100 + uint64_t(s);
        seq.position = 9 + size_t(s);
        uniforms.resize(size_t(S) * rowsPerSeq);
        core::verifyUniforms(seq, K, uniforms.data() + size_t(s) * rowsPerSeq);
      }
      // A NaN in the rows of a sequence with 2 drafts fails it; one past a
      // sequence's rows (its padding) is not read.
      logits[(size_t(7) * rowsPerSeq + 1) * V] = std::nanf("");
      logits[(size_t(11) * rowsPerSeq + 4) * V] = std::nanf("");

      std::vector<float> host = logits;
      std::vector<core::SpecOutcome> want;
      ASSERT_TRUE(
          core::verifySpeculativeOnCpu(host.data(), K, vocab, seqs, want));

      std::vector<int> tokens;
      std::vector<core::SpecOutcome> got;
      ASSERT_TRUE(runVerifier(*kernel, spec, name.c_str(), rng(), settings,
                              logits, vocab, K, draftArray, uniforms, seqs,
                              nullptr, nullptr, tokens, got));
      for (int s = 0; s < S; ++s) {
        SCOPED_TRACE("sequence " + std::to_string(s));
        const core::SpecOutcome &w = want[size_t(s)], &g = got[size_t(s)];
        EXPECT_EQ(g.error.empty(), w.error.empty()) << w.error;
        EXPECT_EQ(g.tokens, w.tokens);
        EXPECT_EQ(g.numAccepted, w.numAccepted);
        for (size_t j = 0; j < rowsPerSeq; ++j) {
          int t = tokens[size_t(s) * rowsPerSeq + j];
          bool written = w.error.empty() && j <= w.numAccepted;
          if (!written)
            EXPECT_EQ(t, -1) << "column " << j;
        }
        if (!w.error.empty()) {
          ++faulty;
          continue;
        }
        kept += int(w.numAccepted);
        (w.numAccepted == drafts[size_t(s)].size() ? bonus : rejected) += 1;
      }
    }
  }
  // Every branch was taken: kept drafts, rejections, bonus tokens, and the
  // faulty sequence (once per variant and vocabulary).
  EXPECT_GT(kept, 40);
  EXPECT_GT(rejected, 30);
  EXPECT_GT(bonus, 30);
  EXPECT_EQ(faulty, 6);
}

// A draft model's distributions on the device: the draw writes each
// drafted row's q where probRows says (the distribution it drew from, as
// the host's draft proposer writes it), and the verifier reads each
// sequence's q rows from its own probRows entry (here in reverse order of
// the sequences, and one-hot sequences and greedy ones beside them) and
// decides as the engine's host path with those distributions.
TEST(CudaRowEmulation, DraftDistributionsMatchTheHostPath) {
  std::mt19937 rng(47);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  using Config = DrawSettings;
  const std::vector<Config> configs = {
      {1.0f, 0, 1.0f, 0.0f},   {0.7f, 5, 1.0f, 0.0f}, {1.3f, 0, 0.9f, 0.0f},
      {0.8f, 50, 0.95f, 0.1f}, {0.0f, 0, 1.0f, 0.0f}, {2.0f, 3, 1.0f, 0.02f}};
  const int K = 3, S = 24, perSeq = K + 1;
  int kept = 0, rejected = 0, bonus = 0, oneHot = 0, drawnRows = 0;
  for (int threads : {64, 256})
    for (int vocab : {1, 37, 1000}) {
      SCOPED_TRACE(std::to_string(threads) + " threads, vocab " +
                   std::to_string(vocab));
      const FolioTestSample *draw =
          findKernel(kFolioTestSample,
                     canonicalKey(SampleSpec{SampleMode::Draw, threads}));
      const FolioTestSample *verifier =
          findKernel(kFolioTestSample,
                     canonicalKey(SampleSpec{SampleMode::Verify, threads}));
      ASSERT_TRUE(draw && verifier);
      const size_t V = size_t(vocab);
      SettingArrays settings(static_cast<size_t>(S));
      for (int s = 0; s < S; ++s)
        settings.set(size_t(s), configs[size_t(s) % configs.size()]);
      const std::vector<SamplingParams> &params = settings.params;
      const std::vector<float> &temperature = settings.temperature;
      // The draft model's rows: draft j of sequence s is drawn from row
      // s * K + j, with the sequence's settings, into q row
      // (S - 1 - s) * K + j; every third sampled sequence is one-hot
      // (an n-gram proposer's) and writes none.
      auto isOneHot = [&](int s) {
        return s % 3 == 2 && temperature[size_t(s)] != 0.0f;
      };
      const int draftRows = S * K;
      std::vector<float> draftLogits(size_t(draftRows) * V);
      for (size_t i = 0; i < draftLogits.size(); ++i)
        draftLogits[i] = (i / V) % 2 ? std::round(normal(rng)) : normal(rng);
      std::vector<float> rowTemp(draftRows), rowTopP(draftRows),
          rowMinP(draftRows);
      std::vector<int> rowTopK(draftRows), qRowOf(draftRows, -1),
          drawn(draftRows, -2);
      std::vector<double> rowUniform(draftRows);
      for (int r = 0; r < draftRows; ++r) {
        const int s = r / K;
        rowTemp[size_t(r)] = temperature[size_t(s)];
        rowTopK[size_t(r)] = settings.topK[size_t(s)];
        rowTopP[size_t(r)] = settings.topP[size_t(s)];
        rowMinP[size_t(r)] = settings.minP[size_t(s)];
        rowUniform[size_t(r)] = philoxUniform(700 + uint64_t(r), 3);
        if (temperature[size_t(s)] != 0.0f && !isOneHot(s))
          qRowOf[size_t(r)] = (S - 1 - s) * K + r % K;
      }
      std::vector<float> q(size_t(draftRows) * V, -3.0f);
      folio_cuda::SampleArgs d{
          draftLogits.data(), vocab,          vocab,          drawn.data(),
          rowTemp.data(),     rowTopK.data(), rowTopP.data(), rowUniform.data(),
          rowMinP.data()};
      d.probs = q.data();
      d.probRows = qRowOf.data();
      cuda_emu::LaunchConfig dc = emulationConfig(
          sampleLaunch(SampleSpec{SampleMode::Draw, threads}, draftRows),
          "draw");
      dc.scheduleSeed = rng();
      cuda_emu::launch(dc, draw->kernel, d);

      // Each drawn row against the host: the token, and q as the draft
      // proposer computes it from the processed row.
      std::vector<std::vector<float>> hostQ(static_cast<size_t>(S));
      std::vector<std::vector<TokenId>> drafts(static_cast<size_t>(S));
      for (int r = 0; r < draftRows; ++r) {
        const int s = r / K;
        const float *row = &draftLogits[size_t(r) * V];
        Expected<TokenId> token =
            params[size_t(s)].isGreedy()
                ? Expected<TokenId>(firstMaximum(row, V))
                : drawWithUniform(row, V, params[size_t(s)],
                                  rowUniform[size_t(r)]);
        ASSERT_TRUE(token) << token.status().message();
        ASSERT_EQ(drawn[size_t(r)], *token) << "draft row " << r;
        drafts[size_t(s)].push_back(*token);
        if (qRowOf[size_t(r)] < 0)
          continue;
        SampleRow sr;
        sr.params = &params[size_t(s)];
        Expected<std::vector<double>> proc = processLogits(row, V, sr);
        ASSERT_TRUE(proc);
        double best = *std::max_element(proc->begin(), proc->end());
        double total = 0;
        for (double l : *proc)
          total += std::exp(l - best);
        const float *got = &q[size_t(qRowOf[size_t(r)]) * V];
        for (size_t i = 0; i < V; ++i) {
          float want = float(std::exp((*proc)[i] - best) / total);
          if (TokenId(i) == *token)
            want = std::max(want, std::numeric_limits<float>::min());
          ASSERT_NEAR(got[i], want, 1e-6f * want) << "row " << r << ", " << i;
          hostQ[size_t(s)].push_back(got[i]);
        }
        ++drawnRows;
      }
      // A sequence's drafts stop at random: 0 to K of them.
      for (int s = 0; s < S; ++s) {
        drafts[size_t(s)].resize(size_t(s % (K + 1)));
        hostQ[size_t(s)].resize(
            std::min(hostQ[size_t(s)].size(), drafts[size_t(s)].size() * V));
      }

      // The target's rows: near the draft's (so drafts are often kept),
      // or random.
      std::vector<float> logits(size_t(S * perSeq) * V);
      std::vector<TokenId> none;
      std::vector<core::SpecSequence> seqs(static_cast<size_t>(S));
      std::vector<float> uniforms(size_t(S * perSeq));
      std::vector<int> draftArray(size_t(S * K), -1), probRows(S, -1);
      for (int s = 0; s < S; ++s) {
        for (int j = 0; j < perSeq; ++j) {
          float *row = &logits[size_t(s * perSeq + j) * V];
          const float *near =
              &draftLogits[size_t(s * K + std::min(j, K - 1)) * V];
          for (size_t i = 0; i < V; ++i)
            row[i] = s % 4 == 3 ? normal(rng) : near[i] + 0.3f * normal(rng);
        }
        std::copy(drafts[size_t(s)].begin(), drafts[size_t(s)].end(),
                  draftArray.begin() + s * K);
        core::SpecSequence &seq = seqs[size_t(s)];
        seq.prompt = seq.output = &none;
        seq.drafts = &drafts[size_t(s)];
        seq.params = &params[size_t(s)];
        if (!hostQ[size_t(s)].empty()) {
          seq.draftProbs = &hostQ[size_t(s)];
          probRows[size_t(s)] = (S - 1 - s) * K;
        }
        oneHot += isOneHot(s) && !drafts[size_t(s)].empty();
        seq.seed = 300 + uint64_t(s);
        seq.position = 5 + size_t(s);
        core::verifyUniforms(seq, K, uniforms.data() + size_t(s * perSeq));
      }
      std::vector<float> host = logits;
      std::vector<core::SpecOutcome> want;
      ASSERT_TRUE(
          core::verifySpeculativeOnCpu(host.data(), K, vocab, seqs, want));

      std::vector<int> tokens;
      std::vector<core::SpecOutcome> got;
      ASSERT_TRUE(
          runVerifier(*verifier, SampleSpec{SampleMode::Verify, threads},
                      "verify", rng(), settings, logits, vocab, K, draftArray,
                      uniforms, seqs, q.data(), probRows.data(), tokens, got));
      for (int s = 0; s < S; ++s) {
        SCOPED_TRACE("sequence " + std::to_string(s));
        const core::SpecOutcome &w = want[size_t(s)], &g = got[size_t(s)];
        ASSERT_TRUE(w.error.empty()) << w.error;
        EXPECT_EQ(g.tokens, w.tokens);
        EXPECT_EQ(g.numAccepted, w.numAccepted);
        if (temperature[size_t(s)] == 0.0f || !seqs[size_t(s)].draftProbs)
          continue;
        kept += int(w.numAccepted);
        (w.numAccepted == drafts[size_t(s)].size() ? bonus : rejected) += 1;
      }
    }
  // Every branch was taken with the draft's q: kept drafts, rejections
  // (drawn from the residual), bonus tokens; one-hot sequences beside.
  EXPECT_GT(drawnRows, 100);
  EXPECT_GT(kept, 30);
  EXPECT_GT(rejected, 10);
  EXPECT_GT(bonus, 10);
  EXPECT_GT(oneHot, 5);
}

} // namespace
} // namespace folio::cuda::test
