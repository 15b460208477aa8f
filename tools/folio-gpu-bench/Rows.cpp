//===- Rows.cpp - Row programs, rotary, gathers and sampling on a GPU -----===//

#include "tools/folio-gpu-bench/GpuBench.h"
#include "tools/folio-gpu-bench/Support.h"

#include "codegen/CPU/Gather.h"
#include "codegen/CPU/Rotary.h"
#include "codegen/CPU/WeightPack.h"
#include "codegen/CUDA/Templates/KernelArgs.cuh"
#include "runtime/Core/SpeculativeStep.h"
#include "runtime/Sampler/LogitsProcessors.h"
#include "runtime/Sampler/Philox.h"
#include "runtime/Sampler/Sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>

namespace folio::gpubench {

using device::CudaDevice;
using device::DeviceBuffer;
using namespace detail;

namespace {

double unary(const std::string &fn, double x) {
  if (fn == "neg")
    return -x;
  if (fn == "abs")
    return std::fabs(x);
  if (fn == "exp")
    return std::exp(x);
  if (fn == "tanh")
    return std::tanh(x);
  if (fn == "erf")
    return std::erf(x);
  if (fn == "sqrt")
    return std::sqrt(x);
  if (fn == "reciprocal")
    return 1.0 / x;
  if (fn == "sigmoid")
    return 1.0 / (1.0 + std::exp(-x));
  if (fn == "relu")
    return x > 0 ? x : 0.0;
  if (fn == "silu")
    return x / (1.0 + std::exp(-x));
  if (fn == "gelu_erf")
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  // gelu_tanh: GPT-2's gelu_new.
  return 0.5 * x *
         (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

double binary(const std::string &fn, double a, double b) {
  if (fn == "add")
    return a + b;
  if (fn == "sub")
    return a - b;
  if (fn == "mul")
    return a * b;
  if (fn == "div")
    return a / b;
  if (fn == "pow")
    return std::pow(a, b);
  if (fn == "max")
    return std::max(a, b);
  return std::min(a, b);
}

} // namespace

std::vector<std::vector<double>>
evaluateRowProgram(const cuda::RowKernelSpec &spec,
                   const std::vector<std::vector<float>> &inputs,
                   int64_t rows) {
  const int64_t dim = spec.dim;
  std::vector<std::vector<double>> out(size_t(spec.numOutputs),
                                       std::vector<double>(size_t(rows * dim)));
  for (int64_t r = 0; r < rows; ++r) {
    // One row of every op's values.
    std::vector<std::vector<double>> v(spec.ops.size(),
                                       std::vector<double>(size_t(dim)));
    for (size_t i = 0; i < spec.ops.size(); ++i) {
      const cuda::RowOp &op = spec.ops[i];
      std::vector<double> &y = v[i];
      switch (op.kind) {
      case cuda::RowOpKind::Input: {
        const std::vector<float> &in = inputs[size_t(op.index)];
        for (int64_t d = 0; d < dim; ++d)
          y[size_t(d)] =
              spec.inputs[size_t(op.index)] == cuda::RowInputKind::Row
                  ? in[size_t(r * dim + d)]
              : spec.inputs[size_t(op.index)] == cuda::RowInputKind::Vector
                  ? in[size_t(d)]
                  : in[0];
        break;
      }
      case cuda::RowOpKind::Constant:
        std::fill(y.begin(), y.end(), double(float(op.value)));
        break;
      // Each op's result is rounded to f32, as the CPU executor stores
      // every step's: programs that round on purpose (a QDQ's
      // x + 1.5 * 2^23 - 1.5 * 2^23) then mean what they do in f32.
      case cuda::RowOpKind::Unary:
        for (int64_t d = 0; d < dim; ++d)
          y[size_t(d)] = float(unary(op.fn, v[size_t(op.a)][size_t(d)]));
        break;
      case cuda::RowOpKind::Binary:
        for (int64_t d = 0; d < dim; ++d)
          y[size_t(d)] = float(binary(op.fn, v[size_t(op.a)][size_t(d)],
                                      v[size_t(op.b)][size_t(d)]));
        break;
      case cuda::RowOpKind::RmsNorm: {
        const std::vector<double> &a = v[size_t(op.a)];
        double ss = 0;
        for (double x : a)
          ss += x * x;
        double inv =
            1.0 / std::sqrt(ss / double(dim) + double(float(op.value)));
        for (int64_t d = 0; d < dim; ++d)
          y[size_t(d)] =
              a[size_t(d)] * inv *
              (op.weightOffset + (op.b >= 0 ? v[size_t(op.b)][size_t(d)]
                                            : 1.0 - op.weightOffset));
        break;
      }
      case cuda::RowOpKind::LayerNorm: {
        const std::vector<double> &a = v[size_t(op.a)];
        double mean = 0, var = 0;
        for (double x : a)
          mean += x;
        mean /= double(dim);
        for (double x : a)
          var += (x - mean) * (x - mean);
        var /= double(dim);
        double inv = 1.0 / std::sqrt(var + double(float(op.value)));
        for (int64_t d = 0; d < dim; ++d)
          y[size_t(d)] = (a[size_t(d)] - mean) * inv *
                             (op.b >= 0 ? v[size_t(op.b)][size_t(d)] : 1.0) +
                         (op.c >= 0 ? v[size_t(op.c)][size_t(d)] : 0.0);
        break;
      }
      case cuda::RowOpKind::Output:
        std::copy(v[size_t(op.a)].begin(), v[size_t(op.a)].end(),
                  out[size_t(op.index)].begin() + r * dim);
        break;
      }
    }
  }
  return out;
}

Expected<RowResult> measureRowKernel(const CudaDevice &dev,
                                     const LoadedKernels &kernels,
                                     const RowCase &c, int runs,
                                     uint32_t seed) {
  const cuda::RowKernelSpec &s = c.spec;
  Expected<const device::CudaKernel *> kernel =
      find(kernels, cuda::kernelName(s));
  if (!kernel)
    return kernel.status();
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t rows = c.rows, dim = s.dim;
  std::vector<std::vector<float>> inputs;
  std::vector<DeviceBuffer> dIn;
  folio_cuda::RowArgs a{};
  double bytes = 0;
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    cuda::RowInputKind kind = s.inputs[i];
    int64_t n = kind == cuda::RowInputKind::Row      ? rows * dim
                : kind == cuda::RowInputKind::Vector ? dim
                                                     : 1;
    std::vector<float> x(static_cast<size_t>(n));
    for (float &e : x)
      // Scalars and vectors positive: they scale (norm weights, softcaps).
      e = kind == cuda::RowInputKind::Row ? normal(rng)
                                          : 0.5f + std::fabs(normal(rng));
    Expected<DeviceBuffer> b = upload(dev, x, "row input " + std::to_string(i));
    if (!b)
      return b.status();
    a.in[i] = b->as<const float>();
    a.inStride[i] = dim;
    bytes += double(n) * 4;
    inputs.push_back(std::move(x));
    dIn.push_back(std::move(*b));
  }
  std::vector<DeviceBuffer> dOut;
  for (int o = 0; o < s.numOutputs; ++o) {
    Expected<DeviceBuffer> b =
        dev.allocate(size_t(rows * dim) * 4, "row output " + std::to_string(o));
    if (!b)
      return b.status();
    a.out[o] = b->as<float>();
    a.outStride[o] = dim;
    bytes += double(rows * dim) * 4;
    dOut.push_back(std::move(*b));
  }
  device::CudaLaunch l = toLaunch(cuda::rowKernelLaunch(s, rows));
  auto run = [&] { return dev.launch(**kernel, l, &a); };
  if (Status st = run(); !st)
    return st;
  if (Status st = dev.synchronize(); !st)
    return st;
  std::vector<std::vector<double>> want = evaluateRowProgram(s, inputs, rows);
  RowResult out;
  for (int o = 0; o < s.numOutputs; ++o) {
    std::vector<float> got(size_t(rows * dim));
    if (Status st =
            dev.copyToHost(got.data(), dOut[size_t(o)], 0, got.size() * 4);
        !st)
      return st;
    for (size_t i = 0; i < got.size(); ++i) {
      double w = want[size_t(o)][i];
      if (std::isnan(w) && std::isnan(got[i]))
        continue;
      out.maxRelDiff = std::max(out.maxRelDiff, std::fabs(double(got[i]) - w) /
                                                    (std::fabs(w) + 1));
    }
  }
  // f32 against double: the norms' sums over dim, the libm functions.
  if (!(out.maxRelDiff < 1e-4))
    return Status::internal(cuda::kernelName(s) +
                            " differs from its program evaluated in double "
                            "by " +
                            std::to_string(out.maxRelDiff) +
                            " (relative to |x| + 1), over 1e-4");
  Expected<Timing> t = timeRuns(dev, runs, bytes, run);
  if (!t)
    return t.status();
  out.timing = *t;
  return out;
}

Expected<Timing> measureRotary(const CudaDevice &dev,
                               const LoadedKernels &kernels,
                               const RotaryCase &c, int runs, uint32_t seed) {
  const cuda::RotarySpec &s = c.spec;
  Expected<const device::CudaKernel *> kernel =
      find(kernels, cuda::kernelName(s));
  if (!kernel)
    return kernel.status();
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  cpu::RotaryParams p;
  p.headDim = s.headDim;
  p.rotaryDim = s.rotaryDim;
  p.style = s.interleaved ? cpu::RotaryStyle::Interleaved
                          : cpu::RotaryStyle::HalfSplit;
  const int64_t positionsInTable = 4096, T = c.tokens, H = s.numHeads,
                D = s.headDim;
  std::vector<float> table = cpu::rotaryCosSinTable(p, positionsInTable);
  std::vector<int64_t> positions(static_cast<size_t>(T));
  std::uniform_int_distribution<int64_t> pick(0, positionsInTable - 1);
  for (int64_t &pos : positions)
    pos = pick(rng);
  std::vector<float> x(size_t(T * H * D)), want(x.size());
  for (float &e : x)
    e = normal(rng);
  if (cpu::Status st =
          cpu::applyRotaryRows(x.data(), want.data(), T, H, 1, positions.data(),
                               table.data(), positionsInTable, p);
      !st.ok())
    return Status::internal("the CPU rotary: " + st.message());
  Expected<DeviceBuffer> dx = upload(dev, x, "rows"),
                         dpos = upload(dev, positions, "positions"),
                         dtable = upload(dev, table, "the cos / sin table");
  for (Expected<DeviceBuffer> *b : {&dx, &dpos, &dtable})
    if (!*b)
      return b->status();
  folio_cuda::RotaryArgs a{
      dx->as<const float>(),       dx->as<float>(),          H * D, H * D,
      dpos->as<const long long>(), dtable->as<const float>()};
  device::CudaLaunch l = toLaunch(cuda::rotaryLaunch(s, T));
  if (Status st = dev.launch(**kernel, l, &a); !st)
    return st;
  std::vector<float> got(x.size());
  if (Status st = dev.copyToHost(got.data(), *dx, 0, got.size() * 4); !st)
    return st;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= 1e-6f + 1e-6f * std::fabs(want[i])))
      return Status::internal(cuda::kernelName(s) + " element " +
                              std::to_string(i) + ": " +
                              std::to_string(got[i]) + ", the CPU rotary " +
                              std::to_string(want[i]));
  // In place again and again: the values change, the traffic does not.
  double bytes = double(T) * (2.0 * double(H * D) * 4 + 8 + s.rotaryDim * 4.0);
  return timeRuns(dev, runs, bytes,
                  [&] { return dev.launch(**kernel, l, &a); });
}

