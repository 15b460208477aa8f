//===- GpuBench.cpp - Generated kernels measured on one GPU ---------------===//

#include "tools/folio-gpu-bench/GpuBench.h"

#include "codegen/CPU/KVCache.h"
#include "codegen/CPU/Linear.h"
#include "codegen/CPU/PagedAttention.h"
#include "codegen/CPU/WeightPack.h"
#include "codegen/CUDA/KernelSpec.h"
#include "codegen/CUDA/NVRTC/Nvrtc.h"
#include "codegen/CUDA/Templates/KernelArgs.cuh"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace folio::gpubench {

using device::CudaDevice;
using device::DeviceBuffer;

Status loadKernels(const CudaDevice &dev,
                   const std::vector<cuda::GeneratedKernel> &kernels,
                   LoadedKernels &out) {
  cuda::DeviceTarget target = cuda::deviceTarget(dev.major(), dev.minor());
  if (target.arch.empty())
    return Status::invalidArgument(dev.name() + " is " + dev.arch() +
                                   "; the generated kernels need sm_80 or "
                                   "newer");
  std::string source;
  for (const cuda::GeneratedKernel &k : kernels)
    source += k.source;
  cuda::CompiledKernel c;
  if (cpu::Status st =
          cuda::compileWithNvrtc("folio_gpu_bench", source, target.arch, c);
      !st.ok())
    return Status::internal(st.message());
  std::string ptx = c.ptx + '\0';
  const void *image = target.cubinRuns
                          ? static_cast<const void *>(c.cubin.data())
                          : static_cast<const void *>(ptx.data());
  Expected<device::CudaModule> m =
      dev.loadModule(image, std::to_string(kernels.size()) +
                                " generated kernels for " + target.arch);
  if (!m)
    return m.status();
  out.module = std::move(*m);
  out.arch = target.arch;
  out.fromPtx = !target.cubinRuns;
  for (const cuda::GeneratedKernel &k : kernels) {
    Expected<device::CudaKernel> f = dev.kernel(out.module, k.name);
    if (!f)
      return f.status();
    out.byName[k.name] = *f;
  }
  return Status::ok();
}

namespace {

device::CudaLaunch toLaunch(const cuda::LaunchGeometry &g) {
  device::CudaLaunch l;
  std::copy(g.grid, g.grid + 3, l.grid);
  std::copy(g.block, g.block + 3, l.block);
  l.dynamicShared = g.dynamicShared;
  return l;
}

Expected<const device::CudaKernel *> find(const LoadedKernels &k,
                                          const std::string &name) {
  auto it = k.byName.find(name);
  if (it == k.byName.end())
    return Status::notFound("kernel " + name + " was not loaded");
  return &it->second;
}

/// Two warm-up runs, then `runs` timings of enough back-to-back runs to
/// take about a millisecond (event resolution and launch gaps stay small
/// beside it); the median per run.
Expected<Timing> timeRuns(const CudaDevice &dev, int runs, double bytes,
                          const std::function<Status()> &body) {
  for (int i = 0; i < 2; ++i)
    if (Status s = body(); !s)
      return s;
  Expected<double> once = dev.time(body);
  if (!once)
    return once.status();
  const int reps =
      *once >= 1.0
          ? 1
          : int(std::min(1000.0, std::ceil(1.0 / std::max(*once, 1e-3))));
  std::vector<double> ms;
  for (int i = 0; i < std::max(runs, 1); ++i) {
    Expected<double> t = dev.time([&]() -> Status {
      for (int r = 0; r < reps; ++r)
        if (Status s = body(); !s)
          return s;
      return Status::ok();
    });
    if (!t)
      return t.status();
    ms.push_back(*t / reps);
  }
  std::sort(ms.begin(), ms.end());
  Timing out;
  out.ms = ms[ms.size() / 2];
  out.bytes = bytes;
  out.runs = int(ms.size());
  out.repsPerRun = reps;
  out.gbPerS = out.ms > 0 ? bytes / (out.ms * 1e6) : 0;
  return out;
}

template <typename T>
Expected<DeviceBuffer> upload(const CudaDevice &dev, const std::vector<T> &v,
                              const std::string &what) {
  return dev.upload(v.data(), v.size() * sizeof(T), what);
}

} // namespace

