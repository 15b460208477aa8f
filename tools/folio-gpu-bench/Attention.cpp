//===- Attention.cpp - kv_write, decode and prefill attention on a GPU ----===//

#include "tools/folio-gpu-bench/GpuBench.h"
#include "tools/folio-gpu-bench/Support.h"

#include "codegen/CPU/KVCache.h"
#include "codegen/CPU/PagedAttention.h"
#include "codegen/CUDA/Templates/KernelArgs.cuh"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <tuple>

namespace folio::gpubench {

using device::CudaDevice;
using device::DeviceBuffer;
using namespace detail;

namespace {

/// Sequences of `context` keys each in a paged cache of `type`: random K
/// and V written by the CPU kvWrite, blocks in a shuffled order (as a
/// long-running pool has them), and copies of the pools, tables and
/// lengths on the device.
struct PagedCache {
  cpu::KVCacheView view;
  std::vector<uint8_t> k, v;
  std::vector<uint16_t> kParams, vParams;
  std::vector<float> scales;
  std::vector<int32_t> tables, seqLens;
  int64_t blocksPerSeq = 0;
  DeviceBuffer dk, dv, dkp, dvp, dscale, dtables, dlens;

  Status build(const CudaDevice &dev, cpu::DType type, int headDim,
               int blockSize, int kvHeads, int group, int64_t seqs,
               int64_t context, std::mt19937 &rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    blocksPerSeq = (context + blockSize - 1) / blockSize;
    view.numBlocks = seqs * blocksPerSeq + 1; // block 0 is the null block
    view.blockSize = blockSize;
    view.numKvHeads = kvHeads;
    view.headDim = headDim;
    view.dtype = type;
    view.group = group;
    k.assign(view.poolBytes(), 0);
    v.assign(view.poolBytes(), 0);
    kParams.assign(view.paramPoolBytes() / 2, 0);
    vParams.assign(view.paramPoolBytes() / 2, 0);
    scales.assign(size_t(kvHeads), 0.05f);
    view.k = k.data();
    view.v = v.data();
    view.kParams = kParams.empty() ? nullptr : kParams.data();
    view.vParams = vParams.empty() ? nullptr : vParams.data();
    if (cpu::isFp8(type))
      view.kScale = view.vScale = scales.data();
    tables.resize(size_t(seqs * blocksPerSeq));
    std::iota(tables.begin(), tables.end(), 1);
    std::shuffle(tables.begin(), tables.end(), rng);
    seqLens.assign(size_t(seqs), int32_t(context));
    // A sequence at a time: f32 rows of all of them would take 4 bytes per
    // element on the host.
    const int64_t slotElems = int64_t(kvHeads) * headDim;
    for (int64_t q = 0; q < seqs; ++q) {
      std::vector<float> kf(size_t(context * slotElems)), vf(kf.size());
      for (float &x : kf)
        x = normal(rng);
      for (float &x : vf)
        x = normal(rng);
      std::vector<int64_t> slots(static_cast<size_t>(context));
      for (int64_t pos = 0; pos < context; ++pos)
        slots[size_t(pos)] =
            int64_t(tables[size_t(q * blocksPerSeq + pos / blockSize)]) *
                blockSize +
            pos % blockSize;
      if (cpu::Status st = cpu::kvWrite(view, kf.data(), slotElems, vf.data(),
                                        slotElems, slots.data(), context);
          !st.ok())
        return Status::internal("kvWrite: " + st.message());
    }
    Expected<DeviceBuffer> b[] = {
        upload(dev, k, "the K pool"),      upload(dev, v, "the V pool"),
        upload(dev, kParams, "K params"),  upload(dev, vParams, "V params"),
        upload(dev, scales, "fp8 scales"), upload(dev, tables, "block tables"),
        upload(dev, seqLens, "seqLens")};
    for (Expected<DeviceBuffer> &e : b)
      if (!e)
        return e.status();
    dk = std::move(*b[0]);
    dv = std::move(*b[1]);
    dkp = std::move(*b[2]);
    dvp = std::move(*b[3]);
    dscale = std::move(*b[4]);
    dtables = std::move(*b[5]);
    dlens = std::move(*b[6]);
    return Status::ok();
  }