Expected<Timing> measureGather(const CudaDevice &dev,
                               const LoadedKernels &kernels,
                               const GatherCase &c, int runs, uint32_t seed) {
  const cuda::GatherSpec &s = c.spec;
  Expected<const device::CudaKernel *> kernel =
      find(kernels, cuda::kernelName(s));
  if (!kernel)
    return kernel.status();
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t n = c.rows, rowsInTable = c.tableRows, dim = s.dim;
  const bool packed = !cpu::isPlainFloat(s.tableType);
  // 16/32-bit rows, or a tied lm_head's packing of random rows with one
  // column far out of them (int8 keeps it as an outlier column).
  std::vector<uint8_t> table;
  cpu::WeightPacking packing;
  if (packed) {
    std::vector<float> w(size_t(rowsInTable * dim));
    for (float &x : w)
      x = normal(rng);
    for (int64_t r = 0; r < rowsInTable; ++r)
      w[size_t(r * dim + dim / 3)] *= 300.0f;
    cpu::Status st = cpu::packWeightRows(w.data(), rowsInTable, dim,
                                         s.tableType, packing, s.groupSize);
    if (!st.ok())
      return Status::internal("packing the table: " + st.message());
    table = packing.data;
  } else {
    const size_t elemBytes = cpu::dtypeBits(s.tableType) / 8;
    table.resize(size_t(rowsInTable * dim) * elemBytes);
    for (size_t i = 0; i < size_t(rowsInTable * dim); ++i) {
      float f = normal(rng);
      if (s.tableType == cpu::DType::F32)
        std::memcpy(&table[i * 4], &f, 4);
      else {
        uint16_t h = s.tableType == cpu::DType::BF16 ? cpu::floatToBf16(f)
                                                     : cpu::floatToF16(f);
        std::memcpy(&table[i * 2], &h, 2);
      }
    }
  }
  std::vector<int32_t> ids(static_cast<size_t>(n));
  std::uniform_int_distribution<int32_t> pick(0, int32_t(rowsInTable - 1));
  for (int32_t &id : ids)
    id = pick(rng);
  std::vector<long long> ids64(ids.begin(), ids.end());
  const float scale = s.embedding ? 1.5f : 1.0f;
  std::vector<float> want(size_t(n * dim));
  cpu::Status st =
      packed ? cpu::embeddingRows(ids.data(), n, packing.view(), want.data(),
                                  scale)
      : s.embedding
          ? cpu::embedding(ids.data(), n, table.data(), s.tableType,
                           rowsInTable, dim, want.data(), scale)
          : cpu::gatherRows(reinterpret_cast<const float *>(table.data()),
                            rowsInTable, dim, ids.data(), n, want.data());
  if (!st.ok())
    return Status::internal("the CPU gather: " + st.message());
  int zero = 0;
  // An empty range uploads one placeholder byte (a kernel never reads it).
  auto orByte = [](const auto &v) {
    std::vector<uint8_t> bytes(std::max<size_t>(1, v.size() * sizeof(v[0])));
    if (!v.empty())
      std::memcpy(bytes.data(), v.data(), v.size() * sizeof(v[0]));
    return bytes;
  };
  Expected<DeviceBuffer>
      dt = upload(dev, table, "the table"),
      d64 = upload(dev, ids64, "ids"), d32 = upload(dev, ids, "indices"),
      dout = dev.allocate(want.size() * 4, "rows"),
      derr = dev.upload(&zero, sizeof zero, "the error flag"),
      dscales = upload(dev, orByte(packing.scales), "the row scales"),
      dparams = upload(dev, orByte(packing.groupParams), "the group params"),
      dcols = upload(dev, orByte(packing.outlierCols), "the outlier columns"),
      doutliers = upload(dev, orByte(packing.outliers), "the outlier weights");
  for (Expected<DeviceBuffer> *b :
       {&dt, &d64, &d32, &dout, &derr, &dscales, &dparams, &dcols, &doutliers})
    if (!*b)
      return b->status();
  folio_cuda::GatherArgs a{
      dt->as<const void>(), rowsInTable, d64->as<const long long>(),
      d32->as<const int>(), scale,       dout->as<float>(),
      derr->as<int>()};
  if (packed) {
    a.scales = dscales->as<const float>();
    a.groupParams = dparams->as<const unsigned short>();
    a.outlierCols = dcols->as<const int>();
    a.outliers = doutliers->as<const unsigned short>();
    a.numOutliers = int(packing.outlierCols.size());
  }
  device::CudaLaunch l = toLaunch(cuda::gatherLaunch(s, n));
  auto run = [&] { return dev.launch(**kernel, l, &a); };
  if (Status e = run(); !e)
    return e;
  std::vector<float> got(want.size());
  int error = -1;
  if (Status e = dev.copyToHost(got.data(), *dout, 0, got.size() * 4); !e)
    return e;
  if (Status e = dev.copyToHost(&error, *derr, 0, sizeof error); !e)
    return e;
  if (error != 0 || std::memcmp(got.data(), want.data(), got.size() * 4) != 0)
    return Status::internal(cuda::kernelName(s) +
                            " does not gather what the CPU gathers");
  // A row's share of the table (its codes and params), written as f32.
  double rowBytes =
      packed
          ? double(cpu::weightViewBytes(packing.view())) / double(rowsInTable)
          : double(dim) * double(cpu::dtypeBits(s.tableType) / 8);
  double bytes = double(n) * (rowBytes + double(dim) * 4 + 8);
  return timeRuns(dev, runs, bytes, run);
}

