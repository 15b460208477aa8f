//===- SpecController.cpp - How many tokens to speculate this step --------===//

#include "runtime/SpecDecode/SpecController.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace folio::spec {

namespace {

/// Acceptance counts decay by this per step, remembering roughly the last
/// few hundred steps.
constexpr double kAcceptDecay = 0.995;
/// Pseudo-counts pulling a position's acceptance toward the position before
/// (the first toward 1/2) while it has been tried only a few times.
constexpr double kPositionPrior = 2.0;

} // namespace

SpecController::SpecController(size_t maxK, bool adaptive)
    : maxK_(maxK), adaptive_(adaptive) {
  assert(maxK >= 1 && "speculating needs at least one token");
  // A neutral prior: one kept and one rejected draft.
  keptDecayed = 1;
  rejectedDecayed = 1;
  triedAt.assign(maxK, 0.0);
  keptAt.assign(maxK, 0.0);
}

void SpecController::Timing::record(double seconds) {
  recent[samples % kTimingWindow] = seconds;
  ++samples;
}

double SpecController::Timing::seconds() const {
  assert(samples > 0 && "a k not timed has no median");
  unsigned n = std::min(samples, kTimingWindow);
  std::array<double, kTimingWindow> kept = recent;
  std::sort(kept.begin(), kept.begin() + n);
  return kept[(n - 1) / 2];
}

SpecController::Bucket &SpecController::bucketFor(size_t batchSize) {
  size_t index = 0;
  while ((size_t(2) << index) <= batchSize)
    ++index;
  if (buckets.size() <= index)
    buckets.resize(index + 1);
  Bucket &b = buckets[index];
  if (b.byK.empty())
    b.byK.resize(maxK_ + 1);
  return b;
}

double SpecController::acceptanceRate() const {
  return keptDecayed / (keptDecayed + rejectedDecayed);
}

double SpecController::positionAcceptance(size_t j) const {
  double p = 0.5;
  for (size_t i = 0; i < std::min(j, maxK_); ++i)
    p = (keptAt[i] + kPositionPrior * p) / (triedAt[i] + kPositionPrior);
  return p;
}

double SpecController::expectedTokens(size_t k) const {
  double coverage = (guessedDecayed + 1.0) / (sequencesDecayed + 1.0);
  double tokens = 0, reach = 1, p = 0.5;
  for (size_t i = 0; i < std::min(k, maxK_); ++i) {
    p = (keptAt[i] + kPositionPrior * p) / (triedAt[i] + kPositionPrior);
    reach *= p;
    tokens += reach;
  }
  return 1.0 + coverage * tokens;
}

double SpecController::estimate(const Bucket &b, size_t k) const {
  if (b.byK[k].samples)
    return b.byK[k].seconds();
  // Linear through the nearest timed k below and above; with one side
  // only, through the two nearest on that side; with a single timed k,
  // nothing to go on (negative).
  std::vector<size_t> timed;
  for (size_t j = 0; j < b.byK.size(); ++j)
    if (b.byK[j].samples)
      timed.push_back(j);
  if (timed.size() < 2)
    return -1;
  size_t lo = 0, hi = 0;
  auto above = std::upper_bound(timed.begin(), timed.end(), k);
  if (above == timed.begin()) {
    lo = timed[0];
    hi = timed[1];
  } else if (above == timed.end()) {
    lo = timed[timed.size() - 2];
    hi = timed.back();
  } else {
    lo = *(above - 1);
    hi = *above;
  }
  double slope = (b.byK[hi].seconds() - b.byK[lo].seconds()) / double(hi - lo);
  // A step never gets cheaper with more drafts; noise can say otherwise.
  slope = std::max(slope, 0.0);
  return b.byK[lo].seconds() + slope * (double(k) - double(lo));
}

double SpecController::predictedSeconds(size_t batchSize, size_t k) {
  return estimate(bucketFor(batchSize), std::min(k, maxK_));
}

