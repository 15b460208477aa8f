//===- SpecVerify.cpp - Greedy and rejection-sampling verification --------===//
//
// Cheap checks over the whole batch come first (sizes, pointers, drafts,
// uniforms, the draft probability of each proposed token). A target row is
// checked (NaN, +inf, only -inf) by the pass that finds its maximum, and a
// draft probability row just before the row is used, so only the rows a
// sequence reads are checked and none is read twice to validate it. Each
// sequence is verified by one thread from its own inputs into a staged copy of
// the outputs, which is copied out only when every sequence succeeded: a failed
// call writes nothing, reports the lowest failing sequence, and no result
// depends on the pool size.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/SpecVerify.h"
#include "codegen/CPU/Validate.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace folio::cpu {

using namespace detail;

namespace {

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

/// The batch being verified, with its shapes and message prefixes.
struct Batch {
  const char *kernel;
  const SpecVerifyArgs &a;
  int64_t S, K, V;

  const float *logitsRow(int64_t s, int64_t j) const {
    return a.targetLogits + (s * (K + 1) + j) * V;
  }
  const float *probsRow(int64_t s, int64_t j) const {
    return a.draftProbs + (s * K + j) * V;
  }
  const int32_t *drafts(int64_t s) const { return a.draftTokens + s * K; }
  const float *uniforms(int64_t s) const { return a.uniforms + s * (K + 1); }

  /// k: the drafts before the first -1 (validated: none follows it).
  int64_t numDrafts(int64_t s) const {
    const int32_t *d = drafts(s);
    int64_t k = 0;
    while (k < K && d[k] != -1)
      ++k;
    return k;
  }