  cpu::RaggedBatch batch(const std::vector<int32_t> &starts) const {
    cpu::RaggedBatch b;
    b.numSeqs = int64_t(seqLens.size());
    b.numTokens = starts.back();
    b.queryStartLoc = starts.data();
    b.seqLens = seqLens.data();
    b.blockTables = tables.data();
    b.maxBlocksPerSeq = blocksPerSeq;
    return b;
  }

  /// Bytes of the K and V rows and params of `keys` keys.
  double bytesOf(double keys) const {
    return keys * 2.0 * double(view.slotBytes() + view.paramSlotBytes());
  }
};

/// The tensor-core prefill's bound on |got - want| / (|want| + 1) against
/// the CPU's f32 attention: q, K, V and the probabilities are rounded to
/// bf16 (the emulation measures up to 3e-3 of max |v| on normal inputs,
/// max |v| about 4).
constexpr double kTensorCoreAttentionLimit = 3e-2;

/// Largest |got - want| / (|want| + 1); an error past `limit`.
Expected<double> compareAttention(const std::vector<float> &got,
                                  const std::vector<float> &want,
                                  const std::string &kernel, double limit) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(double(got[i]) - double(want[i])) /
                                (std::fabs(double(want[i])) + 1.0));
  if (!(worst < limit))
    return Status::internal(
        kernel + " differs from the CPU pagedAttention by " +
        std::to_string(worst) + " (relative to |x| + 1), over " +
        std::to_string(limit));
  return worst;
}

/// The arguments decode and prefill attention share: q, the cache and the
/// batch's arrays.
template <class Args>
void bindAttention(Args &a, const PagedCache &cache, const DeviceBuffer &q,
                   const DeviceBuffer &queryStartLoc, float scale) {
  a.q = q.as<const float>();
  a.kCache = cache.dk.as<const unsigned char>();
  a.vCache = cache.dv.as<const unsigned char>();
  a.kParams = cache.dkp.as<const unsigned short>();
  a.vParams = cache.dvp.as<const unsigned short>();
  a.kScale = a.vScale = cache.dscale.as<const float>();
  a.queryStartLoc = queryStartLoc.as<const int>();
  a.seqLens = cache.dlens.as<const int>();
  a.blockTables = cache.dtables.as<const int>();
  a.maxBlocksPerSeq = int(cache.blocksPerSeq);
  a.scale = scale;
}

} // namespace

