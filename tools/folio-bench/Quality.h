//===- Quality.h - Model quality against a reference plan -------*- C++ -*-===//
//
// What the quantization benchmarks (kv-quant, weight-quant) measure of a
// plan on the same inputs as a full-precision one: teacher-forced
// perplexity over held-out windows, greedy continuations, and how often a
// plan's argmax agrees with a reference continuation.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_FOLIO_BENCH_QUALITY_H
#define FOLIO_TOOLS_FOLIO_BENCH_QUALITY_H

#include "runtime/Executor/Executor.h"
#include "runtime/Plan/Plan.h"
#include "runtime/Support/Status.h"
#include "runtime/Support/Types.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace folio::bench {

using Seqs = std::vector<std::vector<TokenId>>;

/// Sequences of known lengths, each with its own run of blocks from block
/// 1 on, and an executor whose cache holds them all.
struct PagedRun {
  std::unique_ptr<exec::Executor> executor;
  std::vector<std::vector<BlockId>> tables;
  int64_t block = 0;

  /// Runs tokens [from[s], from[s] + count[s]) of every sequence of `seqs`
  /// as one step, with logits for each sequence's last token.
  Status step(const Seqs &seqs, const std::vector<int64_t> &from,
              const std::vector<int64_t> &count, std::vector<float> &logits,
              int64_t &vocab);
};

/// Blocks for sequences of `lengths` tokens and an executor of `threads`
/// threads whose cache holds them.
Expected<PagedRun> pagedRun(std::shared_ptr<const plan::Plan> plan,
                            const std::vector<int64_t> &lengths,
                            int64_t threads);

/// exp(mean NLL of each window's next tokens), teacher-forced one token of
/// a window per step and at most cpu::kSmallM windows a step (as decode
/// reads the cache and runs the decode kernels).
Expected<double> perplexity(std::shared_ptr<const plan::Plan> plan,
                            const Seqs &windows, int64_t threads);

/// Greedy continuations of `prompts`, `newTokens` each, decoded step by
/// step over the paged cache as the engine would.
Expected<Seqs> greedyContinue(std::shared_ptr<const plan::Plan> plan,
                              const Seqs &prompts, int64_t newTokens,
                              int64_t threads);

/// Fraction of the continuation tokens (after `promptTokens`) whose argmax
/// under `plan`, with the reference continuation as context, is the
/// reference's next token; `compared` receives how many were compared.
Expected<double> agreement(std::shared_ptr<const plan::Plan> plan,
                           const Seqs &reference, int64_t promptTokens,
                           int64_t threads, int64_t &compared);

} // namespace folio::bench

#endif // FOLIO_TOOLS_FOLIO_BENCH_QUALITY_H
