//===- LogitsProcessors.cpp - Steps from logits to a distribution ---------===//

#include "runtime/Sampler/LogitsProcessors.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <numeric>

using namespace folio;

namespace {

constexpr double kMasked = -std::numeric_limits<double>::infinity();

double maxLogit(const std::vector<double> &logits) {
  double best = kMasked;
  for (double l : logits)
    best = std::max(best, l);
  return best;
}

} // namespace

void folio::applyPenalties(std::vector<double> &logits,
                           const SamplingParams &params,
                           const std::vector<TokenId> &promptTokenIds,
                           const std::vector<TokenId> &outputTokenIds) {
  auto index = [&](TokenId token) {
    assert(token >= 0 && static_cast<size_t>(token) < logits.size() &&
           "token id outside the vocabulary");
    return static_cast<size_t>(token);
  };
  if (params.repetitionPenalty != 1.0f) {
    double penalty = params.repetitionPenalty;
    std::vector<bool> seen(logits.size(), false);
    for (const std::vector<TokenId> *tokens :
         {&promptTokenIds, &outputTokenIds}) {
      for (TokenId token : *tokens) {
        size_t i = index(token);
        if (seen[i])
          continue;
        seen[i] = true;
        logits[i] = logits[i] > 0 ? logits[i] / penalty : logits[i] * penalty;
      }
    }
  }
  if (params.frequencyPenalty == 0.0f && params.presencePenalty == 0.0f)
    return;
  std::vector<int32_t> counts(logits.size(), 0);
  for (TokenId token : outputTokenIds)
    ++counts[index(token)];
  for (size_t i = 0; i < logits.size(); ++i) {
    if (counts[i] == 0)
      continue;
    logits[i] -= static_cast<double>(params.frequencyPenalty) * counts[i] +
                 static_cast<double>(params.presencePenalty);
  }
}

void folio::penaltyList(const SamplingParams &params,
                        const std::vector<TokenId> &promptTokenIds,
                        const std::vector<TokenId> &outputTokenIds,
                        std::vector<int32_t> &tokens,
                        std::vector<int32_t> &counts) {
  // Sorted runs, not a hash map: the lists come out in id order, and a
  // long history costs one sort.
  std::vector<TokenId> history(outputTokenIds);
  std::sort(history.begin(), history.end());
  std::vector<TokenId> prompt;
  if (params.repetitionPenalty != 1.0f) {
    prompt = promptTokenIds;
    std::sort(prompt.begin(), prompt.end());
    prompt.erase(std::unique(prompt.begin(), prompt.end()), prompt.end());
  }
  tokens.clear();
  counts.clear();
  size_t h = 0, p = 0;
  while (h < history.size() || p < prompt.size()) {
    TokenId t =
        h < history.size() && (p == prompt.size() || history[h] <= prompt[p])
            ? history[h]
            : prompt[p];
    int32_t n = 0;
    for (; h < history.size() && history[h] == t; ++h)
      ++n;
    for (; p < prompt.size() && prompt[p] == t; ++p) {
    }
    tokens.push_back(t);
    counts.push_back(n);
  }
}

void folio::applyTemperature(std::vector<double> &logits, double temperature) {
  assert(temperature > 0 && "greedy rows are not temperature-scaled");
  for (double &l : logits)
    l /= temperature;
}

void folio::applyMinP(std::vector<double> &logits, double minP) {
  if (minP <= 0)
    return;
  // p_i >= minP * p_max  <=>  l_i >= l_max + log(minP).
  double threshold = maxLogit(logits) + std::log(minP);
  for (double &l : logits)
    if (l < threshold)
      l = kMasked;
}

void folio::applyTopK(std::vector<double> &logits, int32_t k) {
  if (k <= 0)
    return;
  std::vector<double> live;
  for (double l : logits)
    if (l != kMasked)
      live.push_back(l);
  if (static_cast<size_t>(k) >= live.size())
    return;
  std::nth_element(live.begin(), live.begin() + (k - 1), live.end(),
                   std::greater<double>());
  double kth = live[k - 1];
  for (double &l : logits)
    if (l < kth)
      l = kMasked;
}

void folio::applyTopP(std::vector<double> &logits, double topP) {
  if (topP >= 1.0)
    return;
  std::vector<size_t> order;
  for (size_t i = 0; i < logits.size(); ++i)
    if (logits[i] != kMasked)
      order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  });
  double lse = logSumExp(logits);
  double cumulative = 0;
  size_t keep = 0;
  while (keep < order.size() && cumulative < topP)
    cumulative += std::exp(logits[order[keep++]] - lse);
  for (size_t j = keep; j < order.size(); ++j)
    logits[order[j]] = kMasked;
}

double folio::logSumExp(const std::vector<double> &logits) {
  double best = maxLogit(logits);
  if (best == kMasked)
    return kMasked;
  double sum = 0;
  for (double l : logits)
    sum += std::exp(l - best);
  return best + std::log(sum);
}