Expected<DecodeResult> measurePagedDecode(const CudaDevice &dev,
                                          const LoadedKernels &kernels,
                                          const DecodeCase &c, int runs,
                                          uint32_t seed) {
  const cuda::PagedDecodeSpec &s = c.spec;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t S = c.seqs, C = c.context, D = s.headDim;
  const int64_t H = int64_t(s.numKvHeads) * s.queriesPerKv;
  PagedCache cache;
  if (Status st = cache.build(dev, s.cacheType, s.headDim, s.blockSize,
                              s.numKvHeads, s.group, S, C, rng);
      !st)
    return st;
  std::vector<int32_t> starts(static_cast<size_t>(S + 1));
  std::iota(starts.begin(), starts.end(), 0); // one token per sequence
  std::vector<float> query(size_t(S * H * D));
  for (float &x : query)
    x = normal(rng);
  cpu::AttentionParams params;
  params.numHeads = H;
  params.scale = 1.0f / std::sqrt(float(D));
  std::vector<float> want(query.size());
  if (cpu::Status st = cpu::pagedAttention(
          query.data(), cache.view, cache.batch(starts), params, want.data());
      !st.ok())
    return Status::internal("the CPU pagedAttention: " + st.message());

  Expected<DeviceBuffer> dq = upload(dev, query, "q"),
                         dstarts = upload(dev, starts, "queryStartLoc");
  Expected<DeviceBuffer> dout = dev.allocate(query.size() * 4, "out");
  for (Expected<DeviceBuffer> *b : {&dq, &dstarts, &dout})
    if (!*b)
      return b->status();
  const double bytes =
      cache.bytesOf(double(S * C)) + 2.0 * double(query.size()) * 4;

  // One spec's kernels on these inputs: checked against the CPU, then
  // timed.
  struct Measured {
    Timing timing;
    int partitions = 1;
    double maxRelDiff = 0;
  };
  auto measure = [&](const cuda::PagedDecodeSpec &spec) -> Expected<Measured> {
    Expected<const device::CudaKernel *> mainK =
        find(kernels, cuda::kernelName(spec));
    if (!mainK)
      return mainK.status();
    Expected<const device::CudaKernel *> combineK =
        find(kernels, cuda::combineKernelName(spec));
    if (!combineK)
      return combineK.status();
    cuda::PagedDecodeLaunch launch = cuda::pagedDecodeLaunch(spec, S, C);
    Expected<DeviceBuffer> dpartial = dev.allocate(launch.partialFloats * 4,
                                                   "the partial outputs"),
                           dmax = dev.allocate(launch.statFloats * 4, "maxima"),
                           dsum = dev.allocate(launch.statFloats * 4, "sums");
    for (Expected<DeviceBuffer> *b : {&dpartial, &dmax, &dsum})
      if (!*b)
        return b->status();
    folio_cuda::PagedDecodeArgs a{};
    bindAttention(a, cache, *dq, *dstarts, params.scale);
    a.numSeqs = int(S);
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
    Measured m;
    m.partitions = launch.numPartitions;
    if (Status st = dev.fill(*dout, 0xff); !st) // NaN: nothing stale passes
      return st;
    Expected<std::vector<float>> result =
        runAndRead<float>(dev, run, *dout, query.size());
    if (!result)
      return result.status();
    Expected<double> diff =
        compareAttention(*result, want, cuda::kernelName(spec), 1e-4);
    if (!diff)
      return diff.status();
    m.maxRelDiff = *diff;
    Expected<Timing> t = timeRuns(dev, runs, bytes, run);
    if (!t)
      return t.status();
    m.timing = *t;
    return m;
  };

  Expected<Measured> first = measure(s);
  if (!first)
    return first.status();
  DecodeResult out;
  out.timing = first->timing;
  out.partitions = first->partitions;
  out.maxRelDiff = first->maxRelDiff;
  for (const cuda::PagedDecodeSpec &alt : c.alternatives) {
    if (alt.cacheType != s.cacheType || alt.headDim != s.headDim ||
        alt.blockSize != s.blockSize || alt.numKvHeads != s.numKvHeads ||
        alt.queriesPerKv != s.queriesPerKv || alt.group != s.group)
      return Status::invalidArgument(
          "the alternative " + cuda::kernelName(alt) + " of " +
          cuda::kernelName(s) +
          " is another attention; only threads and partition may differ");
    Expected<Measured> m = measure(alt);
    if (!m)
      return m.status();
    out.alternatives.push_back({alt, m->timing, m->partitions, m->maxRelDiff});
  }
  return out;
}