namespace {

/// The draw settings the sampling kernels read, one entry per row (or per
/// verified sequence), kept equal to the SamplingParams the host checks
/// with.
struct DrawSettings {
  std::vector<float> temperature, topP, minP;
  std::vector<int> topK;

  explicit DrawSettings(size_t n) : temperature(n), topP(n), minP(n), topK(n) {}
  void set(size_t i, SamplingParams &p, float t, int k, float tp, float mp) {
    p.temperature = temperature[i] = t;
    p.topK = topK[i] = k;
    p.topP = topP[i] = tp;
    p.minP = minP[i] = mp;
  }
};

/// DrawSettings on the device.
struct DeviceDrawSettings {
  DeviceBuffer temperature, topK, topP, minP;

  void fill(folio_cuda::SampleArgs &a) const {
    a.temperature = temperature.as<const float>();
    a.topK = topK.as<const int>();
    a.topP = topP.as<const float>();
    a.minP = minP.as<const float>();
  }
};

Expected<DeviceDrawSettings> uploadSettings(const CudaDevice &dev,
                                            const DrawSettings &s) {
  Expected<DeviceBuffer> t = upload(dev, s.temperature, "temperatures"),
                         k = upload(dev, s.topK, "top_k"),
                         p = upload(dev, s.topP, "top_p"),
                         m = upload(dev, s.minP, "min_p");
  for (Expected<DeviceBuffer> *b : {&t, &k, &p, &m})
    if (!*b)
      return b->status();
  return DeviceDrawSettings{std::move(*t), std::move(*k), std::move(*p),
                            std::move(*m)};
}

/// The penalties kernel over random rows and histories (repeated tokens;
/// repetition, frequency and presence penalties alone and together; a row
/// without), each row bit for bit runtime/Sampler's applyPenalties rounded
/// to float. Bytes: the entries and the logits they touch.
Expected<Timing> measurePenalties(const CudaDevice &dev,
                                  const LoadedKernels &kernels,
                                  const SampleCase &c, int runs,
                                  uint32_t seed) {
  const cuda::SampleSpec &s = c.spec;
  Expected<const device::CudaKernel *> kernel =
      find(kernels, cuda::kernelName(s));
  if (!kernel)
    return kernel.status();
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const int rows = c.rows, vocab = c.vocab;
  const size_t R = static_cast<size_t>(rows), V = size_t(vocab);
  const float reps[] = {1.3f, 1.0f, 0.8f, 1.0f},
              freqs[] = {0.5f, 0.4f, 0.0f, 0.0f},
              presences[] = {0.3f, 0.0f, -0.7f, 0.0f};
  std::vector<float> logits(R * V), want(R * V), repetition(R), frequency(R),
      presence(R);
  std::vector<int> start(R + 1, 0), entryTokens, entryCounts;
  for (int r = 0; r < rows; ++r) {
    float *row = &logits[size_t(r) * V];
    for (size_t i = 0; i < V; ++i)
      row[i] = normal(rng);
    SamplingParams p;
    p.repetitionPenalty = repetition[size_t(r)] = reps[r % 4];
    p.frequencyPenalty = frequency[size_t(r)] = freqs[r % 4];
    p.presencePenalty = presence[size_t(r)] = presences[r % 4];
    std::vector<TokenId> prompt, output;
    for (int i = 0; i < 9; ++i)
      prompt.push_back(TokenId(rng() % V));
    for (int i = 0; i < 12; ++i) // repeats, and tokens of the prompt
      output.push_back(i % 3 == 0 ? prompt[size_t(i) % prompt.size()]
                                  : TokenId(rng() % std::min<size_t>(V, 7)));
    std::vector<double> ref(row, row + V);
    applyPenalties(ref, p, prompt, output);
    for (size_t i = 0; i < V; ++i)
      want[size_t(r) * V + i] = float(ref[i]);
    std::map<TokenId, int> count;
    if (hasPenalties(p)) {
      for (TokenId t : output)
        ++count[t];
      if (p.repetitionPenalty != 1.0f)
        for (TokenId t : prompt)
          count.emplace(t, 0);
    }
    for (const auto &[t, n] : count) {
      entryTokens.push_back(t);
      entryCounts.push_back(n);
    }
    start[size_t(r) + 1] = int(entryTokens.size());
  }
  entryTokens.push_back(0); // no zero-byte uploads
  entryCounts.push_back(0);
  Expected<DeviceBuffer> dl = upload(dev, logits, "logits"),
                         dr = upload(dev, repetition, "repetition"),
                         df = upload(dev, frequency, "frequency"),
                         dp = upload(dev, presence, "presence"),
                         ds = upload(dev, start, "starts"),
                         dt = upload(dev, entryTokens, "tokens"),
                         dc = upload(dev, entryCounts, "counts");
  for (Expected<DeviceBuffer> *b : {&dl, &dr, &df, &dp, &ds, &dt, &dc})
    if (!*b)
      return b->status();
  folio_cuda::SampleArgs a{};
  a.penalized = dl->as<float>();
  a.stride = vocab;
  a.vocab = vocab;
  a.repetition = dr->as<const float>();
  a.frequency = df->as<const float>();
  a.presence = dp->as<const float>();
  a.penaltyStart = ds->as<const int>();
  a.penaltyTokens = dt->as<const int>();
  a.penaltyCounts = dc->as<const int>();
  device::CudaLaunch l = toLaunch(cuda::sampleLaunch(s, rows));
  auto run = [&] { return dev.launch(**kernel, l, &a); };
  if (Status e = run(); !e)
    return e;
  std::vector<float> got(logits.size());
  if (Status e = dev.copyToHost(got.data(), *dl, 0, got.size() * 4); !e)
    return e;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], 4) != 0)
      return Status::internal(
          cuda::kernelName(s) + " row " + std::to_string(i / V) + ", token " +
          std::to_string(i % V) + ": " + std::to_string(got[i]) +
          ", applyPenalties' " + std::to_string(want[i]));
  // Timed runs penalize the rows again (the same work on other values).
  const double entries = double(start[R]);
  return timeRuns(dev, runs, entries * 8 + entries * 8 + double(R) * 16, run);
}

