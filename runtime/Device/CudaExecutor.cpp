//===- CudaExecutor.cpp - Runs a plan's forward on one GPU ----------------===//

#include "runtime/Device/CudaExecutor.h"

#include "codegen/CPU/KVCache.h"
#include "codegen/CPU/Rotary.h"
#include "codegen/CPU/ThreadPool.h"
#include "codegen/CUDA/Templates/KernelArgs.cuh"
#include "runtime/Device/CublasLt.h"
#include "runtime/Device/DevicePlan.h"
#include "runtime/Device/PlanLaunches.h"
#include "runtime/Executor/RotaryStep.h"
#include "runtime/Executor/RunVerify.h"
#include "runtime/Plan/VerifyEntries.h"
#include "runtime/Plan/VerifyWeights.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>
#include <type_traits>
#include <variant>

namespace folio::device {

namespace {

using exec::ForwardBatch;
using plan::DimSymbol;
using plan::ElemType;

CudaLaunch toLaunch(const cuda::LaunchGeometry &g) {
  CudaLaunch l;
  std::copy(g.grid, g.grid + 3, l.grid);
  std::copy(g.block, g.block + 3, l.block);
  l.dynamicShared = g.dynamicShared;
  return l;
}

/// Whether two rotary steps rotate by the same angles (one table serves
/// both).
bool sameFrequencies(const cpu::RotaryParams &a, const cpu::RotaryParams &b) {
  return a.rotaryDim == b.rotaryDim && a.base == b.base &&
         a.scaling == b.scaling && a.factor == b.factor &&
         a.lowFreqFactor == b.lowFreqFactor &&
         a.highFreqFactor == b.highFreqFactor &&
         a.originalMaxPositions == b.originalMaxPositions;
}

template <typename T> T *at(uintptr_t address) {
  return reinterpret_cast<T *>(address);
}

/// Device memory that only grows: a forward's sizes change every step, and
/// reallocating for each would cost a driver round trip per buffer. A
/// reallocation moves the buffer, so it advances `epoch`: CUDA graphs
/// captured before hold the old address.
struct GrowBuffer {
  DeviceBuffer buffer;

  Status reserve(const CudaDevice &dev, size_t bytes, const std::string &what,
                 uint64_t &epoch) {
    if (bytes <= buffer.bytes() && buffer.ptr() != 0)
      return Status::ok();
    ++epoch;
    size_t want = std::max<size_t>({bytes, buffer.bytes() * 3 / 2, 256});
    buffer = DeviceBuffer();
    Expected<DeviceBuffer> b = dev.allocate(want, what);
    if (!b)
      return b.status();
    buffer = std::move(*b);
    return Status::ok();
  }
  uintptr_t address() const { return uintptr_t(buffer.ptr()); }
};

/// One layer's cache on the device: the pools cpu::KVCacheView describes.
struct DeviceCache {
  cpu::KVCacheView format;
  DeviceBuffer k, v, kParams, vParams;
};

/// A cos/sin table for rotary steps that compute their angles: one per
/// distinct frequency set, grown as positions arrive.
struct RotaryTable {
  cpu::RotaryParams params;
  int64_t positions = 0;
  DeviceBuffer table;
};

struct GraphKey {
  int64_t batch = 0, context = 0;
  bool operator<(const GraphKey &o) const {
    return std::tie(batch, context) < std::tie(o.batch, o.context);
  }
};

class CudaExecutor final : public exec::Executor {
public:
  CudaExecutor(std::unique_ptr<CudaDevice> device,
               const exec::ExecutorOptions &options)
      : dev(std::move(device)), options(options) {
    // The host's share (verifying speculative tokens on the logits) runs
    // on the shared pool of the size asked for.
    if (options.numThreads > 0)
      sizedPool = &cpu::ThreadPool::shared(options.numThreads);
  }

  const char *deviceName() const override { return "cuda"; }

  Status load(std::shared_ptr<const plan::Plan> p) override {
    graphs.clear(); // before the kernels and buffers they launch with go
    samplers = {};
    plan.reset();
    onDevice.reset();
    caches.clear();
    if (!options.fusedKernels)
      return Status::invalidArgument(
          "the CUDA executor runs the compiler's kernels as generated; "
          "running them step by step is the CPU executor's");
    if (Status s = plan::validateStoredWeights(*p); !s)
      return s;
    if (Status s = plan::validateEntries(*p); !s)
      return s;
    if (Status s = planLaunches(*p, launches); !s)
      return s;
    for (size_t k = 0; k < launches.kernels.size(); ++k)
      if (!launches.kernels[k].complete)
        return Status::invalidArgument(
            "the CUDA executor cannot run the plan's " + p->kernels[k].kind +
            " kernel (kernel " + std::to_string(k) +
            "): no CUDA generator covers " + launches.kernels[k].why +
            "; run the plan with --device cpu");
    Expected<std::unique_ptr<DevicePlan>> loaded = DevicePlan::load(*dev, p);
    if (!loaded)
      return loaded.status();
    onDevice = std::move(*loaded);
    kernelOf.assign(launches.kernels.size(), {});
    prefillSteps.clear();
    for (size_t k = 0; k < launches.kernels.size(); ++k)
      for (const PlanLaunch &l : launches.kernels[k].launches) {
        Expected<const CudaKernel *> f = onDevice->kernel(l.name);
        if (!f)
          return Status::invalidArgument(
              "the plan's " + p->kernels[k].kind +
              " kernel needs CUDA kernel " + l.name +
              ", which the plan does not embed: it was compiled by another "
              "folioc; recompile it with this one (folioc --target=" +
              dev->arch() + ")");
        kernelOf[k].push_back(*f);
        if (l.role == LaunchRole::Prefill)
          prefillSteps.insert(l.step);
      }
    // The samplers, where the plan embeds them (an older plan's tokens are
    // taken on the host).
    for (const PlanLaunch &l : launches.samplers) {
      const auto &spec = std::get<cuda::SampleSpec>(l.spec);
      if (Expected<const CudaKernel *> f = onDevice->kernel(l.name))
        samplers[size_t(spec.mode)] = {*f, spec};
    }
    if (Status s = placeValues(*p); !s)
      return s;
    cublas.reset();
    noCublas.clear();
    noFp8.clear();
    bool wantCublas = false;
    dequantBytes = 0;
    dequantMinRows = std::numeric_limits<int64_t>::max();
    for (const KernelLaunches &k : launches.kernels)
      for (const PlanLaunch &l : k.launches) {
        wantCublas |= l.role == LaunchRole::CublasInput;
        if (l.role != LaunchRole::CublasWeight)
          continue;
        const plan::StoredWeight &w = p->weights[size_t(l.weight)];
        dequantBytes = std::max(dequantBytes, 2 * w.n * w.k);
        dequantMinRows = std::min(
            dequantMinRows, cublasMinRows(std::get<cuda::LinearSpec>(l.spec)));
      }
    if (wantCublas)
      if (Expected<std::unique_ptr<CublasLt>> lt = CublasLt::open(*dev))
        cublas = std::move(*lt);
    fp8Gemms = dev->major() * 10 + dev->minor() >= 89;
    if (Status s = prepareRotary(*p); !s)
      return s;
    layout = {};
    formats.clear();
    for (const plan::Argument &a : p->inputs) {
      const plan::ValueInfo &v = p->values[size_t(a.value)];
      if (v.kind != plan::ValueInfo::Kind::KVCache)
        continue;
      cpu::KVCacheView f;
      int group = 0;
      if (Status s =
              cudaCacheFormat(v, "KV cache '" + a.name + "'", f.dtype, group);
          !s)
        return s;
      f.group = group;
      f.blockSize = v.blockSize;
      f.numKvHeads = v.kvHeads;
      f.headDim = v.headDim;
      formats[a.value] = f;
      ++layout.numLayers;
      layout.blockSize = v.blockSize;
      layout.bytesPerBlock +=
          v.blockSize *
          int64_t(cpu::kvBytesPerToken(f.dtype, v.kvHeads, v.headDim, f.group,
                                       v.blockSize));
      layout.bytesPerBlock16 += v.blockSize * 2 * v.kvHeads * v.headDim * 2;
    }
    weightBytes = p->storedWeightBytes();
    // Contexts rounded up to a multiple of every decode partition split
    // into the same partitions as the context itself (see graphKey).
    contextGranule = 0;
    for (const KernelLaunches &k : launches.kernels)
      for (const PlanLaunch &l : k.launches)
        if (l.role == LaunchRole::DecodeMain)
          contextGranule = std::gcd(
              contextGranule,
              int64_t(std::get<cuda::PagedDecodeSpec>(l.spec).partition));
    if (contextGranule <= 0)
      contextGranule = 256;
    plan = std::move(p);
    return Status::ok();
  }

  exec::KVCacheLayout kvCacheLayout() const override { return layout; }

  Status allocateKVCache(int64_t numBlocks) override {
    if (!plan)
      return Status::invalidArgument("no plan is loaded");
    if (numBlocks < 2)
      return Status::invalidArgument("the KV cache needs at least 2 blocks");
    caches.clear();
    ++addressEpoch; // graphs captured before read the old pools
    for (const auto &[value, format] : formats) {
      DeviceCache c;
      c.format = format;
      c.format.numBlocks = numBlocks;
      struct Pool {
        DeviceBuffer *buffer;
        size_t bytes;
        const char *what;
      };
      for (Pool pool : {Pool{&c.k, c.format.poolBytes(), "the K cache"},
                        Pool{&c.v, c.format.poolBytes(), "the V cache"},
                        Pool{&c.kParams, c.format.kParamPoolBytes(),
                             "the K cache's scales"},
                        Pool{&c.vParams, c.format.vParamPoolBytes(),
                             "the V cache's scales"}}) {
        if (pool.bytes == 0)
          continue;
        Expected<DeviceBuffer> b = dev->allocate(pool.bytes, pool.what);
        if (!b)
          return b.status();
        // Zeroed like the CPU's pools: the null block reads as zeros.
        if (Status s = dev->fill(*b, 0); !s)
          return s;
        *pool.buffer = std::move(*b);
      }
      caches[value] = std::move(c);
    }
    return Status::ok();
  }

  Status forward(const ForwardBatch &in, std::vector<float> &logits,
                 int64_t &vocab) override {
    if (Status s = runForward(in); !s)
      return s;
    if (Status s = readLogits(logits, vocab, int64_t(in.logitsIndices.size()));
        !s)
      return s;
    if (Status s = mark([] { return "logits to the host"; }); !s)
      return s;
    return options.profile ? addToProfile() : Status::ok();
  }

