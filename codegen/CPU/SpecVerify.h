//===- SpecVerify.h - Lossless verification of speculative tokens -*- C++
//-*-===//
//
// The CPU kernel of `folio.spec_verify`. S sequences each bring up to K
// draft tokens; the target model scored the K draft positions and one past
// them. Greedy verification keeps the longest prefix of drafts equal to the
// target's argmax and then emits the target's argmax (the correction, or the
// bonus token when every draft matched). Sampled verification is the
// rejection sampling of Leviathan et al. and Chen et al.: draft x at row j is
// kept with probability min(1, p_j(x) / q_j(x)); the first rejected row
// draws from max(0, p_j - q_j) renormalised, and a sequence whose drafts are
// all kept draws its bonus token from p_K. Its output is distributed exactly
// as sampling the target alone.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_SPECVERIFY_H
#define FOLIO_CODEGEN_CPU_SPECVERIFY_H

#include "codegen/CPU/Status.h"
#include "codegen/CPU/ThreadPool.h"

#include <cstdint>

namespace folio::cpu {

struct SpecVerifyArgs {
  int64_t numSeqs = 0;  ///< S (0 is an empty batch: nothing to do)
  int64_t numDraft = 0; ///< K >= 0, drafts per sequence at most
  int64_t vocab = 0;    ///< V >= 1
  /// [S, K+1, V]: the final logits of the distribution each row samples
  /// from (penalties, temperature, min-p, top-k and top-p already applied,
  /// masked tokens at -inf). p_j = softmax(row j). A row may hold anything
  /// past a sequence's own drafts + 1 (it is not read).
  const float *targetLogits = nullptr;
  /// [S, K]: a sequence with k < K drafts has -1 from column k on. A draft
  /// outside [0, V), or a draft after a -1, is an error.
  const int32_t *draftTokens = nullptr;
  /// [S, K, V], sample mode only: the draft's probabilities q_j, from the
  /// same logits processing as the target's rows. Null means a
  /// deterministic proposer (n-gram lookup): q_j is one-hot at the draft.
  const float *draftProbs = nullptr;
  /// [S, K+1] in [0, 1), sample mode only: uniforms[s, j] decides row j's
  /// acceptance, uniforms[s, K] the one token drawn (residual or bonus).
  const float *uniforms = nullptr;
  /// Out [S]: drafts kept, 0..k.
  int32_t *accepted = nullptr;
  /// Out [S, K+1]: the kept drafts, then the corrected or bonus token,
  /// then -1 padding.
  int32_t *tokens = nullptr;
};

/// Argmax verification (first maximum on ties, as greedy sampling takes
/// it). Fails, naming the sequence and row, on a bad draft or a row with
/// no entry above -inf or with NaN or +inf, and when draftProbs or uniforms
/// is given (greedy reads neither).
///
/// Both kernels check a target row only where they read it: rows 0..m of a
/// sequence that stops at row m (its first rejection, or its bonus row k).
/// On any error nothing is written to `accepted` or `tokens`, and the
/// error names the lowest failing sequence. Sequences run in parallel on
/// `pool`; the results do not depend on its size.
Status specVerifyGreedy(const SpecVerifyArgs &args,
                        ThreadPool &pool = ThreadPool::global());

/// Rejection-sampling verification. Fails as specVerifyGreedy does, and on
/// null uniforms, a uniform outside [0, 1) or NaN (in the columns a
/// sequence with k drafts can use: 0..k-1 and K), a proposed draft whose
/// draft probability is 0, or draft probabilities that are negative or
/// non-finite in a row that is read. When a rejection leaves a residual of
/// mass 0 (p <= q everywhere: only by rounding, or from a q row summing
/// above 1), the token is drawn from p_j instead. Draws never return a
/// token of probability 0.
Status specVerifySample(const SpecVerifyArgs &args,
                        ThreadPool &pool = ThreadPool::global());

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_SPECVERIFY_H
