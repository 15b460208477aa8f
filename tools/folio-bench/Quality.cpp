//===- Quality.cpp - Model quality against a reference plan ---------------===//

#include "tools/folio-bench/Quality.h"

#include "codegen/CPU/Linear.h"
#include "runtime/Core/BatchBuilder.h"
#include "runtime/Core/TeacherForced.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace folio::bench {
namespace {

Expected<std::unique_ptr<exec::Executor>>
makeExecutor(std::shared_ptr<const plan::Plan> plan, int64_t blocks,
             int64_t threads) {
  exec::ExecutorOptions eo;
  eo.numThreads = unsigned(threads);
  std::unique_ptr<exec::Executor> e = exec::createCPUExecutor(eo);
  if (Status s = e->load(plan); !s)
    return s;
  if (Status s = e->allocateKVCache(std::max<int64_t>(blocks, 2)); !s)
    return s;
  return e;
}

/// Calls `row(seq, pos, logits)` for every position of every sequence,
/// one token of a sequence per step, as decode reads the cache.
using RowFn = std::function<void(const std::vector<TokenId> &seq, int64_t pos,
                                 const float *logits, int64_t vocab)>;
Status forEachRow(std::shared_ptr<const plan::Plan> plan, const Seqs &seqs,
                  int64_t threads, const RowFn &row) {
  int64_t block = plan->configValue("block_size", 16);
  Expected<std::unique_ptr<exec::Executor>> e =
      makeExecutor(plan, core::teacherForcedBlocks(seqs, block), threads);
  if (!e)
    return e.status();
  core::TeacherForcedOptions o;
  // At most kSmallM rows a step: the decode kernels (the GEMVs, which for
  // int4 weights may round x to int8) score every row, as single-stream
  // and small-batch decode run them, not the prefill GEMM.
  o.chunkTokens = cpu::kSmallM;
  o.tokensPerSequence = 1;
  o.onLogits = [&](const std::vector<float> &logits, int64_t vocab,
                   const std::vector<int64_t> &seq,
                   const std::vector<int64_t> &pos) {
    for (size_t r = 0; r < seq.size(); ++r)
      row(seqs[size_t(seq[r])], pos[r], logits.data() + r * size_t(vocab),
          vocab);
  };
  return core::runTeacherForced(**e, seqs, o);
}

int64_t argmax(const float *row, int64_t n) {
  return std::max_element(row, row + n) - row;
}

} // namespace

/// exp(mean NLL of each window's next tokens).
Expected<double> perplexity(std::shared_ptr<const plan::Plan> plan,
                            const Seqs &windows, int64_t threads) {
  double nll = 0;
  int64_t scored = 0;
  Status s = forEachRow(plan, windows, threads,
                        [&](const std::vector<TokenId> &w, int64_t pos,
                            const float *row, int64_t vocab) {
                          if (pos + 1 >= int64_t(w.size()))
                            return;
                          double peak = *std::max_element(row, row + vocab),
                                 sum = 0;
                          for (int64_t v = 0; v < vocab; ++v)
                            sum += std::exp(double(row[v]) - peak);
                          nll += peak + std::log(sum) - row[w[size_t(pos + 1)]];
                          ++scored;
                        });
  if (!s)
    return s;
  return std::exp(nll / double(std::max<int64_t>(scored, 1)));
}

Status PagedRun::step(const Seqs &seqs, const std::vector<int64_t> &from,
                      const std::vector<int64_t> &count,
                      std::vector<float> &logits, int64_t &vocab) {
  std::vector<core::ScheduledSequence> sched(seqs.size());
  for (size_t s = 0; s < seqs.size(); ++s) {
    sched[s].tokens = &seqs[s];
    sched[s].numComputed = from[s];
    sched[s].numScheduled = count[s];
    sched[s].blockTable = &tables[s];
  }
  Expected<exec::ForwardBatch> batch = core::buildForwardBatch(sched, block);
  if (!batch)
    return batch.status();
  return executor->forward(*batch, logits, vocab);
}

Expected<PagedRun> pagedRun(std::shared_ptr<const plan::Plan> plan,
                            const std::vector<int64_t> &lengths,
                            int64_t threads) {
  PagedRun r;
  r.block = plan->configValue("block_size", 16);
  BlockId next = 1;
  for (int64_t len : lengths) {
    r.tables.emplace_back();
    for (int64_t b = 0; b < (len + r.block - 1) / r.block; ++b)
      r.tables.back().push_back(next++);
  }
  Expected<std::unique_ptr<exec::Executor>> e =
      makeExecutor(plan, next, threads);
  if (!e)
    return e.status();
  r.executor = std::move(*e);
  return r;
}

/// Greedy continuations of `prompts`, `newTokens` each, decoded step by
/// step over the paged cache as the engine would.
Expected<Seqs> greedyContinue(std::shared_ptr<const plan::Plan> plan,
                              const Seqs &prompts, int64_t newTokens,
                              int64_t threads) {
  Seqs seqs = prompts;
  std::vector<int64_t> lengths, computed(seqs.size(), 0), count(seqs.size());
  for (const std::vector<TokenId> &p : prompts)
    lengths.push_back(int64_t(p.size()) + newTokens);
  Expected<PagedRun> run = pagedRun(plan, lengths, threads);
  if (!run)
    return run.status();
  std::vector<float> logits;
  for (int64_t step = 0; step < newTokens; ++step) {
    for (size_t s = 0; s < seqs.size(); ++s)
      count[s] = int64_t(seqs[s].size()) - computed[s];
    int64_t vocab = 0;
    if (Status st = run->step(seqs, computed, count, logits, vocab); !st)
      return st;
    for (size_t s = 0; s < seqs.size(); ++s) {
      computed[s] = int64_t(seqs[s].size());
      seqs[s].push_back(
          TokenId(argmax(logits.data() + s * size_t(vocab), vocab)));
    }
  }
  return seqs;
}

/// Fraction of the continuation tokens whose argmax under `plan`, with the
/// reference continuation as context, is the reference's next token.
Expected<double> agreement(std::shared_ptr<const plan::Plan> plan,
                           const Seqs &reference, int64_t promptTokens,
                           int64_t threads, int64_t &compared) {
  int64_t same = 0;
  compared = 0;
  Status s =
      forEachRow(plan, reference, threads,
                 [&](const std::vector<TokenId> &seq, int64_t pos,
                     const float *row, int64_t vocab) {
                   // Rows predicting a generated token: positions
                   // promptTokens-1 on.
                   if (pos + 1 < promptTokens || pos + 1 >= int64_t(seq.size()))
                     return;
                   ++compared;
                   same += argmax(row, vocab) == seq[size_t(pos + 1)];
                 });
  if (!s)
    return s;
  return compared ? double(same) / double(compared) : 0.0;
}

} // namespace folio::bench
