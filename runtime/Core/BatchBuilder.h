//===- BatchBuilder.h - One engine step's serving-contract arrays -*- C++
//-*-===//
//
// Flattens the sequences scheduled this step into the vLLM-v1 batch the
// compiled `forward` takes. Each sequence contributes its tokens
// [numComputed, numComputed + numScheduled), at those positions; its block
// table maps position p to slot table[p / B] * B + p % B. The scheduler
// (SchedulerOutput) and folio-run both describe a step this way.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_CORE_BATCHBUILDER_H
#define FOLIO_RUNTIME_CORE_BATCHBUILDER_H

#include "runtime/Executor/Executor.h"
#include "runtime/Sampler/SamplingParams.h"
#include "runtime/Support/Status.h"
#include "runtime/Support/Types.h"

#include <vector>

namespace folio::core {

/// One sequence's part of a step (views; nothing owned).
struct ScheduledSequence {
  const std::vector<TokenId> *tokens = nullptr;     ///< all known tokens
  int64_t numComputed = 0;                          ///< KV already cached
  int64_t numScheduled = 0;                         ///< tokens to run now
  const std::vector<BlockId> *blockTable = nullptr; ///< covers the context
  /// Whether this step should produce logits for the sequence's last
  /// scheduled token (false for a prefill chunk that does not finish the
  /// prompt).
  bool wantLogits = true;
};

/// Builds the arrays; errors name the sequence whose table or counts do not
/// cover what is scheduled. Block tables are padded with the null block 0.
Expected<exec::ForwardBatch>
buildForwardBatch(const std::vector<ScheduledSequence> &seqs,
                  int64_t blockSize);

/// A request's processing for a device sampler: its penalties over its
/// history (`prompt` and `output`, null for none), then temperature 0 for
/// greedy (the row's argmax), else temperature, min-p, top-k and top-p
/// with the draw's uniform.
exec::DeviceDraw deviceDraw(const SamplingParams &params, double uniform,
                            const std::vector<TokenId> *prompt = nullptr,
                            const std::vector<TokenId> *output = nullptr);

} // namespace folio::core

#endif // FOLIO_RUNTIME_CORE_BATCHBUILDER_H