  bool greedyOnDevice() const override {
    return sampler(cuda::SampleMode::Greedy).kernel;
  }
  bool samplesOnDevice() const override {
    return sampler(cuda::SampleMode::Draw).kernel;
  }
  bool penalizesOnDevice() const override {
    return sampler(cuda::SampleMode::Penalize).kernel &&
           sampler(cuda::SampleMode::Draw).kernel;
  }
  bool logprobsOnDevice() const override {
    return sampler(cuda::SampleMode::Logprobs).kernel &&
           sampler(cuda::SampleMode::Draw).kernel;
  }
  bool verifiesOnDevice() const override {
    return sampler(cuda::SampleMode::Verify).kernel &&
           sampler(cuda::SampleMode::Draw).kernel;
  }
  /// Whether `rows` are a reservation on this executor's device (its
  /// context's addresses).
  bool onThisDevice(const exec::DeviceProbRows &rows) const {
    return dev && rows.owner == dev->contextId() && rows.address != 0;
  }
  bool verifiesDraftProbs(const exec::DeviceProbRows &rows) const override {
    int64_t vocab = 0;
    uintptr_t logits = 0;
    return onThisDevice(rows) && logitsOnDevice(vocab, logits) &&
           rows.vocab == vocab && verifiesOnDevice() && penalizesOnDevice() &&
           logprobsOnDevice();
  }
  Status readDraftProbs(const exec::DeviceProbRows &rows, int64_t first,
                        int64_t count, float *out) const override {
    if (!onThisDevice(rows))
      return Status::invalidArgument(
          "the draft distributions to read are not on this executor's device");
    if (first < 0 || count < 0 || first > rows.rows ||
        count > rows.rows - first)
      return Status::invalidArgument(
          "draft distribution rows [" + std::to_string(first) + ", +" +
          std::to_string(count) + ") are outside the " +
          std::to_string(rows.rows) + " reserved");
    return dev->copyToHostFrom(
        out, cu::DevicePtr(rows.address + size_t(first * rows.vocab) * 4),
        size_t(count * rows.vocab) * 4);
  }
  Expected<exec::DeviceProbRows> reserveDraftProbs(int64_t rows) override {
    if (!dev || !plan)
      return Status::invalidArgument("no plan is loaded");
    int64_t vocab = 0;
    uintptr_t logits = 0;
    if (Status s = logitsOnDevice(vocab, logits); !s)
      return s;
    if (rows < 1 || rows > (int64_t(1) << 31) / vocab)
      return Status::invalidArgument(
          std::to_string(rows) + " rows of draft distributions of " +
          std::to_string(vocab) + " tokens: want 1 to " +
          std::to_string((int64_t(1) << 31) / vocab));
    // Outside the graphs: no captured launch reads them.
    uint64_t outsideGraphs = 0;
    if (Status s = draftProbs.reserve(*dev, size_t(rows * vocab) * 4,
                                      "the draft distributions", outsideGraphs);
        !s)
      return s;
    draftProbRows = rows;
    return exec::DeviceProbRows{draftProbs.address(), rows, vocab,
                                dev->contextId()};
  }

  Status forwardGreedy(const ForwardBatch &in, std::vector<int32_t> &tokens,
                       int64_t &vocab) override {
    return sampleOnDevice(in, nullptr, nullptr, nullptr, tokens, nullptr,
                          vocab);
  }
  Status forwardSampled(const ForwardBatch &in,
                        const std::vector<exec::DeviceDraw> &draws,
                        std::vector<int32_t> &tokens,
                        std::vector<exec::DeviceLogprobs> &logprobs,
                        int64_t &vocab) override {
    return sampleOnDevice(in, &draws, nullptr, nullptr, tokens, &logprobs,
                          vocab);
  }
  Status forwardVerified(const ForwardBatch &in,
                         const exec::DeviceVerify &verify,
                         const std::vector<exec::DeviceDraw> &draws,
                         std::vector<int32_t> &accepted,
                         std::vector<int32_t> &tokens,
                         std::vector<exec::DeviceLogprobs> &logprobs,
                         int64_t &vocab) override {
    return sampleOnDevice(in, &draws, &verify, &accepted, tokens, &logprobs,
                          vocab);
  }

  /// An error naming the first entry of a penalty list outside `vocab`
  /// or counted below 0, or lists of different lengths.
  static Status checkPenaltyList(const std::vector<int32_t> &tokens,
                                 const std::vector<int32_t> &counts,
                                 const std::string &what, int64_t vocab) {
    if (tokens.size() != counts.size())
      return Status::invalidArgument(
          what + ": " + std::to_string(tokens.size()) + " penalty tokens but " +
          std::to_string(counts.size()) + " counts");
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] < 0 || tokens[i] >= vocab || counts[i] < 0)
        return Status::invalidArgument(
            what + ": penalty token " + std::to_string(tokens[i]) + " (count " +
            std::to_string(counts[i]) + ") is outside the vocabulary of " +
            std::to_string(vocab) + " or counted below 0");
    return Status::ok();
  }

  /// An error naming the first draw a sampler cannot take, before anything
  /// runs. Greedy draws (temperature 0) read nothing else; `uniform`
  /// says whether the draw's uniform is read.
  static Status checkDraw(const exec::DeviceDraw &d, const std::string &what,
                          bool uniform, int64_t vocab) {
    if (d.logprobs < -1 || d.logprobs > folio_cuda::kMaxTopLogprobs)
      return Status::invalidArgument(
          what + ": " + std::to_string(d.logprobs) +
          " top logprobs; the device reports 0 to " +
          std::to_string(folio_cuda::kMaxTopLogprobs) + ", or -1 for none");
    if (d.penalized()) {
      if (!(d.repetitionPenalty > 0.0f) ||
          !std::isfinite(d.repetitionPenalty) ||
          !std::isfinite(d.frequencyPenalty) ||
          !std::isfinite(d.presencePenalty))
        return Status::invalidArgument(
            what + ": repetition penalty " +
            std::to_string(d.repetitionPenalty) + ", frequency " +
            std::to_string(d.frequencyPenalty) + ", presence " +
            std::to_string(d.presencePenalty) +
            " (penalties must be finite, repetition > 0)");
      if (Status s =
              checkPenaltyList(d.penaltyTokens, d.penaltyCounts, what, vocab);
          !s)
        return s;
    }
    if (d.temperature == 0.0f)
      return Status::ok();
    if (!(d.temperature > 0.0f) || !std::isfinite(d.temperature) ||
        (uniform && !(d.uniform >= 0.0 && d.uniform < 1.0)) ||
        !(d.topP > 0.0f) || !(d.minP >= 0.0f && d.minP <= 1.0f))
      return Status::invalidArgument(
          what + ": temperature " + std::to_string(d.temperature) + ", top_p " +
          std::to_string(d.topP) + ", min_p " + std::to_string(d.minP) +
          (uniform ? ", uniform " + std::to_string(d.uniform) : "") +
          " (temperature must be finite and > 0, or 0 for greedy; top_p > 0, "
          "min_p in [0, 1]" +
          (uniform ? " and the uniform in [0, 1))" : ")"));
    return Status::ok();
  }

  /// An error naming what of `v` the verifier cannot take (counts, sizes,
  /// a sequence's processing, a draft outside `vocab` or after -1 padding,
  /// a uniform outside [0, 1), q rows not in a draft executor's
  /// reservation on this device or for a greedy sequence), before anything
  /// runs.
  Status checkVerify(const exec::DeviceVerify &v, int64_t vocab) const {
    const int64_t S = v.numSeqs, K = v.numDraft;
    if (S < 0 || K < 0)
      return Status::invalidArgument("verification of " + std::to_string(S) +
                                     " sequences of " + std::to_string(K) +
                                     " drafts: counts must be >= 0");
    if (int64_t(v.params.size()) != S || int64_t(v.drafts.size()) != S * K ||
        int64_t(v.uniforms.size()) != S * (K + 1))
      return Status::invalidArgument(
          "verification of " + std::to_string(S) + " sequences of " +
          std::to_string(K) + " drafts has " + std::to_string(v.params.size()) +
          " parameter sets, " + std::to_string(v.drafts.size()) +
          " drafts and " + std::to_string(v.uniforms.size()) +
          " uniforms (want " + std::to_string(S) + ", " +
          std::to_string(S * K) + " and " + std::to_string(S * (K + 1)) + ")");
    bool penalties = false;
    for (const exec::DeviceDraw &d : v.params)
      penalties |= d.penalized();
    const size_t rows = size_t(S * (K + 1));
    if (penalties && (v.rowPenaltyTokens.size() != rows ||
                      v.rowPenaltyCounts.size() != rows))
      return Status::invalidArgument(
          "verification of " + std::to_string(S) + " sequences of " +
          std::to_string(K) + " drafts with penalties has " +
          std::to_string(v.rowPenaltyTokens.size()) + " and " +
          std::to_string(v.rowPenaltyCounts.size()) +
          " row penalty lists (want " + std::to_string(rows) +
          " each: the drafts before a row are its history)");
    const exec::DeviceProbRows &q = v.draftProbs;
    if (!v.probRows.empty()) {
      if (int64_t(v.probRows.size()) != S)
        return Status::invalidArgument(
            "verification of " + std::to_string(S) + " sequences has " +
            std::to_string(v.probRows.size()) + " draft distribution rows");
      if (!onThisDevice(q) || q.vocab != vocab)
        return Status::invalidArgument(
            "the draft distributions to verify against are not on this "
            "executor's device, or not of its vocabulary of " +
            std::to_string(vocab) + " (they hold " + std::to_string(q.vocab) +
            ")");
    }
    for (int64_t i = 0; i < S; ++i) {
      std::string seq = "verified sequence " + std::to_string(i);
      if (Status s = checkDraw(v.params[size_t(i)], seq, false, vocab); !s)
        return s;
      for (int64_t j = 0; penalties && j <= K; ++j)
        if (Status s =
                checkPenaltyList(v.rowPenaltyTokens[size_t(i * (K + 1) + j)],
                                 v.rowPenaltyCounts[size_t(i * (K + 1) + j)],
                                 seq + ", row " + std::to_string(j), vocab);
            !s)
          return s;
      int64_t k = K; // drafts before the -1 padding
      for (int64_t j = 0; j < K; ++j) {
        int32_t t = v.drafts[size_t(i * K + j)];
        const bool padded = j > k;
        if (t < -1 || t >= vocab || (padded && t != -1))
          return Status::invalidArgument(
              seq + ", draft " + std::to_string(j) + ": token " +
              std::to_string(t) +
              (padded && t != -1
                   ? " follows -1 padding"
                   : " is outside the vocabulary of " + std::to_string(vocab)));
        if (t == -1 && k == K)
          k = j;
      }
      const int32_t first = v.probRows.empty() ? -1 : v.probRows[size_t(i)];
      const bool greedy = v.params[size_t(i)].temperature == 0.0f;
      if (first != -1 && (first < -1 || greedy || int64_t(first) + k > q.rows))
        return Status::invalidArgument(
            seq + ": draft distribution rows from " + std::to_string(first) +
            (greedy ? " for a greedy sequence (it reads none)"
                    : " for " + std::to_string(k) + " drafts, past the " +
                          std::to_string(q.rows) + " rows reserved"));
      for (int64_t j = 0; j <= K; ++j) {
        float u = v.uniforms[size_t(i * (K + 1) + j)];
        if (!(u >= 0.0f && u < 1.0f))
          return Status::invalidArgument(
              seq + ", uniform " + std::to_string(j) + " is " +
              std::to_string(u) + "; uniforms must be in [0, 1)");
      }
    }
    return Status::ok();
  }