/// The logprobs kernel over random rows after a draw (plain, top-k, top-p,
/// min-p and greedy settings; every count of top tokens from none to the
/// most, and rows that ask for no logprobs), each row's logprobs
/// runtime/Sampler's for the token it drew: the same top tokens in the same
/// order, the values within the rounding of the device's sums. With
/// `afterDraw` the draw kernel runs first, on the device, and the logprobs
/// kernel reads its tokens and keep sets. Bytes: the logits read.
Expected<Timing> measureLogprobs(const CudaDevice &dev,
                                 const LoadedKernels &kernels,
                                 const SampleCase &c, int runs, uint32_t seed) {
  const cuda::SampleSpec &s = c.spec;
  Expected<const device::CudaKernel *> kernel =
      find(kernels, cuda::kernelName(s));
  if (!kernel)
    return kernel.status();
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const int rows = c.rows, vocab = c.vocab;
  const float temps[] = {1.0f, 0.7f, 1.3f, 0.0f, 0.9f, 0.8f, 1.1f};
  const int topKs[] = {0, 5, 0, 0, 40, 0, 3};
  const float topPs[] = {1.0f, 1.0f, 0.9f, 1.0f, 0.95f, 1.0f, 0.5f};
  const float minPs[] = {0.0f, 0.0f, 0.0f, 0.0f, 0.05f, 0.0f, 0.0f};
  const int tops[] = {5, 0, folio_cuda::kMaxTopLogprobs, 1, 3, -1, 7};
  const size_t R = static_cast<size_t>(rows), W = folio_cuda::kMaxTopLogprobs;
  std::vector<float> logits(R * size_t(vocab)), logprob(R), topLogprobs(R * W);
  std::vector<int> numTop(R), tokens(R), topTokens(R * W);
  std::vector<TokenLogprobs> want(R);
  DrawSettings settings(R);
  for (int r = 0; r < rows; ++r) {
    float *row = &logits[size_t(r) * size_t(vocab)];
    for (int i = 0; i < vocab; ++i)
      row[i] = r % 3 == 1 ? std::round(normal(rng)) : normal(rng);
    SamplingParams p;
    settings.set(size_t(r), p, temps[r % 7], topKs[r % 7], topPs[r % 7],
                 minPs[r % 7]);
    numTop[size_t(r)] = tops[r % 7];
    if (tops[r % 7] >= 0)
      p.logprobs = tops[r % 7];
    SampleRow sr;
    sr.params = &p;
    sr.seed = seed + uint64_t(r);
    sr.position = 7;
    Expected<SampledToken> t = sampleRow(row, size_t(vocab), sr);
    if (!t)
      return Status::internal("the CPU sampler: " + t.status().message());
    tokens[size_t(r)] = t->token;
    want[size_t(r)] = t->logprobs;
  }
  Expected<DeviceDrawSettings> ds = uploadSettings(dev, settings);
  if (!ds)
    return ds.status();
  std::vector<double> uniform(R);
  for (size_t r = 0; r < R; ++r)
    uniform[r] = philoxUniform(seed + uint64_t(r), 7);
  Expected<DeviceBuffer> dl = upload(dev, logits, "logits"),
                         dn = upload(dev, numTop, "top counts"),
                         dtok = upload(dev, tokens, "tokens"),
                         dlp = upload(dev, logprob, "logprobs"),
                         dti = upload(dev, topTokens, "top tokens"),
                         dtv = upload(dev, topLogprobs, "top logprobs"),
                         du = upload(dev, uniform, "uniforms"),
                         dk = dev.allocate(R * sizeof(folio_cuda::RowKeep),
                                           "keep sets");
  for (Expected<DeviceBuffer> *b :
       {&dl, &dn, &dtok, &dlp, &dti, &dtv, &du, &dk})
    if (!*b)
      return b->status();
  folio_cuda::SampleArgs a{};
  a.logits = dl->as<const float>();
  a.stride = vocab;
  a.vocab = vocab;
  a.tokens = dtok->as<int>();
  ds->fill(a);
  if (c.afterDraw) {
    // The draw overwrites the host's tokens with its own (checked below
    // through the logprobs, which are the CPU sampler's for its tokens).
    cuda::SampleSpec drawSpec{cuda::SampleMode::Draw, s.threads};
    Expected<const device::CudaKernel *> draw =
        find(kernels, cuda::kernelName(drawSpec));
    if (!draw)
      return draw.status();
    folio_cuda::SampleArgs d = a;
    d.uniform = du->as<const double>();
    d.keep = dk->as<folio_cuda::RowKeep>();
    if (Status e = dev.launch(**draw,
                              toLaunch(cuda::sampleLaunch(drawSpec, rows)), &d);
        !e)
      return e;
    std::vector<int> drawn(R);
    if (Status e = dev.copyToHost(drawn.data(), *dtok, 0, R * 4); !e)
      return e;
    if (drawn != tokens)
      return Status::internal(cuda::kernelName(drawSpec) +
                              " drew other tokens than the CPU sampler");
    a.keep = d.keep;
  }
  a.numTop = dn->as<const int>();
  a.logprob = dlp->as<float>();
  a.topTokens = dti->as<int>();
  a.topLogprobs = dtv->as<float>();
  device::CudaLaunch l = toLaunch(cuda::sampleLaunch(s, rows));
  auto run = [&] { return dev.launch(**kernel, l, &a); };
  if (Status e = run(); !e)
    return e;
  if (Status e = dev.copyToHost(logprob.data(), *dlp, 0, R * 4); !e)
    return e;
  if (Status e = dev.copyToHost(topTokens.data(), *dti, 0, R * W * 4); !e)
    return e;
  if (Status e = dev.copyToHost(topLogprobs.data(), *dtv, 0, R * W * 4); !e)
    return e;
  auto close = [](float got, float ref) {
    return got == ref ||
           std::fabs(got - ref) <= 1e-5f * std::max(1.0f, std::fabs(ref));
  };
  for (int r = 0; r < rows; ++r) {
    if (numTop[size_t(r)] < 0)
      continue;
    const TokenLogprobs &w = want[size_t(r)];
    std::string where = cuda::kernelName(s) + " row " + std::to_string(r);
    if (!close(logprob[size_t(r)], w.logprob))
      return Status::internal(
          where + ": logprob " + std::to_string(logprob[size_t(r)]) +
          ", the CPU sampler's " + std::to_string(w.logprob));
    for (size_t j = 0; j < w.top.size(); ++j) {
      int id = topTokens[size_t(r) * W + j];
      float v = topLogprobs[size_t(r) * W + j];
      if (id != w.top[j].first || !close(v, w.top[j].second))
        return Status::internal(where + ", top " + std::to_string(j) +
                                ": token " + std::to_string(id) + " (" +
                                std::to_string(v) + "), the CPU sampler's " +
                                std::to_string(w.top[j].first) + " (" +
                                std::to_string(w.top[j].second) + ")");
    }
  }
  return timeRuns(dev, runs, double(rows) * double(vocab) * 4, run);
}

} // namespace