  std::string at(int64_t s, const char *what, int64_t j) const {
    return std::string(kernel) + ": sequence " + std::to_string(s) + ", " +
           what + " " + std::to_string(j) + ": ";
  }
};

/// What the first pass over a target row finds.
struct RowScan {
  float max = -INFINITY;
  int64_t argmax = -1; ///< first maximum; -1 when every entry is -inf
  int64_t bad = -1;    ///< first NaN or +inf
};

RowScan scanRow(const float *row, int64_t V) {
  RowScan r;
  for (int64_t i = 0; i < V; ++i) {
    float v = row[i];
    if (!(v < INFINITY)) { // NaN or +inf
      r.bad = i;
      return r;
    }
    if (v > r.max) {
      r.max = v;
      r.argmax = i;
    }
  }
  return r;
}

/// The error for a row scanRow rejected, or "" when it is usable.
std::string rowError(const Batch &b, int64_t s, int64_t j, const float *row,
                     const RowScan &r) {
  if (r.bad >= 0)
    return b.at(s, "row", j) + "target logit " + std::to_string(r.bad) +
           " is " + fmt(row[r.bad]) +
           "; logits must be finite or -inf (masked)";
  if (r.argmax < 0)
    return b.at(s, "row", j) +
           "every target logit is -inf; a row needs at least one token above "
           "-inf";
  return "";
}

bool validProb(float v) { return v >= 0.0f && v < INFINITY; }

/// Inverse-CDF draw: the first index whose running sum of weight(i) (>= 0)
/// exceeds u * total, where total is the sum of the same weights in the
/// same order. A token of weight 0 is never returned: adding 0 leaves the
/// running sum where it was, at or below the target. Should rounding leave
/// the target at or above the final running sum, the draw takes the last
/// token of positive weight rather than run off the end.
template <typename WeightFn>
int32_t drawIndex(int64_t V, double total, float u, WeightFn weight) {
  double target = double(u) * total, running = 0;
  int64_t last = -1;
  for (int64_t i = 0; i < V; ++i) {
    double w = weight(i);
    running += w;
    if (running > target)
      return int32_t(i);
    last = w > 0 ? i : last;
  }
  return int32_t(last);
}

void padFrom(int32_t *tokens, int64_t from, int64_t K) {
  for (int64_t j = from; j <= K; ++j)
    tokens[j] = -1;
}

/// Checks what every sequence brings, in sequence order; the rows
/// themselves are checked as they are read.
Status checkBatch(const Batch &b, bool sample) {
  for (int64_t s = 0; s < b.S; ++s) {
    const int32_t *d = b.drafts(s);
    bool padded = false;
    for (int64_t j = 0; j < b.K; ++j) {
      int32_t t = d[j];
      if (t == -1) {
        padded = true;
        continue;
      }
      if (t < 0 || t >= b.V)
        return Status::error(b.at(s, "draft", j) + "token " +
                             std::to_string(t) + " is outside the vocabulary " +
                             "[0, " + std::to_string(b.V) +
                             "); drafts are token ids, padded with -1 at "
                             "the end");
      if (padded)
        return Status::error(b.at(s, "draft", j) + "token " +
                             std::to_string(t) +
                             " follows -1 padding; -1 may only pad the end of "
                             "a sequence's drafts");
    }
    if (!sample)
      continue;
    int64_t k = b.numDrafts(s);
    const float *u = b.uniforms(s);
    // The columns this sequence can use: its drafts' and the draw's (K).
    for (int64_t j = 0; j <= b.K; ++j) {
      if (j >= k && j < b.K)
        continue;
      if (!(u[j] >= 0.0f && u[j] < 1.0f))
        return Status::error(b.at(s, "uniform", j) + fmt(u[j]) +
                             " is outside [0, 1)");
    }
    if (!b.a.draftProbs)
      continue;
    for (int64_t j = 0; j < k; ++j) {
      float q = b.probsRow(s, j)[d[j]];
      if (!validProb(q))
        return Status::error(b.at(s, "row", j) + "draft probability of token " +
                             std::to_string(d[j]) + " is " + fmt(q) +
                             "; draft probabilities must be finite and >= 0");
      if (q == 0.0f)
        return Status::error(
            b.at(s, "row", j) + "draft token " + std::to_string(d[j]) +
            " has draft probability 0; a proposed token needs q > 0");
    }
  }
  return Status::success();
}

/// Longest prefix of drafts equal to the argmax, then the argmax.
std::string verifyGreedy(const Batch &b, int64_t s, int32_t *tokens,
                         int32_t &accepted) {
  int64_t k = b.numDrafts(s);
  const int32_t *d = b.drafts(s);
  for (int64_t j = 0; j <= k; ++j) {
    const float *row = b.logitsRow(s, j);
    RowScan r = scanRow(row, b.V);
    std::string err = rowError(b, s, j, row, r);
    if (!err.empty())
      return err;
    tokens[j] = int32_t(r.argmax);
    if (j == k || d[j] != r.argmax) {
      accepted = int32_t(j);
      padFrom(tokens, j + 1, b.K);
      return "";
    }
  }
  return ""; // unreachable: row k always ends the loop
}

/// Rejection sampling of one sequence; `e` is this thread's scratch of V
/// doubles: the unnormalised probabilities exp(l - max) of the current row.
std::string verifySample(const Batch &b, int64_t s, int32_t *tokens,
                         int32_t &accepted, double *e) {
  const int64_t V = b.V;
  int64_t k = b.numDrafts(s);
  const int32_t *d = b.drafts(s);
  const float *u = b.uniforms(s);
  for (int64_t j = 0; j <= k; ++j) {
    const float *row = b.logitsRow(s, j);
    RowScan r = scanRow(row, V);
    std::string err = rowError(b, s, j, row, r);
    if (!err.empty())
      return err;
    const float *q = j < k && b.a.draftProbs ? b.probsRow(s, j) : nullptr;
    if (q)
      for (int64_t i = 0; i < V; ++i)
        if (!validProb(q[i]))
          return b.at(s, "row", j) + "draft probability of token " +
                 std::to_string(i) + " is " + fmt(q[i]) +
                 "; draft probabilities must be finite and >= 0";

    // The maximum contributes exp(0) = 1, so sum >= 1. Masked entries skip
    // the exp: rows after top-k are mostly -inf.
    double m = r.max, sum = 0;
    for (int64_t i = 0; i < V; ++i) {
      float l = row[i];
      double w = l == -INFINITY ? 0.0 : std::exp(double(l) - m);
      e[i] = w;
      sum += w;
    }
    auto fromTarget = [&](int64_t i) { return e[i]; };

    if (j == k) { // every draft kept: the bonus token from p_k
      tokens[k] = drawIndex(V, sum, u[b.K], fromTarget);
      accepted = int32_t(k);
      padFrom(tokens, k + 1, b.K);
      return "";
    }

    // Keep x iff u < min(1, p/q); float u and q multiply exactly in double.
    int32_t x = d[j];
    double qx = q ? double(q[x]) : 1.0;
    if (double(u[j]) * qx < e[x] / sum) {
      tokens[j] = x;
      continue;
    }

    // Rejected: draw from max(0, p - q) renormalised.
    double invSum = 1.0 / sum;
    auto residual = [&](int64_t i) {
      double qi = q ? double(q[i]) : (i == x ? 1.0 : 0.0);
      double r = e[i] * invSum - qi;
      return r > 0 ? r : 0.0;
    };
    double mass = 0;
    for (int64_t i = 0; i < V; ++i)
      mass += residual(i);
    // The residual's mass is the total-variation distance of p and q: it is
    // 0 only when p <= q everywhere, i.e. q == p for normalised rows, and
    // then a rejection has probability 0 and happens only by rounding (p(x)
    // a hair below u q(x)) or because q's row sums above 1. The draw after
    // such a rejection is undefined; p_j is what sampling the target alone
    // would give, so the output stays distributed as the target's.
    tokens[j] = mass > 0 ? drawIndex(V, mass, u[b.K], residual)
                         : drawIndex(V, sum, u[b.K], fromTarget);
    accepted = int32_t(j);
    padFrom(tokens, j + 1, b.K);
    return "";
  }
  return ""; // unreachable: row k always returns
}

Status specVerify(const char *kernel, const SpecVerifyArgs &a, bool sample,
                  ThreadPool &pool) {
  FOLIO_RETURN_IF_ERROR(checkNonNegative(kernel, "numSeqs", a.numSeqs));
  FOLIO_RETURN_IF_ERROR(checkNonNegative(kernel, "numDraft", a.numDraft));
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "vocab", a.vocab));
  const int64_t S = a.numSeqs, K = a.numDraft, V = a.vocab;
  int64_t rowsPerSeq = 0, rows = 0, logitsElems = 0, draftElems = 0,
          probElems = 0;
  if (__builtin_add_overflow(K, int64_t(1), &rowsPerSeq) ||
      __builtin_mul_overflow(S, rowsPerSeq, &rows) ||
      __builtin_mul_overflow(rows, V, &logitsElems) ||
      __builtin_mul_overflow(S, K, &draftElems) ||
      __builtin_mul_overflow(draftElems, V, &probElems))
    return Status::error(std::string(kernel) + ": numSeqs " +
                         std::to_string(S) + " x (numDraft " +
                         std::to_string(K) + " + 1) x vocab " +
                         std::to_string(V) + " overflows int64");
  FOLIO_RETURN_IF_ERROR(
      checkPointer(kernel, "targetLogits", a.targetLogits, logitsElems));
  FOLIO_RETURN_IF_ERROR(
      checkPointer(kernel, "draftTokens", a.draftTokens, draftElems));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "accepted", a.accepted, S));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "tokens", a.tokens, rows));
  if (sample) {
    if (!a.uniforms && rows > 0)
      return Status::error(std::string(kernel) +
                           ": uniforms is null; sampled verification needs "
                           "[numSeqs, numDraft + 1] uniforms in [0, 1)");
  } else if (a.draftProbs || a.uniforms) {
    return Status::error(std::string(kernel) +
                         ": draftProbs and uniforms must be null; greedy "
                         "verification reads neither (specVerifySample "
                         "samples with them)");
  }
  if (S == 0)
    return Status::success();

  Batch b{kernel, a, S, K, V};
  FOLIO_RETURN_IF_ERROR(checkBatch(b, sample));

  std::vector<int32_t> tokens(static_cast<size_t>(rows));
  std::vector<int32_t> accepted(static_cast<size_t>(S));
  std::vector<std::string> errors(static_cast<size_t>(S));
  // The lowest failing sequence so far; later sequences are skipped, lower
  // ones still run, so the error reported is always the lowest one.
  std::atomic<int64_t> firstError{S};
  // Sampling costs an exp per entry, greedy a compare: chunks of about the
  // same time.
  int64_t grain = rowGrain((K + 1) * V, sample ? 2048 : 16384);
  pool.parallelFor(S, grain, [&](int64_t begin, int64_t end) {
    thread_local std::vector<double> scratch;
    if (sample && scratch.size() < size_t(V))
      scratch.resize(size_t(V));
    for (int64_t s = begin; s < end; ++s) {
      if (s > firstError.load(std::memory_order_relaxed))
        return;
      int32_t *t = tokens.data() + s * (K + 1);
      std::string err = sample
                            ? verifySample(b, s, t, accepted[s], scratch.data())
                            : verifyGreedy(b, s, t, accepted[s]);
      if (err.empty())
        continue;
      errors[s] = std::move(err);
      int64_t cur = firstError.load(std::memory_order_relaxed);
      while (s < cur && !firstError.compare_exchange_weak(
                            cur, s, std::memory_order_relaxed))
        ;
    }
  });
  if (int64_t bad = firstError.load(); bad < S)
    return Status::error(errors[bad]);
  std::copy(tokens.begin(), tokens.end(), a.tokens);
  std::copy(accepted.begin(), accepted.end(), a.accepted);
  return Status::success();
}

} // namespace

Status specVerifyGreedy(const SpecVerifyArgs &args, ThreadPool &pool) {
  return specVerify("specVerifyGreedy", args, /*sample=*/false, pool);
}

Status specVerifySample(const SpecVerifyArgs &args, ThreadPool &pool) {
  return specVerify("specVerifySample", args, /*sample=*/true, pool);
}

} // namespace folio::cpu