  /// The forward, then the plan's samplers over the step's own logits rows
  /// (a padded step's extra rows are not read): the greedy one (no
  /// `draws`), or the verifier over the first S x (K + 1) rows (`verify`)
  /// and the top-k / top-p one over the rest (`draws`), then the logprobs
  /// the draws ask for. Only tokens (and logprobs) come back.
  Status sampleOnDevice(const ForwardBatch &in,
                        const std::vector<exec::DeviceDraw> *draws,
                        const exec::DeviceVerify *verify,
                        std::vector<int32_t> *accepted,
                        std::vector<int32_t> &tokens,
                        std::vector<exec::DeviceLogprobs> *logprobs,
                        int64_t &vocab) {
    // The plain rows' sampler.
    const cuda::SampleMode plainMode =
        draws ? cuda::SampleMode::Draw : cuda::SampleMode::Greedy;
    auto missing = [&](const char *what) {
      return Status::invalidArgument(
          std::string("the plan embeds no ") + what +
          " for the device (it was compiled by an older folioc; "
          "recompile it with folioc --target=" +
          dev->arch() + ")");
    };
    if (verify && !sampler(cuda::SampleMode::Verify).kernel)
      return missing("verifier of drafts");
    if (!sampler(plainMode).kernel)
      return missing(draws ? "top-k / top-p sampler" : "greedy sampler");
    const int64_t rows = int64_t(in.logitsIndices.size());
    const int64_t verifyRows =
        verify ? verify->numSeqs * (verify->numDraft + 1) : 0;
    // The vocabulary now, to check drafts and penalty tokens before anything
    // runs; the logits' address after the forward, which may move them.
    uintptr_t logits = 0;
    if (Status s = logitsOnDevice(vocab, logits); !s)
      return s;
    if (verify) {
      if (Status s = checkVerify(*verify, vocab); !s)
        return s;
      if (verifyRows > rows)
        return Status::invalidArgument(
            "verification of " + std::to_string(verify->numSeqs) +
            " sequences of " + std::to_string(verify->numDraft) +
            " drafts needs " + std::to_string(verifyRows) +
            " logits rows; the batch has " + std::to_string(rows));
    }
    const int64_t plainRows = rows - verifyRows;
    bool penalties = false, verifyPenalties = false, verifyLogprobs = false,
         plainLogprobs = false;
    // Whether the verifier reads a draft model's q rows (checkVerify
    // checked them), and whether the draws keep theirs.
    bool readProbs = false, keepProbs = false;
    if (verify) {
      for (const exec::DeviceDraw &d : verify->params) {
        verifyPenalties |= d.penalized();
        verifyLogprobs |= d.logprobs >= 0;
      }
      for (int32_t row : verify->probRows)
        readProbs |= row >= 0;
    }
    if (draws) {
      if (int64_t(draws->size()) != plainRows)
        return Status::invalidArgument(
            std::to_string(draws->size()) + " draws for " +
            std::to_string(plainRows) + " logits rows");
      for (size_t r = 0; r < draws->size(); ++r) {
        const exec::DeviceDraw &d = (*draws)[r];
        const std::string what = "draw " + std::to_string(r);
        if (Status s = checkDraw(d, what, true, vocab); !s)
          return s;
        // A q row to keep: within what reserveDraftProbs reserved, and
        // only where the draw samples.
        if (d.probsRow != -1 &&
            (d.probsRow < -1 || d.probsRow >= draftProbRows ||
             d.temperature == 0.0f))
          return Status::invalidArgument(
              what + ": distribution row " + std::to_string(d.probsRow) +
              (d.temperature == 0.0f
                   ? " for a greedy draw (it has no distribution to keep)"
                   : " is outside the " + std::to_string(draftProbRows) +
                         " rows reserveDraftProbs reserved"));
        penalties |= d.penalized();
        plainLogprobs |= d.logprobs >= 0;
        keepProbs |= d.probsRow >= 0;
      }
    }
    penalties |= verifyPenalties;
    if (penalties && !sampler(cuda::SampleMode::Penalize).kernel)
      return missing("penalties kernel");
    const bool wantLogprobs = verifyLogprobs || plainLogprobs;
    if (wantLogprobs && !sampler(cuda::SampleMode::Logprobs).kernel)
      return missing("logprobs kernel");
    if (Status s = runForward(in); !s)
      return s;
    if (Status s = checkGatherFlag(rows); !s)
      return s;
    if (Status s = logitsOnDevice(vocab, logits); !s)
      return s;
    tokens.assign(size_t(rows), -1);
    if (accepted)
      accepted->assign(size_t(verify->numSeqs), -1);
    if (logprobs)
      logprobs->assign(size_t(rows), {});
    if (rows > 0) {
      // The samplers run outside the graphs: their buffers moving drops
      // none. Tokens, then the accepted counts, then (wantLogprobs) every
      // row's logprobs: each row's token's, then kMaxTopLogprobs top tokens
      // and their logprobs per row.
      const size_t numSeqs = verify ? size_t(verify->numSeqs) : 0;
      const size_t logprobsAt = (size_t(rows) + numSeqs) * 4,
                   topStride = size_t(folio_cuda::kMaxTopLogprobs),
                   logprobsBytes = wantLogprobs
                                       ? size_t(rows) * 4 * (1 + 2 * topStride)
                                       : 0;
      // Then the keep sets the draw and the verifier record for the
      // logprobs kernel, one per row.
      constexpr size_t keepSize = sizeof(folio_cuda::RowKeep);
      const size_t keepAt = (logprobsAt + logprobsBytes + 15) / 16 * 16,
                   keepBytes = wantLogprobs ? size_t(rows) * keepSize : 0;
      auto keepOf = [&](size_t first) {
        return wantLogprobs ? at<folio_cuda::RowKeep>(sampled.address() +
                                                      keepAt + first * keepSize)
                            : nullptr;
      };
      uint64_t outsideGraphs = 0;
      if (Status s = sampled.reserve(*dev, keepAt + keepBytes, "the tokens",
                                     outsideGraphs);
          !s)
        return s;
      if (Status s = uploadDraws(draws, verify, penalties, wantLogprobs,
                                 keepProbs || readProbs, outsideGraphs);
          !s)
        return s;
      uintptr_t base = drawParams.address();
      auto packed = [&](size_t n, size_t first, folio_cuda::SampleArgs &a) {
        // drawBytes' layout (uploadDraws): uniforms, temperatures, top_k,
        // top_p, min_p, each n entries, from entry `first`.
        a.uniform = at<const double>(base + 8 * first);
        a.temperature = at<const float>(base + 8 * n + 4 * first);
        a.topK = at<const int>(base + 12 * n + 4 * first);
        a.topP = at<const float>(base + 16 * n + 4 * first);
        a.minP = at<const float>(base + 20 * n + 4 * first);
      };
      const size_t n = numSeqs + (draws ? draws->size() : 0);
      // Penalties first, in place: every row from the first verified one
      // where a verified sequence has them (each row with its own
      // history), else the plain rows.
      const size_t penaltyFirst = verifyPenalties ? 0 : size_t(verifyRows);
      if (penalties && size_t(rows) > penaltyFirst) {
        folio_cuda::SampleArgs a{};
        a.penalized = at<float>(logits + 4 * penaltyFirst * size_t(vocab));
        a.stride = vocab;
        a.vocab = int(vocab);
        // uploadDraws' layout: repetition, frequency and presence per row,
        // the entries' starts, then their tokens and counts.
        const uintptr_t p = base + penaltyOffset;
        const size_t R = size_t(rows), f = penaltyFirst;
        a.repetition = at<const float>(p + 4 * f);
        a.frequency = at<const float>(p + 4 * (R + f));
        a.presence = at<const float>(p + 4 * (2 * R + f));
        a.penaltyStart = at<const int>(p + 4 * (3 * R + f));
        a.penaltyTokens = at<const int>(p + 16 * R + 4);
        a.penaltyCounts = at<const int>(p + 16 * R + 4 + 4 * penaltyEntries);
        if (Status s = launchSampler(cuda::SampleMode::Penalize, int64_t(R - f),
                                     a, "the penalties", "penalties");
            !s)
          return s;
      }
      if (verify && numSeqs > 0) {
        const size_t K = size_t(verify->numDraft);
        folio_cuda::SampleArgs a{};
        a.logits = at<const float>(logits);
        a.stride = vocab;
        a.vocab = int(vocab);
        a.tokens = at<int>(sampled.address());
        packed(n, 0, a);
        a.numDraft = int(K);
        const uintptr_t extra = base + 24 * n;
        a.drafts = at<const int>(extra);
        a.uniforms = at<const float>(extra + 4 * numSeqs * K);
        a.accepted = at<int>(sampled.address() + 4 * size_t(rows));
        a.keep = verifyLogprobs ? keepOf(0) : nullptr;
        if (readProbs) {
          a.probs = at<float>(verify->draftProbs.address);
          a.probRows = at<const int>(base + probRowsOffset);
        }
        if (Status s =
                launchSampler(cuda::SampleMode::Verify, int64_t(numSeqs), a,
                              "the verifier of drafts", "verify (drafts)");
            !s)
          return s;
      }
      if (plainRows > 0) {
        folio_cuda::SampleArgs a{};
        a.logits = at<const float>(logits + 4 * size_t(verifyRows * vocab));
        a.stride = vocab;
        a.vocab = int(vocab);
        a.tokens = at<int>(sampled.address() + 4 * size_t(verifyRows));
        if (draws)
          packed(n, numSeqs, a);
        if (draws && plainLogprobs)
          a.keep = keepOf(size_t(verifyRows));
        if (keepProbs) {
          a.probs = at<float>(draftProbs.address());
          a.probRows = at<const int>(base + probRowsOffset + 4 * numSeqs);
        }
        if (Status s = launchSampler(
                plainMode, plainRows, a,
                draws ? "the top-k / top-p sampler" : "the greedy sampler",
                draws ? "sample (top-k / top-p)" : "sample (greedy)");
            !s)
          return s;
      }
      // The logprobs of rows [first, first + count): a verified
      // sequence's rows take its settings (numDraft + 1 rows each), a plain
      // row its draw's.
      auto launchLogprobs = [&](size_t first, size_t count) -> Status {
        folio_cuda::SampleArgs a{};
        a.logits = at<const float>(logits + 4 * first * size_t(vocab));
        a.stride = vocab;
        a.vocab = int(vocab);
        a.tokens = at<int>(sampled.address() + 4 * first);
        const bool verified = first < size_t(verifyRows);
        const size_t param = verified ? 0 : numSeqs + first - verifyRows;
        packed(n, param, a);
        a.numDraft = verified ? int(verify->numDraft) : 0;
        a.numTop = at<const int>(base + logprobsOffset + 4 * param);
        const uintptr_t out = sampled.address() + logprobsAt;
        const size_t R = size_t(rows);
        a.logprob = at<float>(out + 4 * first);
        a.topTokens = at<int>(out + 4 * (R + first * topStride));
        a.topLogprobs =
            at<float>(out + 4 * (R * (1 + topStride) + first * topStride));
        a.keep = keepOf(first);
        return launchSampler(cuda::SampleMode::Logprobs, int64_t(count), a,
                             "the logprobs", "logprobs");
      };
      if (verifyLogprobs && verifyRows > 0)
        if (Status s = launchLogprobs(0, size_t(verifyRows)); !s)
          return s;
      if (plainLogprobs && plainRows > 0)
        if (Status s = launchLogprobs(size_t(verifyRows), size_t(plainRows));
            !s)
          return s;
      if (Status s = dev->copyToHost(tokens.data(), sampled.buffer, 0,
                                     tokens.size() * 4);
          !s)
        return s;
      if (accepted && numSeqs > 0)
        if (Status s = dev->copyToHost(accepted->data(), sampled.buffer,
                                       4 * size_t(rows), numSeqs * 4);
            !s)
          return s;
      if (wantLogprobs)
        if (Status s = logprobsToHost(verify, *draws, tokens, logprobsAt, vocab,
                                      *logprobs);
            !s)
          return s;
    }
    if (Status s = mark([] { return "tokens to the host"; }); !s)
      return s;
    return options.profile ? addToProfile() : Status::ok();
  }

  /// Launches the plan's sampler of `mode` over `blocks` rows (or
  /// sequences) with `a`, then marks the profile's `kind`; a failure is
  /// named `what`.
  Status launchSampler(cuda::SampleMode mode, int64_t blocks,
                       const folio_cuda::SampleArgs &a, const char *what,
                       const char *kind) {
    const Sampler &s = sampler(mode);
    if (Status st = dev->launch(
            *s.kernel, toLaunch(cuda::sampleLaunch(s.spec, blocks)), &a);
        !st)
      return Status::error(st.code(), std::string(what) + ": " + st.message());
    return mark([kind] { return kind; });
  }

