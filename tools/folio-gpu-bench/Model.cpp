//===- Model.cpp - Whole-model decode and prefill on the CUDA executor ----===//

#include "tools/folio-gpu-bench/Model.h"

#include "runtime/Device/CudaExecutor.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace folio::gpubench {

namespace {

using Clock = std::chrono::steady_clock;

Expected<double> timeForward(exec::Executor &e, const exec::ForwardBatch &b) {
  std::vector<float> logits;
  int64_t vocab = 0;
  auto start = Clock::now();
  if (Status s = e.forward(b, logits, vocab); !s)
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
      c.batches.empty())
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

  std::unique_ptr<exec::Executor> gpu =
      device::createCudaExecutor(std::move(device));
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

  // Prefill: one prompt (the check ran first, so this is a warm run).
  SequenceBatches seqs(blockSize);
  Expected<double> prefill =
      timeForward(*gpu, seqs.step({seqs.add()}, c.prompt));
  if (!prefill)
    return prefill.status();
  r.prefillMs = *prefill;
  r.prefillTokensPerS = 1000.0 * c.prompt / *prefill;

  // Decode: each batch size on fresh sequences at the same context (the
  // cache is reused from the first block on).
  for (int batch : c.batches) {
    SequenceBatches decode(blockSize);
    std::vector<int> ids;
    for (int i = 0; i < batch; ++i)
      ids.push_back(decode.add());
    // The context, one sequence per forward.
    for (int id : ids)
      if (Expected<double> t = timeForward(*gpu, decode.step({id}, c.context));
          !t)
        return t.status();
    std::vector<double> times;
    for (int s = 0; s < c.steps; ++s) {
      Expected<double> t = timeForward(*gpu, decode.step(ids, 1));
      if (!t)
        return t.status();
      times.push_back(*t);
    }
    std::sort(times.begin(), times.end());
    ModelDecode d;
    d.batch = batch;
    d.msPerStep = times[times.size() / 2];
    d.tokensPerS = 1000.0 * batch / d.msPerStep;
    r.decode.push_back(d);
  }
  return r;
}

} // namespace folio::gpubench
