//===- Linear.cpp - The linear kernel on a GPU ----------------------------===//

#include "tools/folio-gpu-bench/GpuBench.h"
#include "tools/folio-gpu-bench/LinearReference.h"
#include "tools/folio-gpu-bench/Support.h"

#include "codegen/CPU/DType.h"
#include "codegen/CPU/Linear.h"
#include "codegen/CPU/WeightPack.h"
#include "codegen/CUDA/Templates/KernelArgs.cuh"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>

namespace folio::gpubench {

using device::CudaDevice;
using device::DeviceBuffer;
using namespace detail;

Expected<DeviceWeight> uploadWeight(const CudaDevice &dev,
                                    const std::vector<float> &w, int64_t n,
                                    int64_t k, cpu::DType type, int groupSize) {
  DeviceWeight out;
  if (cpu::Status st =
          cpu::packWeightRows(w.data(), n, k, type, out.packed, groupSize);
      !st.ok())
    return Status::internal("packWeightRows: " + st.message());
  const cpu::WeightPacking &p = out.packed;
  Expected<DeviceBuffer> dw = upload(dev, p.data, "the weights"),
                         ds = upload(dev, p.scales, "the scales"),
                         dp = upload(dev, p.groupParams, "int4 params"),
                         dc = upload(dev, p.outlierCols, "outlier columns"),
                         doutl = upload(dev, p.outliers, "outliers");
  for (Expected<DeviceBuffer> *b : {&dw, &ds, &dp, &dc, &doutl})
    if (!*b)
      return b->status();
  out.data = std::move(*dw);
  out.scales = std::move(*ds);
  out.groupParams = std::move(*dp);
  out.outlierCols = std::move(*dc);
  out.outliers = std::move(*doutl);
  return out;
}

void bindWeight(const DeviceWeight &w, folio_cuda::LinearArgs &a) {
  a.w = w.data.as<const void>();
  a.scales = w.scales.as<const float>();
  a.groupParams = w.groupParams.as<const unsigned short>();
  a.outlierCols = w.outlierCols.as<const int>();
  a.outliers = w.outliers.as<const unsigned short>();
  a.numOutliers = int(w.packed.view().numOutliers);
}

namespace {

/// The dequantizing form (LinearSpec::dequantToBf16) on random weights of
/// c.n rows: every element checked to be floatToBf16(weightViewAt), bit for
/// bit, then timed (bytes: the packed weights read, the bf16 rows written).
Expected<LinearResult> measureDequant(const CudaDevice &dev,
                                      const LoadedKernels &kernels,
                                      const LinearCase &c, int runs,
                                      uint32_t seed) {
  const cuda::LinearSpec &s = c.spec;
  if (!c.alternatives.empty())
    return Status::invalidArgument(cuda::kernelName(s) +
                                   " dequantizes: it has no alternatives");
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t n = c.n, k = s.k;
  std::vector<float> wf(size_t(n * k));
  for (float &e : wf)
    e = 0.02f * normal(rng);
  Expected<DeviceWeight> dw =
      uploadWeight(dev, wf, n, k, s.weightType, s.groupSize);
  if (!dw)
    return dw.status();
  const cpu::WeightView view = dw->packed.view();
  Expected<DeviceBuffer> dy = dev.allocate(size_t(n * k) * 2, "bf16 rows");
  if (!dy)
    return dy.status();
  Expected<const device::CudaKernel *> kernel =
      find(kernels, cuda::kernelName(s));
  if (!kernel)
    return kernel.status();
  folio_cuda::LinearArgs a{};
  bindWeight(*dw, a);
  a.y = dy->as<float>();
  a.n = n;
  device::CudaLaunch l = toLaunch(cuda::linearLaunch(s, n));
  auto run = [&] { return dev.launch(**kernel, l, &a); };
  if (Status st = dev.fill(*dy, 0xff); !st) // NaN: nothing stale passes
    return st;
  Expected<std::vector<uint16_t>> got =
      runAndRead<uint16_t>(dev, run, *dy, size_t(n * k));
  if (!got)
    return got.status();
  for (int64_t r = 0; r < n; ++r)
    for (int64_t e = 0; e < k; ++e)
      if ((*got)[size_t(r * k + e)] !=
          cpu::floatToBf16(cpu::weightViewAt(view, r, e)))
        return Status::internal(cuda::kernelName(s) + " wrote weight (" +
                                std::to_string(r) + ", " + std::to_string(e) +
                                ") other than the CPU's value in bf16");
  LinearResult out;
  Expected<Timing> t = timeRuns(
      dev, runs, double(cpu::weightViewBytes(view)) + double(n * k) * 2, run);
  if (!t)
    return t.status();
  out.timing = *t;
  return out;
}

/// The quantizing form (LinearSpec::quantizeXToFp8) on c.m rows of x:
/// normal rows, one of zeros, one with a NaN and one spanning e4m3's range
/// (tiny values flush to subnormals and 0). Every code and scale is
/// checked against the definition bit for bit, then timed (bytes: x read,
/// codes and scales written).
Expected<LinearResult> measureQuantizeX(const CudaDevice &dev,
                                        const LoadedKernels &kernels,
                                        const LinearCase &c, int runs,
                                        uint32_t seed) {
  const cuda::LinearSpec &s = c.spec;
  if (!c.alternatives.empty())
    return Status::invalidArgument(cuda::kernelName(s) +
                                   " quantizes x: it has no alternatives");
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t m = std::max<int64_t>(c.m, 4), k = s.k;
  std::vector<float> x(size_t(m * k));
  for (float &e : x)
    e = normal(rng);
  std::fill(x.begin() + k, x.begin() + 2 * k, 0.0f);
  x[size_t(2 * k + k / 2)] = std::nanf("");
  for (int64_t e = 0; e < k; ++e)
    x[size_t(3 * k + e)] = std::ldexp(x[size_t(3 * k + e)], int(e % 24) - 12);
  std::vector<uint8_t> wantCodes(x.size());
  std::vector<float> wantScales(static_cast<size_t>(m));
  for (int64_t r = 0; r < m; ++r) {
    float amax = 0.0f;
    for (int64_t e = 0; e < k; ++e)
      amax = std::fmax(amax, std::fabs(x[size_t(r * k + e)]));
    const float scale =
        amax > 0.0f && std::isfinite(amax) ? amax / 448.0f : 1.0f;
    wantScales[size_t(r)] = scale;
    for (int64_t e = 0; e < k; ++e)
      wantCodes[size_t(r * k + e)] =
          cpu::floatToFp8E4M3(x[size_t(r * k + e)] / scale);
  }
  Expected<const device::CudaKernel *> kernel =
      find(kernels, cuda::kernelName(s));
  if (!kernel)
    return kernel.status();
  Expected<DeviceBuffer> dx = upload(dev, x, "x"),
                         dcodes = dev.allocate(x.size(), "codes"),
                         dscales = dev.allocate(size_t(m) * 4, "scales");
  for (Expected<DeviceBuffer> *b : {&dx, &dcodes, &dscales})
    if (!*b)
      return b->status();
  folio_cuda::LinearArgs a{};
  a.x = dx->as<const float>();
  a.m = m;
  a.y = dcodes->as<float>();
  a.xScales = dscales->as<float>();
  device::CudaLaunch l = toLaunch(cuda::linearLaunch(s, m));
  auto run = [&] { return dev.launch(**kernel, l, &a); };
  if (Status st = dev.fill(*dcodes, 0x55); !st)
    return st;
  Expected<std::vector<uint8_t>> codes =
      runAndRead<uint8_t>(dev, run, *dcodes, x.size());
  if (!codes)
    return codes.status();
  Expected<std::vector<float>> scales = std::vector<float>(size_t(m));
  if (Status st = dev.copyToHost(scales->data(), *dscales, 0, size_t(m) * 4);
      !st)
    return st;
  for (int64_t r = 0; r < m; ++r) {
    if (std::memcmp(&(*scales)[size_t(r)], &wantScales[size_t(r)], 4) != 0)
      return Status::internal(cuda::kernelName(s) + " gave row " +
                              std::to_string(r) + " the scale " +
                              std::to_string((*scales)[size_t(r)]) + ", not " +
                              std::to_string(wantScales[size_t(r)]));
    for (int64_t e = 0; e < k; ++e)
      if ((*codes)[size_t(r * k + e)] != wantCodes[size_t(r * k + e)])
        return Status::internal(cuda::kernelName(s) + " coded x (" +
                                std::to_string(r) + ", " + std::to_string(e) +
                                ") other than floatToFp8E4M3(x / scale)");
  }
  LinearResult out;
  Expected<Timing> t =
      timeRuns(dev, runs, double(x.size()) * 5 + double(m) * 4, run);
  if (!t)
    return t.status();
  out.timing = *t;
  return out;
}

/// A checked cuBLASLt GEMM's result: an error past its bound, else timed
/// (`bytes` moved, 2 m n k flops).
Expected<GemmResult> finishGemm(const CudaDevice &dev, const char *type, int m,
                                int n, int k, int runs, double bytes,
                                const std::function<Status()> &run,
                                GemmResult out) {
  if (!(out.maxBoundFraction <= 1.0))
    return Status::internal(
        std::string("cuBLASLt's ") + type + " linear of " + std::to_string(m) +
        " x " + std::to_string(k) + " by " + std::to_string(n) + " x " +
        std::to_string(k) + " differs from the reference by " +
        std::to_string(out.maxBoundFraction) + " times its rounding bound");
  Expected<Timing> t = timeRuns(dev, runs, bytes, run);
  if (!t)
    return t.status();
  out.timing = *t;
  out.tflopsPerS = out.timing.ms > 0 ? 2.0 * double(m) * double(n) * double(k) /
                                           (out.timing.ms * 1e9)
                                     : 0;
  return out;
}

} // namespace

Expected<LinearResult> measureLinear(const CudaDevice &dev,
                                     const LoadedKernels &kernels,
                                     const LinearCase &c, int runs,
                                     uint32_t seed) {
  const cuda::LinearSpec &s = c.spec;
  if (s.dequantToBf16)
    return measureDequant(dev, kernels, c, runs, seed);
  if (s.quantizeXToFp8)
    return measureQuantizeX(dev, kernels, c, runs, seed);
  for (const cuda::LinearSpec &alt : c.alternatives)
    if (alt.weightType != s.weightType || alt.k != s.k ||
        alt.groupSize != s.groupSize)
      return Status::invalidArgument(
          "the alternative " + cuda::kernelName(alt) + " of " +
          cuda::kernelName(s) +
          " is another linear; only its launch parameters may differ");
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t n = c.n, k = s.k, m = c.m;
  std::vector<float> wf(size_t(n * k)), x(size_t(m * k));
  for (float &e : wf)
    e = 0.02f * normal(rng);
  for (float &e : x)
    e = normal(rng);
  Expected<DeviceWeight> dw =
      uploadWeight(dev, wf, n, k, s.weightType, s.groupSize);
  if (!dw)
    return dw.status();
  const cpu::WeightView view = dw->packed.view();
  cpu::PackedWeight pw;
  if (cpu::Status st = cpu::PackedWeight::fromView(view, nullptr, pw); !st.ok())
    return Status::internal(st.message());
  std::vector<float> want(size_t(m * n));
  if (cpu::Status st = cpu::linearGemv(x.data(), m, pw, want.data()); !st.ok())
    return Status::internal("the CPU linear: " + st.message());

  Expected<DeviceBuffer> dx = upload(dev, x, "x");
  if (!dx)
    return dx.status();
  Expected<DeviceBuffer> dy = dev.allocate(want.size() * 4, "y");
  if (!dy)
    return dy.status();
  const double bytes = double(cpu::weightViewBytes(view)) +
                       double(x.size()) * 4 + double(want.size()) * 4;

  // One spec's kernel on these weights: checked against the CPU, then
  // timed.
  auto measure = [&](const cuda::LinearSpec &spec) -> Expected<LinearResult> {
    Expected<const device::CudaKernel *> kernel =
        find(kernels, cuda::kernelName(spec));
    if (!kernel)
      return kernel.status();
    folio_cuda::LinearArgs a{};
    a.x = dx->as<const float>();
    a.m = m;
    bindWeight(*dw, a);
    a.y = dy->as<float>();
    a.n = n;
    device::CudaLaunch l = toLaunch(cuda::linearLaunch(spec, n));
    auto run = [&] { return dev.launch(**kernel, l, &a); };

    LinearResult out;
    if (Status st = dev.fill(*dy, 0xff); !st) // NaN: nothing stale passes
      return st;
    Expected<std::vector<float>> result =
        runAndRead<float>(dev, run, *dy, want.size());
    if (!result)
      return result.status();
    const std::vector<float> &got = *result;
    // The first 512 outputs of each row: the bound takes a pass over k per
    // output, and the big projections have thousands.
    for (int64_t i = 0; i < m; ++i)
      for (int64_t r = 0; r < std::min<int64_t>(n, 512); ++r) {
        // Each result within f32 accumulation of k terms (2e-6 k, the CPU
        // linear tests' bound), so the two within twice that.
        double bound = (4e-6 * double(k) + cpuRounding(spec.weightType, m)) *
                           magnitude(x, i, r, view, {}) +
                       1e-30;
        size_t at = size_t(i * n + r);
        double diff = std::fabs(double(got[at]) - double(want[at])) / bound;
        out.maxBoundFraction =
            std::isnan(diff) ? diff : std::max(out.maxBoundFraction, diff);
        if (std::isnan(diff))
          break;
      }
    if (!(out.maxBoundFraction <= 1.0))
      return Status::internal(
          cuda::kernelName(spec) + " differs from the CPU linear by " +
          std::to_string(out.maxBoundFraction) + " times its rounding bound");
    Expected<Timing> t = timeRuns(dev, runs, bytes, run);
    if (!t)
      return t.status();
    out.timing = *t;
    return out;
  };

  Expected<LinearResult> out = measure(s);
  if (!out)
    return out.status();
  for (const cuda::LinearSpec &alt : c.alternatives) {
    Expected<LinearResult> r = measure(alt);
    if (!r)
      return r.status();
    out->alternatives.push_back({alt, r->timing, r->maxBoundFraction});
  }
  return out;
}

Expected<GemmResult> measureCublasLinear(const CudaDevice &dev,
                                         const device::CublasLt &lt, int m,
                                         int n, int k, int runs,
                                         uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const size_t M = static_cast<size_t>(m), N = static_cast<size_t>(n),
               K = static_cast<size_t>(k);
  std::vector<uint16_t> w(N * K), x(M * K);
  std::vector<float> bias(N);
  for (uint16_t &e : w)
    e = cpu::floatToBf16(0.02f * normal(rng));
  for (uint16_t &e : x)
    e = cpu::floatToBf16(normal(rng));
  for (float &e : bias)
    e = normal(rng);
  Expected<DeviceBuffer> dw = upload(dev, w, "bf16 weights"),
                         dx = upload(dev, x, "bf16 x"),
                         db = upload(dev, bias, "the bias"),
                         dy = dev.allocate(M * N * 4, "y");
  for (Expected<DeviceBuffer> *b : {&dw, &dx, &db, &dy})
    if (!*b)
      return b->status();
  auto run = [&] {
    return lt.linearBf16(dx->ptr(), dw->ptr(), db->ptr(), dy->ptr(), m, n, k);
  };
  Expected<std::vector<float>> result = runAndRead<float>(dev, run, *dy, M * N);
  if (!result)
    return result.status();
  const std::vector<float> &got = *result;
  GemmResult out;
  // The first 64 token rows and 256 outputs: the double reference takes
  // a pass over k per output, and a prefill has thousands of rows.
  for (size_t i = 0; i < std::min<size_t>(M, 64); ++i)
    for (size_t r = 0; r < std::min<size_t>(N, 256); ++r) {
      double want = bias[r], mag = std::fabs(bias[r]);
      for (size_t c = 0; c < K; ++c) {
        double p = double(cpu::bf16ToFloat(x[i * K + c])) *
                   cpu::bf16ToFloat(w[r * K + c]);
        want += p;
        mag += std::fabs(p);
      }
      // f32 accumulation of k products (the CPU linear tests' bound).
      double bound = 2e-6 * double(k) * mag + 1e-30;
      out.maxBoundFraction =
          std::max(out.maxBoundFraction,
                   std::fabs(double(got[i * N + r]) - want) / bound);
    }
  return finishGemm(dev, "bf16", m, n, k, runs,
                    2.0 * double(N * K + M * K) + 4.0 * double(N + M * N), run,
                    out);
}

Expected<GemmResult> measureCublasLinearFp8(const CudaDevice &dev,
                                            const device::CublasLt &lt, int m,
                                            int n, int k, int runs,
                                            uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> scale(0.5f, 2.0f);
  const size_t M = static_cast<size_t>(m), N = static_cast<size_t>(n),
               K = static_cast<size_t>(k);
  std::vector<uint8_t> w(N * K), x(M * K);
  std::vector<float> wScale(N), xScale(M);
  for (uint8_t &e : w)
    e = cpu::floatToFp8E4M3(64.0f * normal(rng));
  for (uint8_t &e : x)
    e = cpu::floatToFp8E4M3(64.0f * normal(rng));
  for (float &e : wScale)
    e = 1e-3f * scale(rng);
  for (float &e : xScale)
    e = 1e-2f * scale(rng);
  Expected<DeviceBuffer> dw = upload(dev, w, "e4m3 weights"),
                         dx = upload(dev, x, "e4m3 x"),
                         dws = upload(dev, wScale, "weight scales"),
                         dxs = upload(dev, xScale, "x scales"),
                         dy = dev.allocate(M * N * 4, "y");
  for (Expected<DeviceBuffer> *b : {&dw, &dx, &dws, &dxs, &dy})
    if (!*b)
      return b->status();
  auto run = [&] {
    return lt.linearFp8(dx->ptr(), dxs->ptr(), dw->ptr(), dws->ptr(), dy->ptr(),
                        m, n, k);
  };
  Expected<std::vector<float>> result = runAndRead<float>(dev, run, *dy, M * N);
  if (!result)
    return result.status();
  const std::vector<float> &got = *result;
  GemmResult out;
  for (size_t i = 0; i < std::min<size_t>(M, 64); ++i)
    for (size_t r = 0; r < std::min<size_t>(N, 256); ++r) {
      double want = 0, mag = 0;
      for (size_t c = 0; c < K; ++c) {
        double p = double(cpu::fp8E4M3ToFloat(x[i * K + c])) *
                   cpu::fp8E4M3ToFloat(w[r * K + c]);
        want += p;
        mag += std::fabs(p);
      }
      const double s = double(xScale[i]) * wScale[r];
      double bound = 0x1p-9 * mag * s + 1e-30;
      out.maxBoundFraction =
          std::max(out.maxBoundFraction,
                   std::fabs(double(got[i * N + r]) - want * s) / bound);
    }
  return finishGemm(dev, "fp8", m, n, k, runs,
                    double(N * K + M * K) + 4.0 * double(N + M + M * N), run,
                    out);
}

} // namespace folio::gpubench