  /// Every row's logprobs (sampleOnDevice's layout in `sampled`, from byte
  /// `at`) into one entry per row whose sequence or draw asked and which
  /// has a token: the verified rows (`verify`), then the plain ones.
  Status logprobsToHost(const exec::DeviceVerify *verify,
                        const std::vector<exec::DeviceDraw> &draws,
                        const std::vector<int32_t> &rowTokens, size_t at,
                        int64_t vocab, std::vector<exec::DeviceLogprobs> &out) {
    const size_t R = rowTokens.size(), topStride = folio_cuda::kMaxTopLogprobs;
    const size_t verifyRows =
        verify ? size_t(verify->numSeqs * (verify->numDraft + 1)) : 0;
    logprobBytes.resize(R * 4 * (1 + 2 * topStride));
    if (Status s = dev->copyToHost(logprobBytes.data(), sampled.buffer, at,
                                   logprobBytes.size());
        !s)
      return s;
    const unsigned char *bytes = logprobBytes.data();
    for (size_t r = 0; r < R; ++r) {
      const int32_t want =
          r < verifyRows
              ? verify->params[r / size_t(verify->numDraft + 1)].logprobs
              : draws[r - verifyRows].logprobs;
      if (want < 0 || rowTokens[r] < 0)
        continue;
      exec::DeviceLogprobs &l = out[r];
      std::memcpy(&l.logprob, bytes + 4 * r, 4);
      // Never more than the vocabulary holds, as the host reports them.
      const size_t top = std::min<size_t>(size_t(want), size_t(vocab));
      l.topTokens.resize(top);
      l.topLogprobs.resize(top);
      std::memcpy(l.topTokens.data(), bytes + 4 * (R + r * topStride), 4 * top);
      std::memcpy(l.topLogprobs.data(),
                  bytes + 4 * (R * (1 + topStride) + r * topStride), 4 * top);
    }
    return Status::ok();
  }

  /// One upload per step of what the samplers read: per draw (the verified
  /// sequences' parameters first, then `draws`) the uniforms (8-byte
  /// aligned at the front), temperatures, top_k, top_p and min_p; then the
  /// verification's drafts and uniforms; then, where `penalties` (some
  /// draw or verified sequence is penalized), every row's penalties (a
  /// verified row's with its own list); then, where
  /// `logprobs` (some draw asks for them), every draw's number of top
  /// logprobs (-1: none). Nothing for greedy steps.
  Status uploadDraws(const std::vector<exec::DeviceDraw> *draws,
                     const exec::DeviceVerify *verify, bool penalties,
                     bool logprobs, bool probRows, uint64_t &outsideGraphs) {
    if (!draws)
      return Status::ok();
    const size_t numVerified = verify ? verify->params.size() : 0;
    const size_t n = numVerified + draws->size();
    auto drawAt = [&](size_t r) -> const exec::DeviceDraw & {
      return r < numVerified ? verify->params[r] : (*draws)[r - numVerified];
    };
    const size_t verifyBytes =
        verify ? 4 * (verify->drafts.size() + verify->uniforms.size()) : 0;
    // Every row's penalties, where any row has them: repetition,
    // frequency and presence per row, the entries' starts, then their
    // tokens and counts. A verified row takes its sequence's penalties
    // and its own list.
    const size_t perSeq = verify ? size_t(verify->numDraft) + 1 : 1;
    const size_t R = numVerified * perSeq + draws->size();
    struct RowPenalty {
      const exec::DeviceDraw *values; // null: none
      const std::vector<int32_t> *tokens, *counts;
    };
    auto rowPenalty = [&](size_t r) -> RowPenalty {
      if (r < numVerified * perSeq) {
        const exec::DeviceDraw &d = verify->params[r / perSeq];
        if (!d.penalized())
          return {nullptr, nullptr, nullptr};
        return {&d, &verify->rowPenaltyTokens[r], &verify->rowPenaltyCounts[r]};
      }
      const exec::DeviceDraw &d = (*draws)[r - numVerified * perSeq];
      if (!d.penalized())
        return {nullptr, nullptr, nullptr};
      return {&d, &d.penaltyTokens, &d.penaltyCounts};
    };
    penaltyOffset = n * (8 + 4 + 4 + 4 + 4) + verifyBytes;
    penaltyEntries = 0;
    for (size_t r = 0; penalties && r < R; ++r)
      if (RowPenalty rp = rowPenalty(r); rp.values)
        penaltyEntries += rp.tokens->size();
    const size_t penaltyBytes = penalties ? 16 * R + 4 + 8 * penaltyEntries : 0;
    logprobsOffset = penaltyOffset + penaltyBytes;
    probRowsOffset = logprobsOffset + (logprobs ? 4 * n : 0);
    drawBytes.resize(probRowsOffset + (probRows ? 4 * n : 0));
    if (drawBytes.empty())
      return Status::ok();
    unsigned char *at0 = drawBytes.data();
    for (size_t r = 0; r < n; ++r) {
      const exec::DeviceDraw &d = drawAt(r);
      std::memcpy(at0 + 8 * r, &d.uniform, 8);
      std::memcpy(at0 + 8 * n + 4 * r, &d.temperature, 4);
      std::memcpy(at0 + 12 * n + 4 * r, &d.topK, 4);
      std::memcpy(at0 + 16 * n + 4 * r, &d.topP, 4);
      std::memcpy(at0 + 20 * n + 4 * r, &d.minP, 4);
    }
    if (verify) {
      unsigned char *extra = at0 + 24 * n;
      std::memcpy(extra, verify->drafts.data(), 4 * verify->drafts.size());
      std::memcpy(extra + 4 * verify->drafts.size(), verify->uniforms.data(),
                  4 * verify->uniforms.size());
    }
    if (penalties) {
      unsigned char *p = at0 + penaltyOffset;
      int32_t start = 0;
      size_t entry = 0;
      const exec::DeviceDraw off;
      for (size_t r = 0; r < R; ++r) {
        const RowPenalty rp = rowPenalty(r);
        const exec::DeviceDraw &d = rp.values ? *rp.values : off;
        std::memcpy(p + 4 * r, &d.repetitionPenalty, 4);
        std::memcpy(p + 4 * (R + r), &d.frequencyPenalty, 4);
        std::memcpy(p + 4 * (2 * R + r), &d.presencePenalty, 4);
        std::memcpy(p + 4 * (3 * R + r), &start, 4);
        const size_t k = rp.values ? rp.tokens->size() : 0;
        if (k == 0) // (an empty list's data() may be null)
          continue;
        std::memcpy(p + 16 * R + 4 + 4 * entry, rp.tokens->data(), 4 * k);
        std::memcpy(p + 16 * R + 4 + 4 * (penaltyEntries + entry),
                    rp.counts->data(), 4 * k);
        entry += k;
        start += int32_t(k);
      }
      std::memcpy(p + 4 * (4 * R), &start, 4);
    }
    if (logprobs)
      for (size_t r = 0; r < n; ++r)
        std::memcpy(at0 + logprobsOffset + 4 * r, &drawAt(r).logprobs, 4);
    // Each verified sequence's first q row (-1: one-hot), then each draw's
    // row to keep its q in (-1: none).
    for (size_t r = 0; probRows && r < n; ++r) {
      int32_t row = r < numVerified
                        ? (verify->probRows.empty() ? -1 : verify->probRows[r])
                        : (*draws)[r - numVerified].probsRow;
      std::memcpy(at0 + probRowsOffset + 4 * r, &row, 4);
    }
    if (Status s = drawParams.reserve(*dev, drawBytes.size(), "the draws",
                                      outsideGraphs);
        !s)
      return s;
    return dev->copyToDevice(drawParams.buffer, 0, drawBytes.data(),
                             drawBytes.size());
  }

  /// The step's launches (as a graph or eagerly), up to its logits on the
  /// device.
  Status runForward(const ForwardBatch &in) {
    if (!plan)
      return Status::invalidArgument("no plan is loaded");
    if (caches.size() != formats.size())
      return Status::invalidArgument(
          "the KV cache is not allocated (allocateKVCache)");
    if (Status st = exec::checkForwardBatch(in); !st)
      return st;
    // A decode step runs as a CUDA graph: the batch padded to its bucket
    // (see graphKey), every size a launch takes fixed by the key.
    std::optional<GraphKey> key = graphKey(in);
    if (key)
      padForGraph(in, *key);
    const ForwardBatch &b = key ? padded : in;
    counts = {int64_t(b.tokens.size()), int64_t(b.logitsIndices.size()),
              int64_t(b.seqLens.size())};
    batch = &b;
    // Profiling: an event before the step and after each launch (and after
    // the uploads and the logits' read-back), each interval the device's
    // time for what was enqueued between them. `kind()` names what was, and
    // runs only when profiling: nothing is added per launch otherwise.
    // (Profiled steps never run as graphs: a graph is timed as a whole.)
    if (options.profile) {
      started = std::chrono::steady_clock::now();
      if (!timeline)
        timeline = std::make_unique<device::EventTimeline>(*dev);
      timeline->restart();
      marks.clear();
      if (Status s = timeline->record(); !s)
        return s;
    }
    if (Status s = bindInputs(b); !s)
      return s;
    // What every layer's attention picks its kernel and grid by.
    shape = {};
    for (size_t q = 0; q < b.seqLens.size(); ++q) {
      int64_t queries = b.queryStartLoc[q + 1] - b.queryStartLoc[q];
      shape.decodeOnly &= queries == 1;
      shape.maxQuery = std::max(shape.maxQuery, queries);
      shape.maxContext = std::max<int64_t>(shape.maxContext, b.seqLens[q]);
    }
    if (Status s = sizeBuffers(); !s)
      return s;
    if (Status s = growRotaryTables(b); !s)
      return s;
    if (Status s = dev->fill(errorFlag.buffer, 0); !s)
      return s;
    if (Status s = mark([] { return "inputs to the device"; }); !s)
      return s;
    return key ? runAsGraph(*key) : enqueueLaunches();
  }

  /// A profiled step's mark: the device and host time since the last one
  /// go to `kind()`. Nothing when not profiling.
  template <typename Kind> Status mark(const Kind &kind) {
    if (!options.profile)
      return Status::ok();
    auto now = std::chrono::steady_clock::now();
    marks.push_back(
        {kind(), std::chrono::duration<double>(now - started).count()});
    started = now;
    return timeline->record();
  }

  /// Every launch of the step, in the plan's order, on the device's
  /// stream (or into the graph it is capturing).
  Status enqueueLaunches() {
    cublasNext = fp8Next = false;
    for (size_t k = 0; k < launches.kernels.size(); ++k) {
      const KernelLaunches &group = launches.kernels[k];
      for (size_t i = 0; i < group.launches.size(); ++i) {
        enqueued = ranCublas = ranFp8 = false;
        if (Status s = run(k, i); !s)
          return Status::error(
              s.code(), "the " + plan->kernels[k].kind + " kernel (kernel " +
                            std::to_string(k) + "), " + group.launches[i].name +
                            ": " + s.message());
        if (enqueued)
          if (Status s = mark([&] { return launchKind(group.launches[i]); });
              !s)
            return s;
      }
    }
    return Status::ok();
  }

  /// The CUDA graph a step runs as, or none (eager). Graphs are for decode
  /// steps, where launches cost more than the kernels: every sequence
  /// brings one token and wants its logits, the batch is within the
  /// largest bucket, graphs are on and the step is not profiled. The key:
  /// the batch rounded up to its bucket (1, 2, 4, then multiples of 8),
  /// and the longest context rounded up to a multiple of contextGranule.
  /// That granule divides every decode kernel's partition, so each kernel
  /// splits the rounded context into as many partitions as the real one:
  /// a graph computes what the eager step would, bit for bit. Sequences
  /// whose lengths or block tables are out of range go the eager way,
  /// whose checks name them.
  std::optional<GraphKey> graphKey(const ForwardBatch &b) const {
    if (!options.cudaGraphs || graphsOff || options.profile ||
        layout.numLayers == 0)
      return std::nullopt;
    const int64_t n = int64_t(b.seqLens.size());
    if (n == 0 || n > kMaxGraphBatch || int64_t(b.tokens.size()) != n ||
        int64_t(b.logitsIndices.size()) != n)
      return std::nullopt;
    int64_t longest = 0;
    for (int64_t q = 0; q < n; ++q) {
      int64_t len = b.seqLens[size_t(q)];
      if (b.queryStartLoc[size_t(q) + 1] - b.queryStartLoc[size_t(q)] != 1 ||
          len < 1 ||
          (len + layout.blockSize - 1) / layout.blockSize > b.maxBlocks)
        return std::nullopt;
      longest = std::max(longest, len);
    }
    GraphKey key;
    key.batch = n <= 2 ? n : n <= 4 ? 4 : (n + 7) / 8 * 8;
    key.context =
        (longest + contextGranule - 1) / contextGranule * contextGranule;
    return key;
  }

