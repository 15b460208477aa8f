//===- ReferenceSpecVerify.cpp - Speculative verification by definition ---===//
//
// Per row the whole distribution p = softmax(row) as a vector, the draft's
// q as a vector (one-hot without draft probabilities), the residual
// normalised to a distribution and drawn by comparing its cumulative sums
// with u. The kernel instead draws from unnormalised weights against
// u * total; the two can differ only where a decision sits within rounding
// of its threshold, which `margins` reports.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Reference/Reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace folio::cpu::ref {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

int64_t draftCount(const SpecVerifyArgs &a, int64_t s) {
  int64_t k = 0;
  while (k < a.numDraft && a.draftTokens[s * a.numDraft + k] >= 0)
    ++k;
  return k;
}

std::vector<double> softmaxRow(const float *row, int64_t V) {
  double m = -kInf;
  for (int64_t i = 0; i < V; ++i)
    m = std::max(m, double(row[i]));
  std::vector<double> p(static_cast<size_t>(V));
  double sum = 0;
  for (int64_t i = 0; i < V; ++i)
    sum += p[i] = std::exp(double(row[i]) - m);
  for (double &x : p)
    x /= sum;
  return p;
}

/// Draws from the distribution `w` (summing to about 1) with u: the first
/// token whose cumulative probability exceeds u. `gap` receives the
/// distance from u to the nearer edge of the chosen token's interval.
int32_t draw(const std::vector<double> &w, double u, double &gap) {
  double before = 0;
  int32_t last = -1;
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i] <= 0)
      continue;
    double after = before + w[i];
    if (u < after) {
      // u == 0 below the first token of mass is no boundary case.
      double low = last < 0 && u == 0 ? kInf : u - before;
      gap = std::min(low, after - u);
      return int32_t(i);
    }
    before = after;
    last = int32_t(i);
  }
  gap = 0; // u fell past the rounded total
  return last;
}

} // namespace

void specVerifyGreedy(const SpecVerifyArgs &a) {
  const int64_t K = a.numDraft, V = a.vocab;
  for (int64_t s = 0; s < a.numSeqs; ++s) {
    int64_t k = draftCount(a, s);
    int32_t *out = a.tokens + s * (K + 1);
    std::fill(out, out + K + 1, -1);
    int64_t j = 0;
    for (;; ++j) {
      const float *row = a.targetLogits + (s * (K + 1) + j) * V;
      int32_t best = int32_t(std::max_element(row, row + V) - row);
      out[j] = best;
      if (j == k || a.draftTokens[s * K + j] != best)
        break;
    }
    a.accepted[s] = int32_t(j);
  }
}

void specVerifySample(const SpecVerifyArgs &a, double *margins) {
  const int64_t K = a.numDraft, V = a.vocab;
  for (int64_t s = 0; s < a.numSeqs; ++s) {
    int64_t k = draftCount(a, s);
    int32_t *out = a.tokens + s * (K + 1);
    const float *u = a.uniforms + s * (K + 1);
    std::fill(out, out + K + 1, -1);
    double margin = kInf, gap = kInf;
    int64_t j = 0;
    for (;; ++j) {
      std::vector<double> p =
          softmaxRow(a.targetLogits + (s * (K + 1) + j) * V, V);
      if (j == k) {
        out[j] = draw(p, u[K], gap);
        margin = std::min(margin, gap);
        break;
      }
      int32_t x = a.draftTokens[s * K + j];
      std::vector<double> q(size_t(V), 0.0);
      if (a.draftProbs)
        for (int64_t i = 0; i < V; ++i)
          q[i] = a.draftProbs[(s * K + j) * V + i];
      else
        q[x] = 1.0;
      double uq = double(u[j]) * q[x];
      // p(x) == 0 (masked) rejects whatever u is: no boundary case.
      if (p[x] > 0)
        margin = std::min(margin, std::fabs(uq - p[x]));
      if (uq < p[x]) { // accepted with probability min(1, p/q)
        out[j] = x;
        continue;
      }
      std::vector<double> r(static_cast<size_t>(V));
      double mass = 0, closest = -kInf;
      for (int64_t i = 0; i < V; ++i) {
        r[i] = std::max(0.0, p[i] - q[i]);
        mass += r[i];
        closest = std::max(closest, p[i] - q[i]);
      }
      if (mass > 0) {
        for (double &x : r)
          x /= mass;
        out[j] = draw(r, u[K], gap);
        // The gap is in units of the normalised residual.
        margin = std::min({margin, mass, gap * mass});
      } else {
        // No residual: the kernel draws from p (SpecVerify.h); how far the
        // largest p - q is from turning positive bounds the ambiguity.
        out[j] = draw(p, u[K], gap);
        margin = std::min({margin, -closest, gap});
      }
      break;
    }
    a.accepted[s] = int32_t(j);
    if (margins)
      margins[s] = margin;
  }
}

} // namespace folio::cpu::ref
