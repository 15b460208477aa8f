//===- Engine.h - Runs prompts through a plan, step by step -----*- C++ -*-===//
//
// The engine owns an executor (with its KV cache) and a block manager. One
// `step` runs any mix of sequences (prefills and decodes) as one ragged
// batch: blocks are allocated for what is scheduled, the serving-contract
// arrays built (BatchBuilder), and the plan executed. `generateGreedy` is
// the simple loop folio-run uses: all prompts prefill together in step 0,
// then every sequence decodes one token per step.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_CORE_ENGINE_H
#define FOLIO_RUNTIME_CORE_ENGINE_H

#include "runtime/Core/BatchBuilder.h"
#include "runtime/Executor/Executor.h"
#include "runtime/KVCache/KVCacheManager.h"
#include "runtime/Plan/Plan.h"
#include "runtime/Sampler/SamplingParams.h"

#include <memory>
#include <vector>

namespace folio::core {

struct GenerateOptions {
  int64_t maxNewTokens = 16;
  /// Longest context accepted; 0 = the plan's max_positions (unbounded when
  /// the plan names none). Never more than the plan's max_positions (the
  /// rows of its position table) or max_context (the length its attention
  /// masks were proven causal up to): a larger value is refused.
  int64_t maxModelLen = 0;
  /// Keep every step's logits rows ([prompts, maxNewTokens, vocab]).
  bool keepLogits = false;
  /// temperature 0 (the default here) is greedy argmax, first index on
  /// ties; otherwise temperature, top-k and top-p go through the sampler.
  /// Only the sampling fields are used (no penalties, stops or logprobs).
  /// Every prompt uses `sampling.seed` (like requests that carry the same
  /// seed), so a prompt samples the same tokens alone or in any batch; with
  /// no seed each prompt draws one at random.
  SamplingParams sampling = greedySampling();

  static SamplingParams greedySampling() {
    SamplingParams p;
    p.temperature = 0.0f;
    return p;
  }
};

struct GenerateResult {
  std::vector<std::vector<TokenId>> tokens; ///< new tokens per prompt
  std::vector<float> logits;                ///< when keepLogits
  int64_t vocab = 0;
};

/// One sequence as the engine tracks it between steps.
struct SequenceState {
  RequestId id;
  std::vector<TokenId> tokens; ///< prompt + generated
  int64_t numComputed = 0;
};

class Engine {
public:
  /// Loads `plan` into `executor`; sizes the KV cache for `numBlocks`
  /// blocks (null block included).
  static Expected<std::unique_ptr<Engine>>
  create(std::shared_ptr<const plan::Plan> plan,
         std::unique_ptr<exec::Executor> executor, int64_t numBlocks);

  /// Loads `plan` into `executor`, allocates `numBlocks` KV blocks (null
  /// block included) and returns a block manager for them, without prefix
  /// caching: the setup of anything that runs its own sequences over its
  /// own cache (this engine, a draft model).
  static Expected<std::unique_ptr<KVCacheManager>>
  loadWithOwnCache(exec::Executor &executor,
                   std::shared_ptr<const plan::Plan> plan, int64_t numBlocks);

  int64_t blockSize() const { return blockSize_; }
  int64_t vocab() const { return vocab_; }
  /// The plan's maximum positions, or 0 when it has none.
  int64_t maxPositions() const { return maxPositions_; }

  /// Runs `numScheduled[i]` more tokens of each `seqs[i]` as one batch and
  /// returns the logits of each sequence's last scheduled token ([S, vocab]).
  /// Allocates blocks as needed; advances numComputed.
  Status step(std::vector<SequenceState *> &seqs,
              const std::vector<int64_t> &numScheduled,
              std::vector<float> &logits);

  /// Releases a sequence's blocks.
  void release(const SequenceState &seq) { kv_->freeRequest(seq.id); }

  /// All prompts prefill together in step 0, then each decodes one token
  /// per step, choosing tokens as options.sampling says.
  Expected<GenerateResult>
  generate(const std::vector<std::vector<TokenId>> &prompts,
           const GenerateOptions &options);

  /// generate() with options.sampling forced to greedy.
  Expected<GenerateResult>
  generateGreedy(const std::vector<std::vector<TokenId>> &prompts,
                 GenerateOptions options) {
    options.sampling = GenerateOptions::greedySampling();
    return generate(prompts, options);
  }

  /// What generate() refuses before running anything: no prompts, an empty
  /// one, a token id outside [0, vocab) (vocab 0: unchecked), bad sampling
  /// parameters, a maxModelLen beyond the plan's max_context or
  /// max_positions, and a prompt, or prompt + maxNewTokens - 1, longer than
  /// the context allowed. Tools call it before sizing the KV cache.
  /// Refuses a max-model-len the plan cannot serve: past max_context (the
  /// attention masks are proven causal only that far) or past
  /// max_positions (a table indexed by position has that many rows). The
  /// one check the plain and the serving engine share.
  static Status checkMaxModelLen(const plan::Plan &plan, int64_t maxModelLen);

  static Status checkGenerate(const plan::Plan &plan, int64_t vocab,
                              const std::vector<std::vector<TokenId>> &prompts,
                              const GenerateOptions &options);

  /// Blocks needed to generate `maxNewTokens` after each prompt, plus the
  /// null block.
  static int64_t blocksFor(const std::vector<std::vector<TokenId>> &prompts,
                           int64_t maxNewTokens, int64_t blockSize);

private:
  std::shared_ptr<const plan::Plan> plan_;
  std::unique_ptr<exec::Executor> executor_;
  std::unique_ptr<KVCacheManager> kv_;
  int64_t blockSize_ = 16;
  int64_t vocab_ = 0;
  int64_t maxPositions_ = 0;
};

} // namespace folio::core

#endif // FOLIO_RUNTIME_CORE_ENGINE_H