  /// `padded` = `b` grown to the key's shape: sequences past b's repeat
  /// its last token at position 0 with a context of one token (the first
  /// slot of b's last sequence, already written) and write no KV (slot
  /// -1); each block table row is key.context's blocks wide, zero past
  /// what its sequence holds. Their logits rows come after b's and are not
  /// read back.
  void padForGraph(const ForwardBatch &b, const GraphKey &key) {
    const size_t n = b.seqLens.size(), rows = size_t(key.batch);
    const int64_t width =
        (key.context + layout.blockSize - 1) / layout.blockSize;
    ForwardBatch &p = padded;
    p.tokens.assign(b.tokens.begin(), b.tokens.end());
    p.tokens.resize(rows, b.tokens.back());
    p.positions.assign(b.positions.begin(), b.positions.end());
    p.positions.resize(rows, 0);
    p.queryStartLoc.resize(rows + 1);
    std::iota(p.queryStartLoc.begin(), p.queryStartLoc.end(), 0);
    p.seqLens.assign(b.seqLens.begin(), b.seqLens.end());
    p.seqLens.resize(rows, 1);
    p.maxBlocks = width;
    p.blockTables.assign(rows * size_t(width), 0);
    for (size_t q = 0; q < rows; ++q) {
      size_t from = std::min(q, n - 1) * size_t(b.maxBlocks);
      int64_t blocks =
          q < n ? (b.seqLens[q] + layout.blockSize - 1) / layout.blockSize : 1;
      std::copy_n(b.blockTables.begin() + std::ptrdiff_t(from), blocks,
                  p.blockTables.begin() + std::ptrdiff_t(q * size_t(width)));
    }
    p.slotMapping.assign(b.slotMapping.begin(), b.slotMapping.end());
    p.slotMapping.resize(rows, -1);
    p.logitsIndices.assign(b.logitsIndices.begin(), b.logitsIndices.end());
    for (size_t q = n; q < rows; ++q)
      p.logitsIndices.push_back(int32_t(q));
  }

  /// The step as its key's graph: replayed when captured before (and no
  /// buffer it reads has moved since), else run eagerly (first-use work,
  /// such as cuBLASLt's algorithm choice and shared-memory opt-ins, stays
  /// out of the graph) and then captured for the key's next step.
  ///
  /// A capture or replay the driver refuses (a driver without some graph
  /// feature, say) does not fail the step: graphs are turned off for the
  /// rest of this executor's life, with a warning, and the step runs (or
  /// has run) eagerly. A fault of the step itself fails it eagerly too.
  Status runAsGraph(const GraphKey &key) {
    if (graphsEpoch != addressEpoch) {
      graphs.clear();
      graphsEpoch = addressEpoch;
    }
    auto turnOff = [&](const char *what, const Status &s) {
      graphsOff = true;
      graphs.clear();
      if (options.warn)
        options.warn(std::string(what) + " decode steps of up to " +
                     std::to_string(key.batch) + " sequences (contexts up to " +
                     std::to_string(key.context) +
                     ") as a CUDA graph failed (" + s.message() +
                     "); decode steps run without CUDA graphs from now on, as "
                     "with --enforce-eager");
    };
    if (auto it = graphs.find(key); it != graphs.end()) {
      it->second.lastUse = ++useClock;
      Status s = dev->launchGraph(it->second.graph);
      if (s)
        return s;
      // Nothing of the graph ran: the step runs eagerly instead.
      turnOff("replaying", s);
      return enqueueLaunches();
    }
    if (Status s = enqueueLaunches(); !s)
      return s;
    // The step has run; what follows only records it for the next one.
    if (Status s = dev->beginCapture(); !s) {
      turnOff("capturing", s);
      return Status::ok();
    }
    Status captured = enqueueLaunches();
    Expected<CudaGraph> g = dev->endCapture();
    if (!captured || !g) {
      turnOff("capturing", !captured ? captured : g.status());
      return Status::ok();
    }
    if (graphs.size() >= kMaxGraphs) {
      auto oldest = graphs.begin();
      for (auto it = graphs.begin(); it != graphs.end(); ++it)
        if (it->second.lastUse < oldest->second.lastUse)
          oldest = it;
      graphs.erase(oldest);
    }
    graphs[key] = CapturedStep{std::move(*g), ++useClock};
    return Status::ok();
  }

  std::vector<exec::KindProfile> profile() const override {
    std::vector<exec::KindProfile> out;
    for (const auto &[kind, k] : profiled)
      out.push_back(k);
    std::sort(out.begin(), out.end(),
              [](const exec::KindProfile &a, const exec::KindProfile &b) {
                return a.seconds > b.seconds;
              });
    return out;
  }
  void resetProfile() override { profiled.clear(); }

  Status verify(const exec::VerifyBatch &v, std::vector<int32_t> &accepted,
                std::vector<int32_t> &tokens) override {
    if (!plan)
      return Status::invalidArgument("verify needs a loaded plan");
    // The logits are on the host already (forward read them back).
    return exec::runVerifyEntry(*plan, v, accepted, tokens,
                                sizedPool ? *sizedPool
                                          : cpu::ThreadPool::global());
  }

  int64_t linearWeightBytes() const override { return weightBytes; }

private:
  enum class Place : uint8_t { None, Constant, Input, Buffer, Own };

  /// Where every value a launch touches lives: the blob (constants), an
  /// upload (the contract's inputs), a buffer the compiler planned, or an
  /// allocation of its own (the output, and values it left unplanned).
  Status placeValues(const plan::Plan &p) {
    place.assign(p.values.size(), Place::None);
    constantOffset.assign(p.values.size(), 0);
    for (const plan::Constant &c : p.constants) {
      place[size_t(c.value)] = Place::Constant;
      constantOffset[size_t(c.value)] = c.offset;
    }
    for (const plan::Argument &a : p.inputs)
      if (p.values[size_t(a.value)].kind == plan::ValueInfo::Kind::Tensor)
        place[size_t(a.value)] = Place::Input;
    auto placeWritten = [&](int32_t v) -> Status {
      if (place[size_t(v)] != Place::None)
        return Status::ok();
      const plan::ValueInfo &info = p.values[size_t(v)];
      bool planned = options.plannedBuffers && info.buffer >= 0 &&
                     size_t(info.buffer) < p.buffers.size();
      if (!planned && plan::bufferBytes(info, 1, 1, 1) < 0)
        return Status::invalidArgument(
            "value " + std::to_string(v) +
            " has no size the CUDA executor can allocate");
      place[size_t(v)] = planned ? Place::Buffer : Place::Own;
      return Status::ok();
    };
    for (const KernelLaunches &k : launches.kernels)
      for (const PlanLaunch &l : k.launches)
        for (const LaunchOperand &o : l.outputs)
          if (o.value >= 0)
            if (Status s = placeWritten(o.value); !s)
              return s;
    if (!launches.outputsWhy.empty())
      return Status::invalidArgument("the CUDA executor cannot read the "
                                     "plan's logits: " +
                                     launches.outputsWhy);
    for (size_t k = 0; k < launches.kernels.size(); ++k)
      for (const PlanLaunch &l : launches.kernels[k].launches)
        for (const LaunchOperand &o : l.inputs)
          if (o.value >= 0 && place[size_t(o.value)] == Place::None &&
              p.values[size_t(o.value)].kind == plan::ValueInfo::Kind::Tensor)
            return Status::invalidArgument(
                "the plan's " + p.kernels[k].kind + " kernel reads value " +
                std::to_string(o.value) + ", which no launch writes");
    // One slot per value (most stay empty): operands index them directly.
    own.clear();
    own.resize(p.values.size());
    inputs.clear();
    inputs.resize(p.values.size());
    inputArgs.clear();
    buffers.clear();
    buffers.resize(p.buffers.size());
    for (const plan::Argument &a : p.inputs)
      if (p.values[size_t(a.value)].kind == plan::ValueInfo::Kind::Tensor)
        inputArgs.push_back(a);
    return Status::ok();
  }

  Status prepareRotary(const plan::Plan &p) {
    tables.clear();
    tableOf.clear();
    modelTableStep = -1;
    modelTableRows = 0;
    for (const KernelLaunches &k : launches.kernels)
      for (const PlanLaunch &l : k.launches) {
        const auto *spec = std::get_if<cuda::RotarySpec>(&l.spec);
        if (!spec)
          continue;
        if (l.inputs[2].present()) { // the model's own table
          int64_t rows = p.values[size_t(l.inputs[2].view)].dims[0];
          if (modelTableStep < 0 || rows < modelTableRows) {
            modelTableRows = rows;
            modelTableStep = l.step;
          }
          continue;
        }
        cpu::RotaryParams params;
        const plan::Step &step = p.steps[size_t(l.step)];
        if (std::string why = exec::rotaryParamsOf(step, spec->headDim, params);
            !why.empty())
          return Status::invalidArgument("rotary at " + step.name + ": " + why);
        size_t t = 0;
        for (; t < tables.size(); ++t)
          if (sameFrequencies(tables[t].params, params))
            break;
        if (t == tables.size()) {
          tables.emplace_back();
          tables.back().params = params;
        }
        tableOf[l.step] = t;
      }
    maxPositions = p.configValue("max_positions", 0);
    return Status::ok();
  }

  Status growRotaryTables(const ForwardBatch &b) {
    int64_t needed = 0;
    for (int32_t pos : b.positions) {
      if (pos < 0)
        return Status::invalidArgument("position " + std::to_string(pos) +
                                       " is negative");
      needed = std::max<int64_t>(needed, int64_t(pos) + 1);
    }
    for (RotaryTable &t : tables) {
      if (needed <= t.positions)
        continue;
      int64_t n = std::max<int64_t>({needed, t.positions * 2, 2048});
      if (maxPositions > 0)
        n = std::max(needed, std::min(n, maxPositions));
      std::vector<float> host = cpu::rotaryCosSinTable(t.params, n);
      Expected<DeviceBuffer> d =
          dev->upload(host.data(), host.size() * 4, "a rotary cos/sin table");
      if (!d)
        return d.status();
      t.table = std::move(*d);
      t.positions = n;
      ++addressEpoch;
    }
    // Tables of the model's own read rows by position: none past its end.
    if (modelTableStep >= 0 && needed > modelTableRows)
      return Status::invalidArgument(
          "position " + std::to_string(needed - 1) +
          " is past the model's cos/sin table of " +
          std::to_string(modelTableRows) + " positions (rotary at " +
          plan->steps[size_t(modelTableStep)].name + ")");
    return Status::ok();
  }

  Status bindInputs(const ForwardBatch &b) {
    if (Status st = exec::checkForwardBatch(b); !st)
      return st;
    if (Status st = checkIndices(b); !st)
      return st;
    for (const plan::Argument &a : inputArgs) {
      const void *data = nullptr;
      size_t bytes = 0;
      ElemType type = ElemType::I32;
      auto i32 = [&](const std::vector<int32_t> &v) {
        data = v.data();
        bytes = v.size() * 4;
      };
      const std::string &n = a.name;
      if (n == "tokens")
        i32(b.tokens);
      else if (n == "positions")
        i32(b.positions);
      else if (n == "query_start_loc")
        i32(b.queryStartLoc);
      else if (n == "seq_lens")
        i32(b.seqLens);
      else if (n == "block_tables")
        i32(b.blockTables);
      else if (n == "logits_indices")
        i32(b.logitsIndices);
      else if (n == "slot_mapping") {
        data = b.slotMapping.data();
        bytes = b.slotMapping.size() * 8;
        type = ElemType::I64;
      } else
        return Status::invalidArgument("the plan's input '" + n +
                                       "' is not part of the serving contract");
      if (type != plan->values[size_t(a.value)].type)
        return Status::invalidArgument("the plan's input '" + n +
                                       "' has an unexpected element type");
      GrowBuffer &g = inputs[size_t(a.value)];
      if (Status st = g.reserve(*dev, bytes, "input " + n, addressEpoch); !st)
        return st;
      if (bytes > 0)
        if (Status st = dev->copyToDevice(g.buffer, 0, data, bytes); !st)
          return st;
    }
    return Status::ok();
  }