Expected<Timing> measureCopy(const CudaDevice &dev, size_t bytes, int runs) {
  Expected<DeviceBuffer> a = dev.allocate(bytes, "the copy's source");
  if (!a)
    return a.status();
  Expected<DeviceBuffer> b = dev.allocate(bytes, "the copy's destination");
  if (!b)
    return b.status();
  if (Status s = dev.fill(*a, 1); !s)
    return s;
  return timeRuns(dev, runs, 2.0 * double(bytes),
                  [&] { return dev.copyOnDevice(*b, *a, bytes); });
}

Expected<DecodeResult> measurePagedDecode(const CudaDevice &dev,
                                          const LoadedKernels &kernels,
                                          const DecodeCase &c, int runs,
                                          uint32_t seed) {
  const cuda::PagedDecodeSpec &s = c.spec;
  Expected<const device::CudaKernel *> mainK =
      find(kernels, cuda::kernelName(s));
  if (!mainK)
    return mainK.status();
  Expected<const device::CudaKernel *> combineK =
      find(kernels, cuda::combineKernelName(s));
  if (!combineK)
    return combineK.status();
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t S = c.seqs, C = c.context, D = s.headDim;
  const int64_t H = int64_t(s.numKvHeads) * s.queriesPerKv;
  const int64_t blocksPerSeq = (C + s.blockSize - 1) / s.blockSize;

  cpu::KVCacheView view;
  view.numBlocks = S * blocksPerSeq + 1; // block 0 is the null block
  view.blockSize = s.blockSize;
  view.numKvHeads = s.numKvHeads;
  view.headDim = D;
  view.dtype = s.cacheType;
  view.group = s.group;
  std::vector<uint8_t> k(view.poolBytes()), v(view.poolBytes());
  std::vector<uint16_t> kp(view.paramPoolBytes() / 2),
      vp(view.paramPoolBytes() / 2);
  std::vector<float> scales(size_t(s.numKvHeads), 0.05f);
  view.k = k.data();
  view.v = v.data();
  view.kParams = kp.empty() ? nullptr : kp.data();
  view.vParams = vp.empty() ? nullptr : vp.data();
  if (cpu::isFp8(s.cacheType))
    view.kScale = view.vScale = scales.data();

  // Blocks in a shuffled order, as a long-running pool has them.
  std::vector<int32_t> ids(size_t(S * blocksPerSeq));
  std::iota(ids.begin(), ids.end(), 1);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::vector<int32_t> tables(ids);
  std::vector<int32_t> seqLens(static_cast<size_t>(S), static_cast<int32_t>(C));
  std::vector<int32_t> starts(static_cast<size_t>(S + 1));
  std::iota(starts.begin(), starts.end(), 0);
  // Written a chunk of sequences at a time: the f32 rows of all of them
  // would take 4 bytes per element on the host.
  const int64_t slotElems = int64_t(s.numKvHeads) * D;
  for (int64_t q = 0; q < S; ++q) {
    std::vector<float> kf(size_t(C * slotElems)), vf(kf.size());
    for (float &x : kf)
      x = normal(rng);
    for (float &x : vf)
      x = normal(rng);
    std::vector<int64_t> slots(static_cast<size_t>(C));
    for (int64_t pos = 0; pos < C; ++pos)
      slots[size_t(pos)] =
          int64_t(tables[size_t(q * blocksPerSeq + pos / s.blockSize)]) *
              s.blockSize +
          pos % s.blockSize;
    if (cpu::Status st = cpu::kvWrite(view, kf.data(), slotElems, vf.data(),
                                      slotElems, slots.data(), C);
        !st.ok())
      return Status::internal("kvWrite: " + st.message());
  }
  std::vector<float> query(size_t(S * H * D));
  for (float &x : query)
    x = normal(rng);

  cpu::RaggedBatch batch;
  batch.numTokens = S;
  batch.numSeqs = S;
  batch.queryStartLoc = starts.data();
  batch.seqLens = seqLens.data();
  batch.blockTables = tables.data();
  batch.maxBlocksPerSeq = blocksPerSeq;
  cpu::AttentionParams params;
  params.numHeads = H;
  params.scale = 1.0f / std::sqrt(float(D));
  std::vector<float> want(query.size());
  if (cpu::Status st =
          cpu::pagedAttention(query.data(), view, batch, params, want.data());
      !st.ok())
    return Status::internal("the CPU pagedAttention: " + st.message());

  cuda::PagedDecodeLaunch launch = cuda::pagedDecodeLaunch(s, S, C);
  Expected<DeviceBuffer> dk = upload(dev, k, "the K pool"),
                         dv = upload(dev, v, "the V pool"),
                         dkp = upload(dev, kp, "the K params"),
                         dvp = upload(dev, vp, "the V params"),
                         dscale = upload(dev, scales, "the fp8 scales"),
                         dq = upload(dev, query, "q"),
                         dstarts = upload(dev, starts, "queryStartLoc"),
                         dlens = upload(dev, seqLens, "seqLens"),
                         dtables = upload(dev, tables, "the block tables");
  for (Expected<DeviceBuffer> *b :
       {&dk, &dv, &dkp, &dvp, &dscale, &dq, &dstarts, &dlens, &dtables})
    if (!*b)
      return b->status();
  Expected<DeviceBuffer> dout = dev.allocate(query.size() * 4, "out"),
                         dpartial = dev.allocate(launch.partialFloats * 4,
                                                 "the partial outputs"),
                         dmax = dev.allocate(launch.statFloats * 4, "maxima"),
                         dsum = dev.allocate(launch.statFloats * 4, "sums");
  for (Expected<DeviceBuffer> *b : {&dout, &dpartial, &dmax, &dsum})
    if (!*b)
      return b->status();

  folio_cuda::PagedDecodeArgs a{};
  a.q = dq->as<const float>();
  a.kCache = dk->as<const unsigned char>();
  a.vCache = dv->as<const unsigned char>();
  a.kParams = dkp->as<const unsigned short>();
  a.vParams = dvp->as<const unsigned short>();
  a.kScale = a.vScale = dscale->as<const float>();
  a.queryStartLoc = dstarts->as<const int>();
  a.seqLens = dlens->as<const int>();
  a.blockTables = dtables->as<const int>();
  a.maxBlocksPerSeq = int(blocksPerSeq);
  a.numSeqs = int(S);
  a.scale = params.scale;
  a.numPartitions = launch.numPartitions;
  a.out = dout->as<float>();
  a.partialOut = dpartial->as<float>();
  a.partialMax = dmax->as<float>();
  a.partialSum = dsum->as<float>();
  auto run = [&]() -> Status {
    if (Status st = dev.launch(**mainK, toLaunch(launch.main), &a); !st)
      return st;
    if (launch.numPartitions > 1)
      return dev.launch(**combineK, toLaunch(launch.combine), &a);
    return Status::ok();
  };

  DecodeResult out;
  out.partitions = launch.numPartitions;
  if (Status st = run(); !st)
    return st;
  if (Status st = dev.synchronize(); !st)
    return st;
  std::vector<float> got(query.size());
  if (Status st = dev.copyToHost(got.data(), *dout, 0, got.size() * 4); !st)
    return st;
  for (size_t i = 0; i < got.size(); ++i)
    out.maxRelDiff =
        std::max(out.maxRelDiff, std::fabs(double(got[i]) - double(want[i])) /
                                     (std::fabs(double(want[i])) + 1.0));
  if (!(out.maxRelDiff < 1e-4))
    return Status::internal(
        cuda::kernelName(s) + " differs from the CPU pagedAttention by " +
        std::to_string(out.maxRelDiff) + " (relative to |x| + 1), over 1e-4");

  double read =
      double(S * C) * 2.0 * double(view.slotBytes() + view.paramSlotBytes());
  double bytes = read + 2.0 * double(query.size()) * 4;
  Expected<Timing> t = timeRuns(dev, runs, bytes, run);
  if (!t)
    return t.status();
  out.timing = *t;
  return out;
}