size_t SpecController::chooseK(size_t batchSize) {
  if (!adaptive_ || batchSize == 0)
    return maxK_;
  Bucket &b = bucketFor(batchSize);
  ++b.steps;
  if (size_t k = b.repeatK) {
    b.repeatK = 0;
    return k;
  }
  // Time the baseline and one draft first, twice each (one step can be
  // an outlier): the model needs two points.
  for (unsigned round = 1; round <= 2; ++round)
    for (size_t k : {size_t(0), size_t(1)})
      if (b.byK[k].samples < round)
        return k;
  auto rateOf = [&](size_t k) {
    double seconds = estimate(b, k);
    return seconds > 0 ? expectedTokens(k) / seconds : -1.0;
  };
  // The best k with speculation on, and off (k = 0).
  size_t bestOn = 0;
  double bestOnRate = -1;
  for (size_t k = 1; k <= maxK_; ++k) {
    double rate = rateOf(k);
    if (rate > bestOnRate * (1 + 1e-9)) {
      bestOnRate = rate;
      bestOn = k;
    }
  }
  double offRate = rateOf(0);
  bool on = bestOnRate > offRate * (1 + 1e-9);
  // On to off or off to on only for a clear gain (kSwitchMargin); on the
  // side kept, its best k.
  if (b.chosen && on != (b.choice != 0) && offRate > 0 && bestOnRate > 0)
    on = on ? bestOnRate >= offRate * (1 + kSwitchMargin)
            : offRate < bestOnRate * (1 + kSwitchMargin);
  size_t best = on ? bestOn : 0;
  b.choice = best;
  b.chosen = true;
  if (b.steps >= b.nextRefresh) {
    b.interval = best == b.choiceAtRefresh
                     ? std::min(2 * b.interval, kMaxRefreshInterval)
                     : kRefreshInterval;
    b.choiceAtRefresh = best;
    b.nextRefresh = b.steps + b.interval;
    // Re-time the stalest of the baseline and the choice's neighbours:
    // the linear model is only as good as the points next to the optimum,
    // and a baseline timed once, slowly, must not keep speculation on.
    size_t stalest = best;
    for (size_t k : {size_t(0), best > 0 ? best - 1 : best,
                     best < maxK_ ? best + 1 : best}) {
      if (k == best)
        continue;
      if (stalest == best || b.byK[k].lastStep < b.byK[stalest].lastStep)
        stalest = k;
    }
    if (best == 0)
      b.repeatK = stalest;
    return stalest;
  }
  return best;
}

void SpecController::recordAcceptance(size_t numProposed, size_t numAccepted,
                                      size_t numRejectedRuns) {
  proposed += numProposed;
  accepted += numAccepted;
  keptDecayed = keptDecayed * kAcceptDecay + double(numAccepted);
  rejectedDecayed = rejectedDecayed * kAcceptDecay + double(numRejectedRuns);
}

void SpecController::recordSequence(size_t numDrafts, size_t numKept) {
  numDrafts = std::min(numDrafts, maxK_);
  numKept = std::min(numKept, numDrafts);
  for (size_t i = 0; i < maxK_; ++i) {
    triedAt[i] *= kAcceptDecay;
    keptAt[i] *= kAcceptDecay;
  }
  // Drafts 1..numKept were kept; draft numKept + 1, if proposed, was
  // reached and rejected; later ones were never judged.
  for (size_t i = 0; i < std::min(numKept + 1, numDrafts); ++i) {
    triedAt[i] += 1;
    keptAt[i] += i < numKept;
  }
}

void SpecController::recordCoverage(size_t numSequences, size_t numGuessed) {
  sequencesDecayed = sequencesDecayed * kAcceptDecay + double(numSequences);
  guessedDecayed = guessedDecayed * kAcceptDecay +
                   double(std::min(numGuessed, numSequences));
}

void SpecController::recordTime(size_t batchSize, size_t k, double seconds) {
  if (batchSize == 0 || k > maxK_ || !(seconds > 0))
    return;
  Bucket &b = bucketFor(batchSize);
  Timing &t = b.byK[k];
  // Timings from before the longest refresh interval no longer describe
  // the machine: the new one starts the window afresh rather than waiting
  // for three more (a k not chosen is timed once per refresh).
  if (t.samples && b.steps - t.lastStep > kMaxRefreshInterval)
    t.samples = 0;
  t.record(seconds);
  t.lastStep = b.steps;
}

} // namespace folio::spec