  /// The kernels index the caches with the batch's slots and block tables
  /// as given: anything out of range is refused here, on the host, as the
  /// CPU kernels refuse it (a write outside the pools would corrupt device
  /// memory, not fail).
  Status checkIndices(const ForwardBatch &b) const {
    if (caches.empty())
      return Status::ok(); // a plan without attention reads no cache
    const cpu::KVCacheView &f = caches.begin()->second.format;
    int64_t numSlots = f.numBlocks * f.blockSize;
    std::vector<int64_t> used;
    for (size_t t = 0; t < b.slotMapping.size(); ++t) {
      int64_t slot = b.slotMapping[t];
      if (slot == -1)
        continue;
      if (slot < 0 || slot >= numSlots)
        return Status::invalidArgument(
            "slot " + std::to_string(slot) + " of token " + std::to_string(t) +
            " is outside the KV cache's [0, " + std::to_string(numSlots) +
            ") (use -1 to skip a token)");
      used.push_back(slot);
    }
    std::sort(used.begin(), used.end());
    if (std::adjacent_find(used.begin(), used.end()) != used.end())
      return Status::invalidArgument("two tokens map to the same KV slot");
    if (!b.queryStartLoc.empty() &&
        (b.queryStartLoc.front() != 0 ||
         b.queryStartLoc.back() != int32_t(b.tokens.size())))
      return Status::invalidArgument(
          "query_start_loc must run from 0 to the batch's " +
          std::to_string(b.tokens.size()) + " tokens");
    for (size_t q = 0; q < b.seqLens.size(); ++q) {
      int64_t queries = int64_t(b.queryStartLoc[q + 1]) - b.queryStartLoc[q];
      int64_t len = b.seqLens[q];
      if (queries < 0 || len < queries)
        return Status::invalidArgument(
            "sequence " + std::to_string(q) + ": " +
            (queries < 0
                 ? std::string("query_start_loc decreases")
                 : "seq_len " + std::to_string(len) + " is shorter than its " +
                       std::to_string(queries) + " query tokens"));
      int64_t blocks = (len + f.blockSize - 1) / f.blockSize;
      if (blocks > b.maxBlocks)
        return Status::invalidArgument(
            "sequence " + std::to_string(q) + ": seq_len " +
            std::to_string(len) + " needs " + std::to_string(blocks) +
            " blocks but its block table holds " + std::to_string(b.maxBlocks));
      for (int64_t i = 0; i < blocks; ++i) {
        int32_t block = b.blockTables[size_t(int64_t(q) * b.maxBlocks + i)];
        if (block < 0 || block >= f.numBlocks)
          return Status::invalidArgument(
              "sequence " + std::to_string(q) + ": block table entry " +
              std::to_string(i) + " = " + std::to_string(block) +
              " is outside [0, " + std::to_string(f.numBlocks) + ")");
      }
    }
    return Status::ok();
  }

  int64_t countOf(DimSymbol s) const {
    switch (s) {
    case DimSymbol::Tokens:
      return counts.tokens;
    case DimSymbol::Rows:
      return counts.rows;
    case DimSymbol::Seqs:
      return counts.seqs;
    default:
      return 1;
    }
  }

  /// Rows above which a linear runs as cuBLASLt's GEMM rather than the
  /// linear kernel. 16-bit weights: more than one pass of the kernel over
  /// them. 8- and 4-bit weights first cost their dequantization (read the
  /// weight, write and read it back as bf16: about 4 bytes per weight more
  /// than one pass), so the GEMM takes over once the kernel would stream
  /// them in more passes than that: 5 for 8-bit (1 byte each), 9 for int4
  /// (half a byte). A first estimate from the bytes moved, not yet
  /// measured on a GPU.
  static int64_t cublasMinRows(const cuda::LinearSpec &s) {
    const int64_t passes =
        s.weightType == cpu::DType::I4 ? 9
        : s.weightType == cpu::DType::I8 || s.weightType == cpu::DType::FP8E4M3
            ? 5
            : 1;
    return passes * s.rowsPerPass;
  }

  Status sizeBuffers() {
    for (size_t i = 0; i < plan->buffers.size(); ++i) {
      const plan::BufferInfo &bi = plan->buffers[i];
      if (Status s = buffers[i].reserve(
              *dev, size_t(bi.staticBytes * countOf(bi.symbol)), "a buffer",
              addressEpoch);
          !s)
        return s;
    }
    for (size_t v = 0; v < place.size(); ++v) {
      if (place[v] != Place::Own)
        continue;
      int64_t bytes = plan::bufferBytes(plan->values[v], counts.tokens,
                                        counts.rows, counts.seqs);
      if (Status s = own[v].reserve(*dev, size_t(bytes),
                                    "value " + std::to_string(v), addressEpoch);
          !s)
        return s;
    }
    for (const KernelLaunches &k : launches.kernels)
      for (size_t i = 0; i < k.scratch.size(); ++i) {
        if (scratch.size() <= i)
          scratch.resize(i + 1);
        const LaunchScratch &sc = k.scratch[i];
        if (Status s = scratch[i].reserve(
                *dev, size_t(sc.elemsPerCount * countOf(sc.symbol)) * 4,
                "scratch", addressEpoch);
            !s)
          return s;
      }
    if (Status s =
            errorFlag.reserve(*dev, 4, "the gather error flag", addressEpoch);
        !s)
      return s;
    // The bf16 copy of the largest 8- or 4-bit weight, for steps with rows
    // enough that a linear over one could run through cuBLASLt (before any
    // launch: a capture never allocates).
    if (cublas && dequantBytes > 0 && counts.tokens > dequantMinRows)
      if (Status s =
              dequantBuffer.reserve(*dev, size_t(dequantBytes),
                                    "the dequantized weight", addressEpoch);
          !s)
        return s;
    // The decode kernels' partial outputs when they split the context: the
    // most any launch of this step needs, before any launch (a capture
    // must not allocate).
    size_t partialFloats = 0, statFloats = 0;
    for (const KernelLaunches &k : launches.kernels)
      for (const PlanLaunch &l : k.launches)
        if (l.role == LaunchRole::DecodeMain) {
          cuda::PagedDecodeLaunch g = cuda::pagedDecodeLaunch(
              std::get<cuda::PagedDecodeSpec>(l.spec), counts.tokens,
              std::max<int64_t>(shape.maxContext, 1));
          partialFloats = std::max(partialFloats, g.partialFloats);
          statFloats = std::max(statFloats, g.statFloats);
        }
    if (partialFloats == 0)
      return Status::ok();
    if (Status s =
            partial.reserve(*dev, partialFloats * 4,
                            "the decode's partial outputs", addressEpoch);
        !s)
      return s;
    return partialStats.reserve(*dev, statFloats * 8,
                                "the decode's partial maxima", addressEpoch);
  }

  /// The device address of an operand's first element.
  uintptr_t address(const LaunchOperand &o) const {
    if (o.scratch >= 0)
      return scratch[size_t(o.scratch)].address() + size_t(o.offset) * 4;
    if (o.value < 0)
      return 0;
    const plan::ValueInfo &v = plan->values[size_t(o.value)];
    uintptr_t base = 0;
    switch (place[size_t(o.value)]) {
    case Place::Constant:
      base = uintptr_t(onDevice->blobAddress(constantOffset[size_t(o.value)]));
      break;
    case Place::Input:
      base = inputs[size_t(o.value)].address();
      break;
    case Place::Buffer:
      base = buffers[size_t(v.buffer)].address();
      break;
    case Place::Own:
      base = own[size_t(o.value)].address();
      break;
    case Place::None:
      return 0;
    }
    return base + size_t(o.offset) * plan::elemTypeSize(v.type);
  }

  /// Elements the kernel reads or writes through an operand this step.
  int64_t elems(const LaunchOperand &o) const {
    if (o.view < 0)
      return -1;
    const plan::ValueInfo &v = plan->values[size_t(o.view)];
    int64_t bytes =
        plan::bufferBytes(v, counts.tokens, counts.rows, counts.seqs);
    return bytes < 0 ? -1 : bytes / int64_t(plan::elemTypeSize(v.type));
  }

  /// Rows of a launch whose first output (or input) counts them by `row`
  /// elements; scratch operands count by their group's size.
  int64_t rowsOf(const LaunchOperand &o, int64_t row,
                 const std::vector<LaunchScratch> &sc) const {
    int64_t n = o.scratch >= 0 ? sc[size_t(o.scratch)].elemsPerCount *
                                     countOf(sc[size_t(o.scratch)].symbol)
                               : elems(o);
    return row > 0 && n >= 0 ? n / row : -1;
  }

  /// The device address of a blob range; 0 for an empty one.
  uintptr_t blobAt(uint64_t offset, uint64_t bytes) const {
    return bytes == 0 ? uintptr_t(0) : uintptr_t(onDevice->blobAddress(offset));
  }

  /// A stored weight's scales, int4 group params and int8 outlier columns
  /// into launch arguments (LinearArgs, GatherArgs).
  template <class Args>
  void bindWeightParams(const plan::StoredWeight &w, Args &a) const {
    bool int4 = w.type == ElemType::I4;
    a.scales =
        int4 ? nullptr : at<const float>(blobAt(w.scalesOffset, w.scalesBytes));
    a.groupParams =
        int4 ? at<const unsigned short>(blobAt(w.scalesOffset, w.scalesBytes))
             : nullptr;
    a.outlierCols =
        at<const int>(blobAt(w.outlierColsOffset, w.outlierColsBytes));
    a.outliers =
        at<const unsigned short>(blobAt(w.outliersOffset, w.outliersBytes));
    a.numOutliers = int(w.numOutliers);
  }

  /// What a launch is, in the profile.
  std::string launchKind(const PlanLaunch &l) const {
    return std::visit(
        [&](const auto &spec) -> std::string {
          using S = std::decay_t<decltype(spec)>;
          if constexpr (std::is_same_v<S, cuda::LinearSpec>)
            return spec.quantizeXToFp8
                       ? std::string("quantize x to fp8 (cuBLASLt input)")
                   : spec.dequantToBf16
                       ? std::string("dequantize (cuBLASLt input, ") +
                             cpu::dtypeName(spec.weightType) + " weights)"
                       : std::string(ranCublas ? "linear (cuBLASLt, "
                                               : "linear (") +
                             cpu::dtypeName(spec.weightType) + " weights" +
                             (ranFp8 ? ", fp8 x)" : ")");
          else if constexpr (std::is_same_v<S, cuda::RowKernelSpec>)
            return "row kernel (" + spec.label + ")";
          else if constexpr (std::is_same_v<S, cuda::CastSpec>)
            return l.role == LaunchRole::CublasInput
                       ? std::string("cast (cuBLASLt input to ") +
                             (spec.to == cuda::CastType::F16 ? "f16)" : "bf16)")
                       : std::string("cast");
          else if constexpr (std::is_same_v<S, cuda::RotarySpec>)
            return "rotary";
          else if constexpr (std::is_same_v<S, cuda::GatherSpec>)
            return spec.embedding ? "embedding" : "gather_rows";
          else if constexpr (std::is_same_v<S, cuda::KVWriteSpec>)
            return "kv_write";
          else if constexpr (std::is_same_v<S, cuda::SampleSpec>)
            return "sample";
          else
            return l.role == LaunchRole::DecodeCombine ? "paged_decode_combine"
                   : l.role == LaunchRole::Prefill     ? "paged_prefill"
                                                       : "paged_decode";
        },
        l.spec);
  }