Expected<Timing> measureSample(const CudaDevice &dev,
                               const LoadedKernels &kernels,
                               const SampleCase &c, int runs, uint32_t seed) {
  const cuda::SampleSpec &s = c.spec;
  if (s.mode == cuda::SampleMode::Verify)
    return Status::invalidArgument(cuda::kernelName(s) +
                                   " verifies drafts: measureVerify times it");
  if (s.mode == cuda::SampleMode::Penalize)
    return measurePenalties(dev, kernels, c, runs, seed);
  if (s.mode == cuda::SampleMode::Logprobs)
    return measureLogprobs(dev, kernels, c, runs, seed);
  Expected<const device::CudaKernel *> kernel =
      find(kernels, cuda::kernelName(s));
  if (!kernel)
    return kernel.status();
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const int rows = c.rows, vocab = c.vocab;
  // Settings cycle through plain, top-k, top-p, both, min-p with both,
  // and a greedy row (temperature 0), as a mixed batch brings them.
  const float temps[] = {1.0f, 0.7f, 1.3f, 0.5f, 0.9f, 0.0f};
  const int topKs[] = {0, 5, 0, 50, 40, 0};
  const float topPs[] = {1.0f, 1.0f, 0.9f, 0.8f, 0.95f, 1.0f};
  const float minPs[] = {0.0f, 0.0f, 0.0f, 0.0f, 0.05f, 0.0f};
  const size_t R = static_cast<size_t>(rows);
  std::vector<float> logits(R * size_t(vocab));
  std::vector<int> tokens(R, -2);
  std::vector<double> uniform(R);
  std::vector<SamplingParams> params(static_cast<size_t>(rows));
  DrawSettings settings(R);
  for (int r = 0; r < rows; ++r) {
    for (int i = 0; i < vocab; ++i)
      logits[size_t(r) * size_t(vocab) + size_t(i)] = normal(rng);
    SamplingParams &p = params[size_t(r)];
    if (s.mode != cuda::SampleMode::Greedy) {
      settings.set(size_t(r), p, temps[r % 6], topKs[r % 6], topPs[r % 6],
                   minPs[r % 6]);
      uniform[size_t(r)] = philoxUniform(seed + uint64_t(r), 7);
    } else {
      p.temperature = 0.0f;
    }
  }
  Expected<DeviceDrawSettings> ds = uploadSettings(dev, settings);
  if (!ds)
    return ds.status();
  Expected<DeviceBuffer> dl = upload(dev, logits, "logits"),
                         du = upload(dev, uniform, "uniforms"),
                         dtok = dev.allocate(tokens.size() * 4, "tokens");
  for (Expected<DeviceBuffer> *b : {&dl, &du, &dtok})
    if (!*b)
      return b->status();
  folio_cuda::SampleArgs a{};
  a.logits = dl->as<const float>();
  a.stride = vocab;
  a.vocab = vocab;
  a.tokens = dtok->as<int>();
  a.uniform = du->as<const double>();
  ds->fill(a);
  device::CudaLaunch l = toLaunch(cuda::sampleLaunch(s, rows));
  auto run = [&] { return dev.launch(**kernel, l, &a); };
  if (Status e = run(); !e)
    return e;
  if (Status e = dev.copyToHost(tokens.data(), *dtok, 0, tokens.size() * 4); !e)
    return e;
  for (int r = 0; r < rows; ++r) {
    SampleRow sr;
    sr.params = &params[size_t(r)];
    sr.seed = seed + uint64_t(r);
    sr.position = 7;
    Expected<SampledToken> want =
        sampleRow(&logits[size_t(r) * size_t(vocab)], size_t(vocab), sr);
    if (!want)
      return Status::internal("the CPU sampler: " + want.status().message());
    if (tokens[size_t(r)] != want->token)
      return Status::internal(
          cuda::kernelName(s) + " row " + std::to_string(r) + ": token " +
          std::to_string(tokens[size_t(r)]) + ", the CPU sampler's " +
          std::to_string(want->token));
  }
  return timeRuns(dev, runs, double(rows) * double(vocab) * 4, run);
}

