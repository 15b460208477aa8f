//===- Model.cpp - Whole-model decode and prefill on the CUDA executor ----===//

#include "tools/folio-gpu-bench/Model.h"

#include "runtime/Device/CudaExecutor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>

namespace folio::gpubench {

namespace {

using Clock = std::chrono::steady_clock;

/// A forward as the engine runs it for greedy requests: the tokens taken
/// on the device where the plan has the sampler, else the logits back.
Expected<double> timeForward(exec::Executor &e, const exec::ForwardBatch &b) {
  std::vector<float> logits;
  std::vector<int32_t> tokens;
  int64_t vocab = 0;
  auto start = Clock::now();
  if (Status s = e.greedyOnDevice() ? e.forwardGreedy(b, tokens, vocab)
                                    : e.forward(b, logits, vocab);
      !s)
    return s;
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

} // namespace

int SequenceBatches::add() {
  blocks.emplace_back();
  lengths.push_back(0);
  return int(lengths.size()) - 1;
}

exec::ForwardBatch
SequenceBatches::step(const std::vector<int> &seqs,
                      const std::vector<std::vector<int32_t>> &newTokens) {
  exec::ForwardBatch b;
  b.queryStartLoc.push_back(0);
  for (size_t i = 0; i < seqs.size(); ++i) {
    size_t s = size_t(seqs[i]);
    for (int32_t t : newTokens[i]) {
      int32_t pos = lengths[s]++;
      if (pos % blockSize == 0)
        blocks[s].push_back(next++);
      b.tokens.push_back(t);
      b.positions.push_back(pos);
      b.slotMapping.push_back(int64_t(blocks[s][size_t(pos / blockSize)]) *
                                  blockSize +
                              pos % blockSize);
    }
    b.queryStartLoc.push_back(int32_t(b.tokens.size()));
    b.logitsIndices.push_back(int32_t(b.tokens.size()) - 1);
    b.seqLens.push_back(lengths[s]);
    b.maxBlocks = std::max<int64_t>(b.maxBlocks, int64_t(blocks[s].size()));
  }
  for (int s : seqs) {
    std::vector<int32_t> row = blocks[size_t(s)];
    row.resize(size_t(b.maxBlocks), 0);
    b.blockTables.insert(b.blockTables.end(), row.begin(), row.end());
  }
  return b;
}

exec::ForwardBatch SequenceBatches::step(const std::vector<int> &seqs,
                                         int count) {
  std::vector<std::vector<int32_t>> tokens;
  for (int s : seqs) {
    std::vector<int32_t> t;
    for (int i = 0; i < count; ++i)
      t.push_back(
          int32_t(3 + ((lengths[size_t(s)] + i) * 131 + s * 977) % 1000));
    tokens.push_back(std::move(t));
  }
  return step(seqs, tokens);
}

Expected<ModelResult> measureModel(std::unique_ptr<device::CudaDevice> device,
                                   std::shared_ptr<const plan::Plan> plan,
                                   const ModelCase &c) {
  if (c.prompt < 1 || c.context < 1 || c.steps < 1 || c.checkTokens < 1 ||
      c.prefillRuns < 1 || c.batches.empty())
    return Status::invalidArgument("the model case needs a prompt, a "
                                   "context, steps and batch sizes");
  ModelResult r;
  for (const plan::Argument &a : plan->inputs)
    if (plan->values[size_t(a.value)].kind == plan::ValueInfo::Kind::KVCache) {
      r.kvCache = plan::elemTypeName(plan->values[size_t(a.value)].type);
      break;
    }
  int64_t blockSize = plan->configValue("block_size", 16);
  int maxBatch = *std::max_element(c.batches.begin(), c.batches.end());
  auto blocksFor = [&](int64_t tokens) {
    return (tokens + blockSize - 1) / blockSize;
  };
  int64_t numBlocks =
      1 + std::max<int64_t>(blocksFor(c.prompt), blocksFor(c.checkTokens)) +
      int64_t(maxBatch) * blocksFor(c.context + c.steps);

  // The profiled pass runs on an executor of its own, on the same device.
  std::unique_ptr<device::CudaDevice> profileDevice;
  if (c.profile) {
    Expected<std::unique_ptr<device::CudaDevice>> d =
        device::CudaDevice::open(0);
    if (!d)
      return d.status();
    profileDevice = std::move(*d);
  }
  exec::ExecutorOptions graphOptions;
  graphOptions.warn = [&r](const std::string &w) { r.warnings.push_back(w); };
  std::unique_ptr<exec::Executor> gpu =
      device::createCudaExecutor(std::move(device), graphOptions);
  if (Status s = gpu->load(plan); !s)
    return s;
  if (Status s = gpu->allocateKVCache(numBlocks); !s)
    return s;
  r.weightBytes = gpu->linearWeightBytes();

  // The check: one prompt on both executors.
  {
    std::unique_ptr<exec::Executor> cpu = exec::createCPUExecutor();
    if (Status s = cpu->load(plan); !s)
      return s;
    if (Status s = cpu->allocateKVCache(1 + blocksFor(c.checkTokens)); !s)
      return s;
    SequenceBatches seqs(blockSize);
    exec::ForwardBatch b = seqs.step({seqs.add()}, c.checkTokens);
    std::vector<float> want, got;
    int64_t vocab = 0;
    if (Status s = cpu->forward(b, want, vocab); !s)
      return s;
    if (Status s = gpu->forward(b, got, vocab); !s)
      return s;
    for (size_t i = 0; i < got.size(); ++i)
      r.checkedDiff =
          std::max(r.checkedDiff, std::fabs(double(got[i]) - double(want[i])) /
                                      (1.0 + std::fabs(double(want[i]))));
    if (!(r.checkedDiff <= c.tolerance))
      return Status::internal(
          "the CUDA executor's logits differ from the CPU executor's by " +
          std::to_string(r.checkedDiff) + " (relative to |x| + 1), over " +
          std::to_string(c.tolerance));
  }

  // Prefill: one prompt on a fresh sequence each time (the cache is reused
  // from the first block on). The first run of the prompt's size is a
  // warm-up: its buffers grow and cuBLASLt picks its algorithms.
  auto prefills = [&](exec::Executor &e, int timed) -> Expected<double> {
    std::vector<double> times;
    for (int i = 0; i <= timed; ++i) {
      SequenceBatches seqs(blockSize);
      Expected<double> t = timeForward(e, seqs.step({seqs.add()}, c.prompt));
      if (!t)
        return t.status();
      if (i > 0)
        times.push_back(*t);
      else if (timed > 0)
        e.resetProfile();
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  };
  Expected<double> prefill = prefills(*gpu, c.prefillRuns);
  if (!prefill)
    return prefill.status();
  r.prefillMs = *prefill;
  r.prefillTokensPerS = 1000.0 * c.prompt / *prefill;

  // Decode: each batch size on fresh sequences at the same context.
  // `before` runs once the context is in, before the timed steps.
  auto decodes = [&](exec::Executor &e, int batch,
                     const std::function<void()> &before)
      -> Expected<std::vector<double>> {
    SequenceBatches decode(blockSize);
    std::vector<int> ids;
    for (int i = 0; i < batch; ++i)
      ids.push_back(decode.add());
    // The context, one sequence per forward.
    for (int id : ids)
      if (Expected<double> t = timeForward(e, decode.step({id}, c.context)); !t)
        return t.status();
    before();
    std::vector<double> times;
    for (int s = 0; s < c.steps; ++s) {
      Expected<double> t = timeForward(e, decode.step(ids, 1));
      if (!t)
        return t.status();
      times.push_back(*t);
    }
    return times;
  };
  for (int batch : c.batches) {
    Expected<std::vector<double>> times = decodes(*gpu, batch, [] {});
    if (!times)
      return times.status();
    std::sort(times->begin(), times->end());
    ModelDecode d;
    d.batch = batch;
    d.msPerStep = (*times)[times->size() / 2];
    d.tokensPerS = 1000.0 * batch / d.msPerStep;
    r.decode.push_back(d);
  }
  gpu.reset();
  if (c.eager) {
    // The decode steps again, every kernel launched each step: the first
    // timed step of each batch size above also ran eagerly (and captured
    // its graph), the median is a replay's.
    Expected<std::unique_ptr<device::CudaDevice>> d =
        device::CudaDevice::open(0);
    if (!d)
      return d.status();
    exec::ExecutorOptions options;
    options.cudaGraphs = false;
    std::unique_ptr<exec::Executor> eager =
        device::createCudaExecutor(std::move(*d), options);
    if (Status s = eager->load(plan); !s)
      return s;
    if (Status s = eager->allocateKVCache(numBlocks); !s)
      return s;
    for (ModelDecode &decode : r.decode) {
      Expected<std::vector<double>> times =
          decodes(*eager, decode.batch, [] {});
      if (!times)
        return times.status();
      std::sort(times->begin(), times->end());
      decode.eagerMsPerStep = (*times)[times->size() / 2];
    }
  }
  if (!c.profile)
    return r;

  // The same steps again with every launch timed by kind.
  exec::ExecutorOptions options;
  options.profile = true;
  std::unique_ptr<exec::Executor> profiled =
      device::createCudaExecutor(std::move(profileDevice), options);
  if (Status s = profiled->load(plan); !s)
    return s;
  if (Status s = profiled->allocateKVCache(numBlocks); !s)
    return s;
  auto summarize = [&](const char *what, int batch, int steps, double wallMs) {
    ModelProfile p;
    p.what = what;
    p.batch = batch;
    p.steps = steps;
    p.wallMs = wallMs / steps;
    for (const exec::KindProfile &k : profiled->profile())
      p.kinds.push_back({k.kind, 1000.0 * k.seconds / steps,
                         1000.0 * k.hostSeconds / steps,
                         double(k.calls) / steps});
    r.profiles.push_back(std::move(p));
  };
  Expected<double> profiledPrefill = prefills(*profiled, 1);
  if (!profiledPrefill)
    return profiledPrefill.status();
  summarize("prefill", 1, 1, *profiledPrefill);
  for (int batch : c.batches) {
    Expected<std::vector<double>> times =
        decodes(*profiled, batch, [&] { profiled->resetProfile(); });
    if (!times)
      return times.status();
    double wall = 0;
    for (double t : *times)
      wall += t;
    summarize("decode", batch, c.steps, wall);
  }
  return r;
}

} // namespace folio::gpubench