Expected<LinearResult> measureLinear(const CudaDevice &dev,
                                     const LoadedKernels &kernels,
                                     const LinearCase &c, int runs,
                                     uint32_t seed) {
  const cuda::LinearSpec &s = c.spec;
  Expected<const device::CudaKernel *> kernel =
      find(kernels, cuda::kernelName(s));
  if (!kernel)
    return kernel.status();
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t n = c.n, k = s.k, m = c.m;
  std::vector<float> wf(size_t(n * k)), x(size_t(m * k));
  for (float &e : wf)
    e = 0.02f * normal(rng);
  for (float &e : x)
    e = normal(rng);
  cpu::WeightPacking packed;
  if (cpu::Status st = cpu::packWeightRows(wf.data(), n, k, s.weightType,
                                           packed, s.groupSize);
      !st.ok())
    return Status::internal("packWeightRows: " + st.message());
  const cpu::WeightView view = packed.view();
  cpu::PackedWeight pw;
  if (cpu::Status st = cpu::PackedWeight::fromView(view, nullptr, pw); !st.ok())
    return Status::internal(st.message());
  std::vector<float> want(size_t(m * n));
  if (cpu::Status st = cpu::linearGemv(x.data(), m, pw, want.data()); !st.ok())
    return Status::internal("the CPU linear: " + st.message());

  Expected<DeviceBuffer> dw = upload(dev, packed.data, "the weights"),
                         ds = upload(dev, packed.scales, "the scales"),
                         dp = upload(dev, packed.groupParams, "int4 params"),
                         dc =
                             upload(dev, packed.outlierCols, "outlier columns"),
                         doutl = upload(dev, packed.outliers, "outliers"),
                         dx = upload(dev, x, "x");
  for (Expected<DeviceBuffer> *b : {&dw, &ds, &dp, &dc, &doutl, &dx})
    if (!*b)
      return b->status();
  Expected<DeviceBuffer> dy = dev.allocate(want.size() * 4, "y");
  if (!dy)
    return dy.status();
  folio_cuda::LinearArgs a{};
  a.x = dx->as<const float>();
  a.m = m;
  a.w = dw->as<const void>();
  a.scales = ds->as<const float>();
  a.groupParams = dp->as<const unsigned short>();
  a.outlierCols = dc->as<const int>();
  a.outliers = doutl->as<const unsigned short>();
  a.numOutliers = int(view.numOutliers);
  a.y = dy->as<float>();
  a.n = n;
  device::CudaLaunch l = toLaunch(cuda::linearLaunch(s, n));
  auto run = [&] { return dev.launch(**kernel, l, &a); };

  LinearResult out;
  if (Status st = run(); !st)
    return st;
  if (Status st = dev.synchronize(); !st)
    return st;
  std::vector<float> got(want.size());
  if (Status st = dev.copyToHost(got.data(), *dy, 0, got.size() * 4); !st)
    return st;
  const int64_t groups =
      s.weightType == cpu::DType::I4 ? cpu::int4Groups(k, s.groupSize) : 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t r = 0; r < n; ++r) {
      // sum |x w|, and for int4 the group terms the CPU kernel sums apart
      // (scale * sum x q + min * sum x).
      double mag = 0;
      for (int64_t col = 0; col < k; ++col) {
        double w = std::fabs(cpu::weightViewAt(view, r, col));
        if (groups > 0) {
          const uint16_t *p =
              view.groupParams + (r * groups + col / s.groupSize) * 2;
          w += 15 * std::fabs(cpu::f16ToFloat(p[0])) +
               std::fabs(cpu::f16ToFloat(p[1]));
        }
        mag += std::fabs(double(x[size_t(i * k + col)])) * w;
      }
      // Each result within f32 accumulation of k terms (2e-6 k, the CPU
      // linear tests' bound), so the two within twice that; above kSmallM
      // rows the CPU's 8-bit and int4 paths round x to bf16.
      double rounding = m <= cpu::kSmallM || cpu::isPlainFloat(s.weightType)
                            ? 0.0
                        : s.weightType == cpu::DType::I4 ? 1.0 / 16384
                                                         : 1.0 / 256;
      double bound = (4e-6 * double(k) + rounding) * mag + 1e-30;
      size_t at = size_t(i * n + r);
      out.maxBoundFraction =
          std::max(out.maxBoundFraction,
                   std::fabs(double(got[at]) - double(want[at])) / bound);
    }
  if (!(out.maxBoundFraction <= 1.0))
    return Status::internal(
        cuda::kernelName(s) + " differs from the CPU linear by " +
        std::to_string(out.maxBoundFraction) + " times its rounding bound");
  double bytes = double(cpu::weightViewBytes(view)) + double(x.size()) * 4 +
                 double(want.size()) * 4;
  Expected<Timing> t = timeRuns(dev, runs, bytes, run);
  if (!t)
    return t.status();
  out.timing = *t;
  return out;
}

} // namespace folio::gpubench