Expected<Timing> measureVerify(const CudaDevice &dev,
                               const LoadedKernels &kernels,
                               const VerifyCase &c, int runs, uint32_t seed) {
  const cuda::SampleSpec &s = c.spec;
  if (s.mode != cuda::SampleMode::Verify)
    return Status::invalidArgument(
        cuda::kernelName(s) + " is not a verifier: measureSample times it");
  Expected<const device::CudaKernel *> kernel =
      find(kernels, cuda::kernelName(s));
  if (!kernel)
    return kernel.status();
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const int S = c.seqs, K = c.drafts, vocab = c.vocab;
  const size_t V = size_t(vocab), rowsPerSeq = size_t(K) + 1;
  // Settings cycle through greedy, plain, top-k, top-p and min-p with both.
  const float temps[] = {0.0f, 1.0f, 0.7f, 1.3f, 0.9f};
  const int topKs[] = {0, 0, 5, 0, 40};
  const float topPs[] = {1.0f, 1.0f, 1.0f, 0.9f, 0.95f};
  const float minPs[] = {0.0f, 0.0f, 0.0f, 0.0f, 0.05f};
  std::vector<float> logits(size_t(S) * rowsPerSeq * V);
  for (float &x : logits)
    x = normal(rng);
  std::vector<SamplingParams> params(static_cast<size_t>(S));
  std::vector<std::vector<TokenId>> drafts(static_cast<size_t>(S));
  std::vector<core::SpecSequence> seqs(static_cast<size_t>(S));
  std::vector<float> uniforms(size_t(S) * rowsPerSeq);
  std::vector<int> draftArray(size_t(S) * size_t(K), -1);
  DrawSettings settings(static_cast<size_t>(S));
  const std::vector<TokenId> none;
  for (int i = 0; i < S; ++i) {
    SamplingParams &p = params[size_t(i)];
    settings.set(size_t(i), p, temps[i % 5], topKs[i % 5], topPs[i % 5],
                 minPs[i % 5]);
    const int k = i % (K + 1);
    for (int j = 0; j < k; ++j) {
      const float *row = &logits[(size_t(i) * rowsPerSeq + size_t(j)) * V];
      TokenId d = (i + j) % 3 == 2 ? TokenId(rng() % V) : firstMaximum(row, V);
      drafts[size_t(i)].push_back(d);
      draftArray[size_t(i * K + j)] = d;
    }
    core::SpecSequence &seq = seqs[size_t(i)];
    seq.prompt = seq.output = &none;
    seq.drafts = &drafts[size_t(i)];
    seq.params = &p;
    seq.seed = seed + uint64_t(i);
    seq.position = 7;
    core::verifyUniforms(seq, K, uniforms.data() + size_t(i) * rowsPerSeq);
  }
  // A draft model's q: each sampled sequence's rows a softmax of its
  // target row moved by noise, the draft given its share (at least the
  // smallest normal float, as a draw leaves it).
  std::vector<std::vector<float>> q(static_cast<size_t>(S));
  std::vector<int> probRows(size_t(S), -1);
  std::vector<float> qRows;
  for (int i = 0; c.draftProbs && i < S; ++i) {
    if (temps[i % 5] == 0.0f || drafts[size_t(i)].empty())
      continue;
    probRows[size_t(i)] = int(qRows.size() / V);
    for (size_t j = 0; j < drafts[size_t(i)].size(); ++j) {
      const float *row = &logits[(size_t(i) * rowsPerSeq + j) * V];
      std::vector<double> e(V);
      double total = 0.0;
      for (size_t v = 0; v < V; ++v)
        total += e[v] = std::exp(double(row[v]) + 0.5 * normal(rng));
      for (size_t v = 0; v < V; ++v) {
        float x = float(e[v] / total);
        if (TokenId(v) == drafts[size_t(i)][j])
          x = std::max(x, std::numeric_limits<float>::min());
        q[size_t(i)].push_back(x);
      }
    }
    qRows.insert(qRows.end(), q[size_t(i)].begin(), q[size_t(i)].end());
    seqs[size_t(i)].draftProbs = &q[size_t(i)];
  }
  const size_t qElems = qRows.size();
  qRows.resize(std::max<size_t>(qElems, 1)); // no zero-byte uploads
  std::vector<core::SpecOutcome> want;
  std::vector<float> host = logits;
  if (Status e =
          core::verifySpeculativeOnCpu(host.data(), K, vocab, seqs, want);
      !e)
    return Status::internal("the CPU verifier: " + e.message());
  std::vector<int> tokens(size_t(S) * rowsPerSeq, -2), accepted(size_t(S), -2);
  Expected<DeviceDrawSettings> ds = uploadSettings(dev, settings);
  if (!ds)
    return ds.status();
  Expected<DeviceBuffer> dl = upload(dev, logits, "logits"),
                         dd = upload(dev, draftArray, "drafts"),
                         du = upload(dev, uniforms, "uniforms"),
                         dtok = dev.allocate(tokens.size() * 4, "tokens"),
                         dacc = dev.allocate(accepted.size() * 4, "accepted"),
                         dq = upload(dev, qRows, "draft distributions"),
                         dqr = upload(dev, probRows, "draft rows");
  for (Expected<DeviceBuffer> *b : {&dl, &dd, &du, &dtok, &dacc, &dq, &dqr})
    if (!*b)
      return b->status();
  folio_cuda::SampleArgs a{};
  a.logits = dl->as<const float>();
  a.stride = vocab;
  a.vocab = vocab;
  a.tokens = dtok->as<int>();
  ds->fill(a);
  a.numDraft = K;
  a.drafts = dd->as<const int>();
  a.uniforms = du->as<const float>();
  a.accepted = dacc->as<int>();
  if (c.draftProbs) {
    a.probs = dq->as<float>();
    a.probRows = dqr->as<const int>();
  }
  device::CudaLaunch l = toLaunch(cuda::sampleLaunch(s, S));
  auto run = [&] { return dev.launch(**kernel, l, &a); };
  if (Status e = run(); !e)
    return e;
  if (Status e = dev.copyToHost(tokens.data(), *dtok, 0, tokens.size() * 4); !e)
    return e;
  if (Status e = dev.copyToHost(accepted.data(), *dacc, 0, accepted.size() * 4);
      !e)
    return e;
  std::vector<core::SpecOutcome> got;
  if (Status e = core::verifiedOnDevice(accepted.data(), tokens.data(), K,
                                        vocab, seqs, got);
      !e)
    return e;
  for (int i = 0; i < S; ++i) {
    const core::SpecOutcome &w = want[size_t(i)], &g = got[size_t(i)];
    if (g.tokens != w.tokens || g.error.empty() != w.error.empty())
      return Status::internal(
          cuda::kernelName(s) + " sequence " + std::to_string(i) + ": kept " +
          std::to_string(g.numAccepted) + " drafts then token " +
          (g.tokens.empty() ? std::string("none")
                            : std::to_string(g.tokens.back())) +
          ", the host path " + std::to_string(w.numAccepted) + " then " +
          (w.tokens.empty() ? std::string("none")
                            : std::to_string(w.tokens.back())));
  }
  // The logits rows, and the q rows, read once.
  return timeRuns(dev, runs, double(logits.size() + qElems) * 4, run);
}

