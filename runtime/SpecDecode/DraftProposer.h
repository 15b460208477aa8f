//===- DraftProposer.h - A small model guesses for the big one --*- C++ -*-===//
//
// The draft is any model Folio compiles that shares the target's
// vocabulary. It has its own executor and its own paged KV cache (its own
// block manager, no prefix sharing), and keeps, per sequence, the tokens
// whose KV its cache holds. Each call first catches a sequence up with
// what the target accepted (the tokens it has not seen, usually the last
// accepted draft and the bonus token, or the whole prompt of a new
// sequence), then runs k - 1 single-token steps over every sequence at
// once, drawing each draft from the request's own sampling settings.
// Rejected drafts are rolled back by length: the next call compares what
// the cache holds with the sequence and keeps the common prefix, so no KV
// is ever copied.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SPECDECODE_DRAFTPROPOSER_H
#define FOLIO_RUNTIME_SPECDECODE_DRAFTPROPOSER_H

#include "runtime/Executor/Executor.h"
#include "runtime/KVCache/KVCacheManager.h"
#include "runtime/Plan/Plan.h"
#include "runtime/SpecDecode/Proposer.h"

#include <memory>
#include <unordered_map>

namespace folio::spec {

class DraftProposer final : public Proposer {
public:
  /// Loads `plan` into `executor` with a KV cache of `numBlocks` blocks
  /// (null block included). `targetVocab` must be the plan's vocabulary;
  /// `maxModelLen` must fit the plan's positions and proven context.
  static Expected<std::unique_ptr<DraftProposer>>
  create(std::shared_ptr<const plan::Plan> plan,
         std::unique_ptr<exec::Executor> executor, int64_t numBlocks,
         int64_t targetVocab, int64_t maxModelLen);

  const char *method() const override { return "draft"; }
  Status propose(const std::vector<ProposeInput> &inputs, size_t k,
                 std::vector<Proposal> &out) override;
  void release(const RequestId &requestId) override;
  int64_t kvCacheBytes() const override {
    return numBlocks * executor->kvCacheLayout().bytesPerBlock;
  }
  /// Steady when no sequence needed more than the two tokens a
  /// verification adds beyond the draft's own (the last kept draft and the
  /// target's bonus token).
  bool lastProposalSteady() const override { return steady; }
  /// Where the draft executor draws on its device and `verifier` reads
  /// what it keeps there: sampled drafts then keep q on the device (one
  /// reservation of rows per propose()).
  bool keepProbsFor(const exec::Executor &verifier) override;
  exec::DeviceProbRows deviceProbs() const override { return probRows; }

  int64_t blockSize() const { return blockSize_; }
  /// Where the draft runs ("cpu", "cuda").
  const char *deviceName() const { return executor->deviceName(); }
  exec::KVCacheLayout kvCacheLayout() const {
    return executor->kvCacheLayout();
  }
  /// Sequences whose KV the draft's cache holds.
  size_t numTracked() const { return seqs.size(); }
  /// Tokens of `requestId` whose KV the draft's cache holds (tests).
  size_t numCached(const RequestId &requestId) const;
  const KVCacheManager &kvCache() const { return *kv; }

private:
  DraftProposer() = default;

  struct SeqState {
    /// The sequence as the draft last saw it, its drafts appended; the
    /// first numComputed have KV in the draft's cache.
    std::vector<TokenId> tokens;
    size_t numComputed = 0;
  };

  std::shared_ptr<const plan::Plan> plan;
  std::unique_ptr<exec::Executor> executor;
  std::unique_ptr<KVCacheManager> kv;
  int64_t blockSize_ = 16;
  int64_t vocab = 0;
  int64_t numBlocks = 0;
  std::unordered_map<RequestId, SeqState> seqs;
  bool steady = true;
  /// keepProbsFor accepted: the last reservation of q rows.
  bool keepOnDevice = false;
  exec::DeviceProbRows probRows;
};

} // namespace folio::spec

#endif // FOLIO_RUNTIME_SPECDECODE_DRAFTPROPOSER_H