  /// The step's marks into the per-kind profile.
  Status addToProfile() {
    Expected<std::vector<double>> ms = timeline->intervals();
    if (!ms)
      return ms.status();
    if (ms->size() != marks.size())
      return Status::internal("profiling: " + std::to_string(ms->size()) +
                              " event intervals for " +
                              std::to_string(marks.size()) + " marks");
    for (size_t i = 0; i < marks.size(); ++i) {
      exec::KindProfile &k = profiled[marks[i].kind];
      k.kind = marks[i].kind;
      k.seconds += (*ms)[i] / 1000.0;
      k.hostSeconds += marks[i].hostSeconds;
      ++k.calls;
    }
    return Status::ok();
  }

  /// Launch `i` of plan kernel `k`'s launches.
  Status run(size_t k, size_t i) {
    const KernelLaunches &group = launches.kernels[k];
    const PlanLaunch &l = group.launches[i];
    const std::vector<LaunchScratch> &sc = group.scratch;
    const CudaKernel &kernel = *kernelOf[k][i];
    auto launch = [&](const cuda::LaunchGeometry &g, const void *args) {
      enqueued = true;
      return dev->launch(kernel, toLaunch(g), args);
    };
    return std::visit(
        [&](const auto &spec) -> Status {
          using S = std::decay_t<decltype(spec)>;
          if constexpr (std::is_same_v<S, cuda::RowKernelSpec>) {
            int64_t rows = rowsOf(l.outputs[0], spec.dim, sc);
            folio_cuda::RowArgs a{};
            for (size_t i = 0; i < l.inputs.size(); ++i) {
              a.in[i] = at<const float>(address(l.inputs[i]));
              a.inStride[i] =
                  l.inputs[i].stride != 0 ? l.inputs[i].stride : spec.dim;
            }
            for (size_t i = 0; i < l.outputs.size(); ++i) {
              a.out[i] = at<float>(address(l.outputs[i]));
              a.outStride[i] = spec.dim;
            }
            return launch(cuda::rowKernelLaunch(spec, rows), &a);
          } else if constexpr (std::is_same_v<S, cuda::LinearSpec>) {
            if (l.role == LaunchRole::CublasFp8Input) {
              // x's rows in e4m3 for the fp8 GEMM of the linear three
              // launches on (after the bf16 cast and dequantization, which
              // then do nothing): where the device runs fp8 GEMMs and the
              // rows are as many as the bf16 GEMM would take.
              const PlanLaunch &lin = group.launches.at(i + 3);
              const int64_t m = rowsOf(l.inputs[0], spec.k, sc);
              fp8Next = cublas && fp8Gemms && !noCublas.count(lin.weight) &&
                        !noFp8.count(lin.weight) &&
                        m > cublasMinRows(std::get<cuda::LinearSpec>(lin.spec));
              if (!fp8Next)
                return Status::ok();
              folio_cuda::LinearArgs a{};
              a.x = at<const float>(address(l.inputs[0]));
              a.m = m;
              a.y = at<float>(address(l.outputs[0]));
              a.xScales = at<float>(address(l.outputs[1]));
              return launch(cuda::linearLaunch(spec, m), &a);
            }
            const plan::StoredWeight &w = plan->weights[size_t(l.weight)];
            if (fp8Next && l.role == LaunchRole::Kernel) {
              fp8Next = false;
              const PlanLaunch &quant = group.launches.at(i - 3);
              Status st =
                  cublas->linearFp8(cu::DevicePtr(address(quant.outputs[0])),
                                    cu::DevicePtr(address(quant.outputs[1])),
                                    onDevice->blobAddress(w.dataOffset),
                                    onDevice->blobAddress(w.scalesOffset),
                                    cu::DevicePtr(address(l.outputs[0])),
                                    rowsOf(l.inputs[0], w.k, sc), w.n, w.k);
              if (st.code() != StatusCode::NotFound) {
                enqueued = ranCublas = ranFp8 = bool(st);
                return st;
              }
              // No fp8 GEMM for it here (the library, the arch or the
              // shape): the bf16 path it skipped runs now (the cast and
              // the dequantization, two and one launches back, decide
              // between the bf16 GEMM and the linear kernel), and from
              // then on.
              noFp8.insert(l.weight);
              if (options.warn)
                options.warn(st.message() + "; that linear (stored weight " +
                             std::to_string(l.weight) +
                             ") takes its x in bf16 instead");
              for (size_t back : {size_t(2), size_t(1)})
                if (Status s = run(k, i - back); !s)
                  return s;
            }
            if (l.role == LaunchRole::CublasWeight) {
              // The weight as bf16 rows for the GEMM that follows; nothing
              // when the linear kernel runs it.
              if (!cublasNext)
                return Status::ok();
              folio_cuda::LinearArgs a{};
              a.w = at<const void>(blobAt(w.dataOffset, w.dataBytes));
              bindWeightParams(w, a);
              a.y = at<float>(dequantBuffer.address());
              a.n = w.n;
              return launch(cuda::linearLaunch(spec, w.n), &a);
            }
            if (cublasNext) {
              cublasNext = false;
              const bool dequant =
                  group.launches.at(i - 1).role == LaunchRole::CublasWeight;
              const PlanLaunch &cast =
                  group.launches.at(dequant ? i - 2 : i - 1);
              Status st = cublas->linear(
                  spec.weightType == cpu::DType::F16 ? CublasLt::Half::F16
                                                     : CublasLt::Half::BF16,
                  cu::DevicePtr(address(cast.outputs[0])),
                  dequant ? cu::DevicePtr(dequantBuffer.address())
                          : onDevice->blobAddress(w.dataOffset),
                  cu::DevicePtr(address(l.inputs[1])),
                  cu::DevicePtr(address(l.outputs[0])),
                  rowsOf(l.inputs[0], w.k, sc), w.n, w.k);
              if (st.code() != StatusCode::NotFound) {
                enqueued = ranCublas = bool(st);
                return st;
              }
              // cuBLASLt has no algorithm for this shape: the linear kernel
              // runs it, now and in later steps.
              noCublas.insert(l.weight);
              if (options.warn)
                options.warn(st.message() + "; that linear (stored weight " +
                             std::to_string(l.weight) +
                             ") runs the linear kernel instead");
            }
            folio_cuda::LinearArgs a{};
            a.x = at<const float>(address(l.inputs[0]));
            a.m = rowsOf(l.inputs[0], w.k, sc);
            a.w = at<const void>(blobAt(w.dataOffset, w.dataBytes));
            bindWeightParams(w, a);
            a.bias = at<const float>(address(l.inputs[1]));
            a.y = at<float>(address(l.outputs[0]));
            a.n = w.n;
            if (a.m < 0)
              return Status::internal("no row count for its input");
            return launch(cuda::linearLaunch(spec, w.n), &a);
          } else if constexpr (std::is_same_v<S, cuda::RotarySpec>) {
            int64_t row = int64_t(spec.numHeads) * spec.headDim;
            folio_cuda::RotaryArgs a{};
            a.x = at<const float>(address(l.inputs[0]));
            a.xStride = l.inputs[0].stride != 0 ? l.inputs[0].stride : row;
            a.y = at<float>(address(l.outputs[0]));
            a.yStride = row;
            a.positions = at<const long long>(address(l.inputs[1]));
            a.cosSin = l.inputs[2].present()
                           ? at<const float>(address(l.inputs[2]))
                           : at<const float>(uintptr_t(
                                 tables[tableOf.at(l.step)].table.ptr()));
            return launch(cuda::rotaryLaunch(spec, elems(l.inputs[1])), &a);
          } else if constexpr (std::is_same_v<S, cuda::GatherSpec>) {
            folio_cuda::GatherArgs a{};
            if (l.weight >= 0) {
              // A tied table stored as its lm_head's packing.
              const plan::StoredWeight &w = plan->weights[size_t(l.weight)];
              a.table = at<const void>(blobAt(w.dataOffset, w.dataBytes));
              a.tableRows = w.n;
              bindWeightParams(w, a);
            } else {
              a.table = at<const void>(address(l.inputs[0]));
              // gather_rows reads the step's rows: a dynamic count.
              a.tableRows = rowsOf(l.inputs[0], spec.dim, sc);
            }
            if (spec.embedding)
              a.ids = at<const long long>(address(l.inputs[1]));
            else
              a.indices = at<const int>(address(l.inputs[1]));
            a.scale = float(plan->steps[size_t(l.step)].getFloat("scale", 1.0));
            a.out = at<float>(address(l.outputs[0]));
            a.error = at<int>(errorFlag.address());
            return launch(cuda::gatherLaunch(spec, elems(l.inputs[1])), &a);
          } else if constexpr (std::is_same_v<S, cuda::CastSpec>) {
            folio_cuda::CastArgs a{};
            a.in = at<const void>(address(l.inputs[0]));
            a.out = at<void>(address(l.outputs[0]));
            a.n = rowsOf(l.inputs[0], 1, sc);
            if (l.role == LaunchRole::CublasInput && fp8Next)
              return Status::ok(); // the fp8 GEMM takes x quantized
            if (l.role == LaunchRole::CublasInput) {
              // The linear this cast feeds (the next launch, or the one
              // after its weight's dequantization): through cuBLASLt when
              // it would take the linear kernel more passes over the weights
              // than the GEMM's reads cost (cublasMinRows).
              const bool dequant =
                  group.launches.at(i + 1).role == LaunchRole::CublasWeight;
              const auto &next = std::get<cuda::LinearSpec>(
                  group.launches.at(dequant ? i + 2 : i + 1).spec);
              int64_t m = rowsOf(l.inputs[0], next.k, sc);
              const int32_t weight =
                  group.launches.at(dequant ? i + 2 : i + 1).weight;
              cublasNext = cublas && m > cublasMinRows(next) &&
                           !noCublas.count(weight) &&
                           (!dequant || dequantBuffer.buffer.bytes() >=
                                            size_t(dequantBytes));
              if (!cublasNext)
                return Status::ok();
            }
            return launch(cuda::castLaunch(spec, a.n), &a);
          } else if constexpr (std::is_same_v<S, cuda::KVWriteSpec>) {
            const DeviceCache &c = caches.at(l.inputs[3].value);
            int64_t row = int64_t(spec.numKvHeads) * spec.headDim;
            folio_cuda::KVWriteArgs a{};
            a.k = at<const float>(address(l.inputs[0]));
            a.v = at<const float>(address(l.inputs[1]));
            a.kStride = l.inputs[0].stride != 0 ? l.inputs[0].stride : row;
            a.vStride = l.inputs[1].stride != 0 ? l.inputs[1].stride : row;
            a.slotMapping = at<const long long>(address(l.inputs[2]));
            a.kCache = at<unsigned char>(uintptr_t(c.k.ptr()));
            a.vCache = at<unsigned char>(uintptr_t(c.v.ptr()));
            a.kParams = at<unsigned short>(uintptr_t(c.kParams.ptr()));
            a.vParams = at<unsigned short>(uintptr_t(c.vParams.ptr()));
            a.kScale = at<const float>(address(l.inputs[4]));
            a.vScale = at<const float>(address(l.inputs[5]));
            return launch(cuda::kvWriteLaunch(spec, elems(l.inputs[2])), &a);
          } else if constexpr (std::is_same_v<S, cuda::SampleSpec>) {
            return Status::internal("a sampler among the plan's launches");
          } else {
            return attention(l, launch);
          }
        },
        l.spec);
  }