namespace {

size_t castBytes(cuda::CastType t) {
  return t == cuda::CastType::I64                               ? 8
         : t == cuda::CastType::F32 || t == cuda::CastType::I32 ? 4
                                                                : 2;
}

cpu::DType castFloat(cuda::CastType t) {
  return t == cuda::CastType::BF16  ? cpu::DType::BF16
         : t == cuda::CastType::F16 ? cpu::DType::F16
                                    : cpu::DType::F32;
}

} // namespace

Expected<Timing> measureCast(const CudaDevice &dev,
                             const LoadedKernels &kernels, const CastCase &c,
                             int runs, uint32_t seed) {
  const cuda::CastSpec &s = c.spec;
  Expected<const device::CudaKernel *> kernel =
      find(kernels, cuda::kernelName(s));
  if (!kernel)
    return kernel.status();
  std::mt19937_64 rng(seed);
  const size_t n = static_cast<size_t>(c.n);
  const bool ints =
      s.from == cuda::CastType::I32 || s.from == cuda::CastType::I64;
  std::vector<uint8_t> in(n * castBytes(s.from)), want(n * castBytes(s.to));
  std::normal_distribution<float> normal(0.0f, 100.0f);
  for (size_t i = 0; i < n; ++i) {
    if (ints) {
      int64_t v = int64_t(rng());
      if (i % 3 == 0)
        v %= 100000; // small, negative too
      if (s.from == cuda::CastType::I32) {
        int32_t v32 = int32_t(v);
        std::memcpy(&in[i * 4], &v32, 4);
        v = v32;
      } else {
        std::memcpy(&in[i * 8], &v, 8);
      }
      if (s.to == cuda::CastType::I64) {
        std::memcpy(&want[i * 8], &v, 8);
      } else {
        int32_t w = int32_t(uint32_t(uint64_t(v))); // the low 32 bits
        std::memcpy(&want[i * 4], &w, 4);
      }
    } else {
      float f = i % 7 == 1   ? std::numeric_limits<float>::infinity()
                : i % 7 == 2 ? -std::numeric_limits<float>::quiet_NaN()
                : i % 7 == 3 ? 1.0f + 0x1p-8f // a tie for bf16
                             : normal(rng);
      cpu::storeFromFloat(in.data(), castFloat(s.from), i, f);
      cpu::storeFromFloat(want.data(), castFloat(s.to), i,
                          cpu::loadAsFloat(in.data(), castFloat(s.from), i));
    }
  }
  Expected<DeviceBuffer> din = upload(dev, in, "cast input"),
                         dout = dev.allocate(want.size(), "cast output");
  if (!din)
    return din.status();
  if (!dout)
    return dout.status();
  folio_cuda::CastArgs a{din->as<const void>(), dout->as<void>(), (long long)n};
  device::CudaLaunch l = toLaunch(cuda::castLaunch(s, int64_t(n)));
  auto run = [&] { return dev.launch(**kernel, l, &a); };
  if (Status e = run(); !e)
    return e;
  std::vector<uint8_t> got(want.size());
  if (Status e = dev.copyToHost(got.data(), *dout, 0, got.size()); !e)
    return e;
  for (size_t i = 0; i < n; ++i) {
    size_t b = castBytes(s.to);
    if (std::memcmp(&got[i * b], &want[i * b], b) == 0)
      continue;
    // f16 NaNs may carry another payload: NaN for NaN is enough.
    if (!ints && std::isnan(cpu::loadAsFloat(got.data(), castFloat(s.to), i)) &&
        std::isnan(cpu::loadAsFloat(want.data(), castFloat(s.to), i)))
      continue;
    return Status::internal(cuda::kernelName(s) + " element " +
                            std::to_string(i) +
                            " differs from the CPU executor's cast");
  }
  return timeRuns(dev, runs, double(in.size() + want.size()), run);
}

} // namespace folio::gpubench