Expected<PrefillResult> measurePagedPrefill(const CudaDevice &dev,
                                            const LoadedKernels &kernels,
                                            const PrefillCase &c, int runs,
                                            uint32_t seed) {
  const cuda::PagedPrefillSpec &s = c.spec;
  Expected<const device::CudaKernel *> kernel =
      find(kernels, cuda::kernelName(s));
  if (!kernel)
    return kernel.status();
  if (c.queries < 1 || c.queries > c.context)
    return Status::invalidArgument(
        "a prefill case needs 1 to context (" + std::to_string(c.context) +
        ") query tokens, not " + std::to_string(c.queries));
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t S = c.seqs, C = c.context, Q = c.queries, D = s.headDim;
  const int64_t H = int64_t(s.numKvHeads) * s.queriesPerKv;
  PagedCache cache;
  if (Status st = cache.build(dev, s.cacheType, s.headDim, s.blockSize,
                              s.numKvHeads, s.group, S, C, rng);
      !st)
    return st;
  // The last Q keys of each sequence are its new tokens, written already.
  std::vector<int32_t> starts(static_cast<size_t>(S + 1));
  for (int64_t q = 0; q <= S; ++q)
    starts[size_t(q)] = int32_t(q * Q);
  std::vector<float> query(size_t(S * Q * H * D));
  for (float &x : query)
    x = normal(rng);
  cpu::AttentionParams params;
  params.numHeads = H;
  params.scale = 1.0f / std::sqrt(float(D));
  std::vector<float> want(query.size());
  if (cpu::Status st = cpu::pagedAttention(
          query.data(), cache.view, cache.batch(starts), params, want.data());
      !st.ok())
    return Status::internal("the CPU pagedAttention: " + st.message());

  Expected<DeviceBuffer> dq = upload(dev, query, "q"),
                         dstarts = upload(dev, starts, "queryStartLoc"),
                         dout = dev.allocate(query.size() * 4, "out");
  for (Expected<DeviceBuffer> *b : {&dq, &dstarts, &dout})
    if (!*b)
      return b->status();
  folio_cuda::PagedPrefillArgs a{};
  bindAttention(a, cache, *dq, *dstarts, params.scale);
  a.out = dout->as<float>();
  device::CudaLaunch l = toLaunch(cuda::pagedPrefillLaunch(s, S, Q));
  auto run = [&] { return dev.launch(**kernel, l, &a); };

  PrefillResult out;
  Expected<std::vector<float>> result =
      runAndRead<float>(dev, run, *dout, query.size());
  if (!result)
    return result.status();
  const std::vector<float> &got = *result;
  Expected<double> diff =
      compareAttention(got, want, cuda::kernelName(s),
                       s.tensorCores ? kTensorCoreAttentionLimit : 1e-4);
  if (!diff)
    return diff.status();
  out.maxRelDiff = *diff;
  // Token i of Q sees C - Q + i + 1 keys: q.k and p.v, 2 flops per
  // multiply-add, for every head.
  double keysSeen =
      double(S) * (double(Q) * double(C - Q) + double(Q) * double(Q + 1) / 2);
  out.flops = keysSeen * double(H) * double(D) * 4.0;
  double bytes = cache.bytesOf(double(S * C)) + 2.0 * double(query.size()) * 4;
  Expected<Timing> t = timeRuns(dev, runs, bytes, run);
  if (!t)
    return t.status();
  out.timing = *t;
  out.tflopsPerS = out.timing.ms > 0 ? out.flops / (out.timing.ms * 1e9) : 0;
  return out;
}