  /// The decode kernel when every sequence brings one query token (or no
  /// prefill kernel fits), its combine when the context is split, and the
  /// prefill kernel for every other batch.
  /// `launch(geometry, args)` launches the kernel of `l`.
  template <typename Launch>
  Status attention(const PlanLaunch &l, const Launch &launch) {
    const ForwardBatch &b = *batch;
    const int64_t maxQuery = shape.maxQuery, maxContext = shape.maxContext;
    bool useDecode = shape.decodeOnly || !prefillSteps.count(l.step);
    if (l.role == LaunchRole::Prefill && useDecode)
      return Status::ok();
    if (l.role != LaunchRole::Prefill && !useDecode)
      return Status::ok();
    const plan::Step &step = plan->steps[size_t(l.step)];
    const DeviceCache &c = caches.at(l.inputs[1].value);
    auto fill = [&](auto &a) {
      a.q = at<const float>(address(l.inputs[0]));
      a.kCache = at<const unsigned char>(uintptr_t(c.k.ptr()));
      a.vCache = at<const unsigned char>(uintptr_t(c.v.ptr()));
      a.kParams = at<const unsigned short>(uintptr_t(c.kParams.ptr()));
      a.vParams = at<const unsigned short>(uintptr_t(c.vParams.ptr()));
      a.kScale = at<const float>(address(l.inputs[5]));
      a.vScale = at<const float>(address(l.inputs[6]));
      a.blockTables = at<const int>(address(l.inputs[2]));
      a.seqLens = at<const int>(address(l.inputs[3]));
      a.queryStartLoc = at<const int>(address(l.inputs[4]));
      a.maxBlocksPerSeq = int(b.maxBlocks);
      a.scale = float(step.getFloat("scale", 0.0));
      a.slidingWindow = int(step.getInt("sliding_window", 0));
      a.softCap = float(step.getFloat("softcap", 0.0));
      a.out = at<float>(address(l.outputs[0]));
    };
    int64_t tokens = counts.tokens;
    if (const auto *spec = std::get_if<cuda::PagedPrefillSpec>(&l.spec)) {
      folio_cuda::PagedPrefillArgs a{};
      fill(a);
      cuda::LaunchGeometry g =
          cuda::pagedPrefillLaunch(*spec, counts.seqs, maxQuery);
      g.dynamicShared = cuda::pagedPrefillSharedBytes(*spec);
      return launch(g, &a);
    }
    const cuda::PagedDecodeSpec &spec =
        l.role == LaunchRole::DecodeMain
            ? std::get<cuda::PagedDecodeSpec>(l.spec)
            : std::get<cuda::PagedDecodeCombineSpec>(l.spec).decode;
    cuda::PagedDecodeLaunch geometry =
        cuda::pagedDecodeLaunch(spec, tokens, std::max<int64_t>(maxContext, 1));
    if (l.role == LaunchRole::DecodeCombine && geometry.numPartitions == 1)
      return Status::ok();
    folio_cuda::PagedDecodeArgs a{};
    fill(a);
    a.numSeqs = int(counts.seqs);
    a.numPartitions = geometry.numPartitions;
    if (geometry.numPartitions > 1) {
      // Sized by sizeBuffers for this step.
      if (partial.buffer.bytes() < geometry.partialFloats * 4 ||
          partialStats.buffer.bytes() < geometry.statFloats * 8)
        return Status::internal("the decode's partial buffers were not sized "
                                "for this step");
      a.partialOut = at<float>(partial.address());
      a.partialMax = at<float>(partialStats.address());
      a.partialSum = a.partialMax + geometry.statFloats;
    }
    return launch(l.role == LaunchRole::DecodeMain ? geometry.main
                                                   : geometry.combine,
                  &a);
  }

  /// The vocabulary and the device address of the logits' first row.
  Status logitsOnDevice(int64_t &vocab, uintptr_t &first) const {
    if (launches.outputs.empty())
      return Status::invalidArgument("the plan has no output");
    const LaunchOperand &out = launches.outputs[0];
    const plan::ValueInfo &v = plan->values[size_t(out.view)];
    if (v.type != ElemType::F32 || v.dims.empty() || v.dims.back() <= 0)
      return Status::invalidArgument("the plan's output is not f32 logits");
    vocab = v.dims.back();
    if (out.value < 0 || place[size_t(out.value)] == Place::None)
      return Status::internal("no launch writes the plan's logits");
    first = address(out);
    return Status::ok();
  }

  /// The embedding and logits gathers' error flag, naming the first of
  /// `rows` rows it reports.
  Status checkGatherFlag(int64_t rows) {
    int flag = 0;
    if (Status s = dev->copyToHost(&flag, errorFlag.buffer, 0, 4); !s)
      return s;
    // A padded step's extra rows repeat its last token: a bad id there is
    // the last real row's.
    int64_t row = flag - 1;
    if (rows < counts.rows)
      row = std::min(row, rows - 1);
    if (flag != 0)
      return Status::invalidArgument(
          "row " + std::to_string(row) +
          " of an embedding or logits gather has an index outside its "
          "table (a token id past the vocabulary, or a logits index past "
          "the tokens)");
    return Status::ok();
  }

  /// The first `rows` logits rows (a padded step's real ones).
  Status readLogits(std::vector<float> &logits, int64_t &vocab, int64_t rows) {
    uintptr_t first = 0;
    if (Status s = logitsOnDevice(vocab, first); !s)
      return s;
    logits.assign(size_t(rows * vocab), 0.0f);
    if (Status s = checkGatherFlag(rows); !s)
      return s;
    if (logits.empty())
      return Status::ok();
    const LaunchOperand &out = launches.outputs[0];
    const plan::ValueInfo &holder = plan->values[size_t(out.value)];
    const DeviceBuffer &src = place[size_t(out.value)] == Place::Buffer
                                  ? buffers[size_t(holder.buffer)].buffer
                                  : own[size_t(out.value)].buffer;
    return dev->copyToHost(logits.data(), src,
                           size_t(out.offset) * plan::elemTypeSize(holder.type),
                           logits.size() * 4);
  }

  std::unique_ptr<CudaDevice> dev;
  exec::ExecutorOptions options;
  cpu::ThreadPool *sizedPool = nullptr;
  /// cuBLASLt for the GEMMs of 16-bit weights over many rows; null where the
  /// library is missing (the linear kernel then serves every batch).
  std::unique_ptr<CublasLt> cublas;
  // Profiling (ExecutorOptions::profile).
  struct Mark {
    std::string kind;
    double hostSeconds = 0;
  };
  std::unique_ptr<device::EventTimeline> timeline;
  std::vector<Mark> marks;
  std::chrono::steady_clock::time_point started;
  std::map<std::string, exec::KindProfile> profiled;
  bool enqueued = false, ranCublas = false, ranFp8 = false;
  /// Set when a capture or replay failed: every later step runs eagerly.
  bool graphsOff = false;
  /// Linears (by stored weight) cuBLASLt had no algorithm for: the linear
  /// kernel runs them at every batch size.
  std::set<int32_t> noCublas;
  /// Set by a CublasInput cast that ran: the next linear is cuBLASLt's.
  bool cublasNext = false;
  /// Set by a CublasFp8Input quantization that ran: the next linear is
  /// cuBLASLt's fp8 GEMM.
  bool fp8Next = false;
  /// Linears (by stored weight) with no fp8 GEMM here: the bf16 GEMM runs
  /// them.
  std::set<int32_t> noFp8;
  /// Whether the device has fp8 tensor cores (sm_89 and later).
  bool fp8Gemms = false;
  std::shared_ptr<const plan::Plan> plan;
  std::unique_ptr<DevicePlan> onDevice;
  PlanLaunches launches;
  /// Each launch's kernel, [plan kernel][launch], looked up once at load.
  std::vector<std::vector<const CudaKernel *>> kernelOf;
  /// paged_attention steps with a prefill kernel.
  std::set<int32_t> prefillSteps;

  std::vector<Place> place;
  std::vector<uint64_t> constantOffset;
  std::vector<plan::Argument> inputArgs;
  std::vector<GrowBuffer> inputs, own; ///< by value
  std::vector<GrowBuffer> buffers, scratch;
  GrowBuffer partial, partialStats, errorFlag;
  /// The bf16 rows of an 8- or 4-bit weight for cuBLASLt (CublasWeight):
  /// dequantBytes, the largest such weight's, once a step has more than
  /// dequantMinRows rows.
  GrowBuffer dequantBuffer;
  int64_t dequantBytes = 0, dequantMinRows = 0;
  GrowBuffer sampled;    ///< the sampled tokens
  GrowBuffer drawParams; ///< the draws, as sampleOnDevice packs them
  std::vector<unsigned char> drawBytes;
  /// Where in drawBytes the rows' penalties start, and how many (token,
  /// count) entries they hold; where the draws' numbers of top logprobs
  /// start (uploadDraws).
  size_t penaltyOffset = 0, penaltyEntries = 0, logprobsOffset = 0;
  /// Where the q rows of the verified sequences and then of the draws
  /// start, when any is kept or read (0: none).
  size_t probRowsOffset = 0;
  std::vector<unsigned char> logprobBytes; ///< logprobsToHost's copy
  /// A draft model's distributions its draws keep (reserveDraftProbs).
  GrowBuffer draftProbs;
  int64_t draftProbRows = 0;
  /// A sampler the plan embeds (a null kernel where it has none).
  struct Sampler {
    const CudaKernel *kernel = nullptr;
    cuda::SampleSpec spec;
  };
  /// Per cuda::SampleMode.
  std::array<Sampler, cuda::kNumSampleModes> samplers;
  const Sampler &sampler(cuda::SampleMode mode) const {
    return samplers[size_t(mode)];
  }

  std::vector<RotaryTable> tables;
  std::map<int32_t, size_t> tableOf; ///< rotary step -> its table
  int64_t maxPositions = 0;
  /// The smallest cos/sin table a model brings, and a rotary step reading
  /// it (-1: none).
  int32_t modelTableStep = -1;
  int64_t modelTableRows = 0;

  std::map<int32_t, cpu::KVCacheView> formats;
  std::map<int32_t, DeviceCache> caches;
  exec::KVCacheLayout layout;
  int64_t weightBytes = 0;

  struct {
    int64_t tokens = 0, rows = 0, seqs = 0;
  } counts;
  const ForwardBatch *batch = nullptr;

  // CUDA graphs of decode steps (graphKey).
  static constexpr int64_t kMaxGraphBatch = 256;
  /// Graphs kept; the least recently used goes first.
  static constexpr size_t kMaxGraphs = 64;
  struct CapturedStep {
    CudaGraph graph;
    uint64_t lastUse = 0;
  };
  std::map<GraphKey, CapturedStep> graphs;
  /// Advanced whenever a buffer a launch reads or writes moves (GrowBuffer,
  /// rotary tables, the KV pools); the graphs are dropped when it has
  /// moved since their capture.
  uint64_t addressEpoch = 0, graphsEpoch = 0, useClock = 0;
  int64_t contextGranule = 256;
  ForwardBatch padded; ///< the step padded to its graph's key
  /// This step's sequences: whether each brings one query token, and the
  /// longest query and context.
  struct {
    bool decodeOnly = true;
    int64_t maxQuery = 0, maxContext = 0;
  } shape;
};

} // namespace

std::unique_ptr<exec::Executor>
createCudaExecutor(std::unique_ptr<CudaDevice> device,
                   const exec::ExecutorOptions &options) {
  return std::make_unique<CudaExecutor>(std::move(device), options);
}

Expected<std::unique_ptr<exec::Executor>>
createExecutor(const DeviceChoice &choice,
               const exec::ExecutorOptions &options) {
  if (choice.device != DeviceKind::Cuda)
    return exec::createCPUExecutor(options);
  Expected<std::unique_ptr<CudaDevice>> dev = CudaDevice::open();
  if (!dev)
    return dev.status();
  return createCudaExecutor(std::move(*dev), options);
}

} // namespace folio::device
