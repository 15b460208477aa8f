//===- ModelRunner.h - SchedulerOutput in, sampled tokens out ---*- C++ -*-===//
//
// The executor side of the scheduler contract (STYLE 13): it keeps each
// request's tokens and block table from the scheduler's full records and
// diffs, turns a step into the serving-contract batch, runs the plan and
// samples one token for every request whose scheduled tokens reach the end
// of what it knows (a prefill chunk that does not finish the prompt samples
// nothing). A request with draft tokens scheduled gets k + 1 logits rows,
// verified by the plan's verify entry (SpeculativeStep.h): its output is
// the kept drafts and one more token.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_CORE_MODELRUNNER_H
#define FOLIO_RUNTIME_CORE_MODELRUNNER_H

#include "runtime/Executor/Executor.h"
#include "runtime/Scheduler/SchedulerOutput.h"
#include "runtime/Support/Status.h"

#include <unordered_map>
#include <vector>

namespace folio::core {

/// The distributions a draft model drew its drafts from, per request with
/// drafts scheduled: on the host ([k, vocab] for at least the scheduled
/// drafts), or kept where the draft ran (a GPU) in `device`'s rows, from
/// the request's `deviceRow` on.
struct DraftDistributions {
  std::unordered_map<RequestId, std::vector<float>> host;
  std::unordered_map<RequestId, int32_t> deviceRow;
  exec::DeviceProbRows device;

  void clear() {
    host.clear();
    deviceRow.clear();
    device = {};
  }
};

class ModelRunner {
public:
  ModelRunner(exec::Executor &executor, int64_t blockSize)
      : executor(executor), blockSize(blockSize) {}

  /// Runs one scheduled step. Fails without changing what it knows about
  /// requests when the step refers to a request it has no state for, or
  /// the executor fails. A sampled row holding NaN or +inf, or only -inf,
  /// (or one the sampler refuses) is that request's error alone: its
  /// output carries `error` and no token, and the other rows sample as if
  /// it were not in the batch.
  ///
  /// Steps are numbered from 0 in the order execute() is called; error
  /// messages name that step and the output token that was being sampled.
  ///
  /// `draftProbs` gives, per request with drafts scheduled, the draft's
  /// distributions; a request in neither of its maps (or no draftProbs)
  /// was proposed deterministically.
  Expected<ModelRunnerOutput>
  execute(const SchedulerOutput &step,
          const DraftDistributions *draftProbs = nullptr);

  /// Requests the runner currently holds state for.
  size_t numTrackedRequests() const { return requests.size(); }

private:
  struct RequestState {
    std::vector<TokenId> prompt;
    std::vector<TokenId> output;
    std::vector<TokenId> all; ///< prompt then output
    std::vector<BlockId> blockTable;
    SamplingParams params;
    uint64_t seed = 0;
    size_t numComputed = 0;
  };

  exec::Executor &executor;
  int64_t blockSize;
  uint64_t numSteps = 0;
  std::unordered_map<RequestId, RequestState> requests;
};

} // namespace folio::core

#endif // FOLIO_RUNTIME_CORE_MODELRUNNER_H