Expected<KVWriteResult> measureKVWrite(const CudaDevice &dev,
                                       const LoadedKernels &kernels,
                                       const KVWriteCase &c, int runs,
                                       uint32_t seed) {
  const cuda::KVWriteSpec &s = c.spec;
  Expected<const device::CudaKernel *> kernel =
      find(kernels, cuda::kernelName(s));
  if (!kernel)
    return kernel.status();
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const int64_t T = c.tokens, slotElems = int64_t(s.numKvHeads) * s.headDim;
  cpu::KVCacheView view;
  view.blockSize = 16;
  view.numBlocks = (T + 15) / 16 + 1;
  view.numKvHeads = s.numKvHeads;
  view.headDim = s.headDim;
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
  // Every token to its own slot past the null block, in a shuffled order.
  std::vector<int64_t> slots(static_cast<size_t>(T));
  std::iota(slots.begin(), slots.end(), int64_t(view.blockSize));
  std::shuffle(slots.begin(), slots.end(), rng);
  std::vector<float> kf(size_t(T * slotElems)), vf(kf.size());
  for (float &x : kf)
    x = normal(rng);
  for (float &x : vf)
    x = normal(rng);
  if (cpu::Status st = cpu::kvWrite(view, kf.data(), slotElems, vf.data(),
                                    slotElems, slots.data(), T);
      !st.ok())
    return Status::internal("kvWrite: " + st.message());

  Expected<DeviceBuffer> dkf = upload(dev, kf, "k rows"),
                         dvf = upload(dev, vf, "v rows"),
                         dslots = upload(dev, slots, "the slot mapping"),
                         dscale = upload(dev, scales, "fp8 scales"),
                         dk = dev.allocate(k.size(), "the K pool"),
                         dv = dev.allocate(v.size(), "the V pool"),
                         dkp = dev.allocate(kp.size() * 2, "K params"),
                         dvp = dev.allocate(vp.size() * 2, "V params");
  for (Expected<DeviceBuffer> *b :
       {&dkf, &dvf, &dslots, &dscale, &dk, &dv, &dkp, &dvp})
    if (!*b)
      return b->status();
  for (Expected<DeviceBuffer> *b : {&dk, &dv, &dkp, &dvp})
    if (Status st = dev.fill(**b, 0); !st)
      return st;
  folio_cuda::KVWriteArgs a{};
  a.k = dkf->as<const float>();
  a.v = dvf->as<const float>();
  a.kStride = a.vStride = slotElems;
  a.slotMapping = dslots->as<const long long>();
  a.kCache = dk->as<unsigned char>();
  a.vCache = dv->as<unsigned char>();
  a.kParams = dkp->as<unsigned short>();
  a.vParams = dvp->as<unsigned short>();
  a.kScale = a.vScale = dscale->as<const float>();
  device::CudaLaunch l = toLaunch(cuda::kvWriteLaunch(s, T));
  auto run = [&] { return dev.launch(**kernel, l, &a); };
  if (Status st = run(); !st)
    return st;
  if (Status st = dev.synchronize(); !st)
    return st;
  // Bit for bit what the CPU writes (the inputs are finite).
  std::vector<uint8_t> gk(k.size()), gv(v.size());
  std::vector<uint16_t> gkp(kp.size()), gvp(vp.size());
  for (auto [dst, src, bytes] :
       {std::tuple{static_cast<void *>(gk.data()), &*dk, gk.size()},
        std::tuple{static_cast<void *>(gv.data()), &*dv, gv.size()},
        std::tuple{static_cast<void *>(gkp.data()), &*dkp, gkp.size() * 2},
        std::tuple{static_cast<void *>(gvp.data()), &*dvp, gvp.size() * 2}})
    if (Status st = dev.copyToHost(dst, *src, 0, bytes); !st)
      return st;
  if (gk != k || gv != v || gkp != kp || gvp != vp)
    return Status::internal(cuda::kernelName(s) +
                            " does not write what the CPU kvWrite writes");
  KVWriteResult out;
  double bytes =
      double(T) * (2.0 * double(slotElems) * 4 + 8 +
                   2.0 * double(view.slotBytes() + view.paramSlotBytes()));
  Expected<Timing> t = timeRuns(dev, runs, bytes, run);
  if (!t)
    return t.status();
  out.timing = *t;
  return out;
}

Expected<DecodeTargets>
decodeTargets(const std::vector<std::pair<DecodeCase, DecodeResult>> &runs,
              double copyGbPerS) {
  if (runs.empty() || !(copyGbPerS > 0))
    return Status::invalidArgument("no decode runs or no copy bandwidth");
  DecodeTargets t;
  t.minFractionOfCopy = 1e300;
  int shortest = runs.front().first.context, longest = shortest;
  for (const auto &[c, r] : runs) {
    double f = r.timing.gbPerS / copyGbPerS;
    if (f < t.minFractionOfCopy) {
      t.minFractionOfCopy = f;
      t.slowest = std::string(cpu::dtypeName(c.spec.cacheType)) + " at " +
                  std::to_string(c.seqs) + " x " + std::to_string(c.context);
    }
    shortest = std::min(shortest, c.context);
    longest = std::max(longest, c.context);
  }
  auto ratio = [&](int context, double &out) -> Status {
    double fp8 = 0, bf16 = 0;
    for (const auto &[c, r] : runs)
      if (c.context == context) {
        if (c.spec.cacheType == cpu::DType::FP8E4M3)
          fp8 = r.timing.ms;
        else if (c.spec.cacheType == cpu::DType::BF16)
          bf16 = r.timing.ms;
      }
    if (!(fp8 > 0) || !(bf16 > 0))
      return Status::invalidArgument(
          "the decode runs at context " + std::to_string(context) +
          " lack an fp8_e4m3 or a bf16 cache to compare");
    out = fp8 / bf16;
    return Status::ok();
  };
  if (Status s = ratio(shortest, t.fp8OverBf16Short); !s)
    return s;
  if (Status s = ratio(longest, t.fp8OverBf16Long); !s)
    return s;
  t.bandwidthMet = t.minFractionOfCopy >= kDecodeBandwidthTarget;
  t.fp8Met = t.fp8OverBf16Short <= 1.05 && t.fp8OverBf16Long < 1.0;
  return t;
}

} // namespace folio::gpubench
