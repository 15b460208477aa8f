//===- SpecController.h - How many tokens to speculate this step -*- C++
//-*-===//
//
// Speculation pays when the target's forward over B x (k + 1) tokens costs
// little more than over B tokens, and the proposer guesses well. Both
// change with the batch: at batch 1 a CPU decode step is bound by reading
// the weights and verifying k more tokens is almost free; at batch 16 it
// turns compute-bound and every rejected draft is wasted work. So k is
// chosen per step from what was measured, not configured once:
//
//   tokens per step(k) = B * (1 + q * sum_{i<=k} p_1 * ... * p_i)
//   throughput(k)      = tokens per step(k) / step time(B, k)
//
// where q is the share of decoding sequences the proposer had a guess for
// and p_j the measured chance that draft j is kept once drafts 1..j-1 were
// (Leviathan et al.'s geometric model is every p_j equal; measured per
// position because acceptance is bursty: an n-gram guess inside a loop of
// the model's own text is kept whole, one outside it rarely past its first
// token, so a single rate undervalues deep drafts). A position not tried
// yet takes the estimate of the one before. step time(B, k) is the wall time of
// a decode step (proposing included) over about B sequences, kept per
// power-of-two batch bucket and per k as the lower median of its last few
// timings: one step that another process stretched five-fold must not price its
// k out of the choice (a moving average did, and a k that is neither the choice
// nor its neighbour is never timed again); timings older than
// kMaxRefreshInterval steps are dropped when the k is timed again, since they
// no longer describe the machine. Where a k has not been timed in a bucket, its
// time is extrapolated linearly from the ks that have (a step's cost grows
// about linearly in k: k draft forwards and k more target tokens per sequence);
// the best k by this model is taken, so an untimed k gets timed exactly when
// the model says it could win. Turning speculation on or off takes a gain of
// kSwitchMargin over the best k of the side in use (k = 0, or the best k >= 1):
// a draft model turned on catches up on the tokens decoded while it was off, a
// cost no timing sees, and where speculating is a near tie (batch 16: k = 1
// priced 2 % over k = 0, then 2 % under) the choice otherwise followed the
// noise of single steps. Every refresh interval (kRefreshInterval steps,
// doubled up to kMaxRefreshInterval while the choice holds from one refresh to
// the next) the least recently timed of k = 0 and the choice's neighbours is
// timed again, so a changing machine load or workload moves it; while k = 0 is
// the choice, its neighbour k = 1 runs two steps, since a draft model's first
// step after steps without speculation catches up on the tokens decoded
// meanwhile and is not timed. k = 0 turns speculation off.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SPECDECODE_SPECCONTROLLER_H
#define FOLIO_RUNTIME_SPECDECODE_SPECCONTROLLER_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace folio::spec {

class SpecController {
public:
  /// `maxK` >= 1 is --num-speculative-tokens. Not adaptive: always maxK.
  SpecController(size_t maxK, bool adaptive);

  /// The k for a step over `batchSize` speculating sequences (0 = off).
  size_t chooseK(size_t batchSize);

  /// What one step did: drafts proposed, kept, and the sequences whose
  /// drafts were not all kept (each such run ends in one rejection).
  void recordAcceptance(size_t numProposed, size_t numAccepted,
                        size_t numRejectedRuns);
  /// One sequence's verification: `numKept` of its `numDrafts` drafts kept
  /// (the per-position model that chooses k).
  void recordSequence(size_t numDrafts, size_t numKept);
  /// One proposing step: of `numSequences` decoding sequences, the
  /// proposer guessed for `numGuessed`.
  void recordCoverage(size_t numSequences, size_t numGuessed);
  /// The wall time of a decode-only step (proposing and the target's
  /// forward and verification) over `batchSize` sequences with k drafts
  /// each. Steps that also prefill are not comparable and not recorded.
  void recordTime(size_t batchSize, size_t k, double seconds);

  /// Per-draft acceptance so far: kept / (kept + first rejections).
  double acceptanceRate() const;
  /// Expected tokens per sequence and step with k drafts under the
  /// per-position model.
  double expectedTokens(size_t k) const;
  /// The chance that draft j (1-based) is kept when drafts 1..j-1 were.
  double positionAcceptance(size_t j) const;
  /// Drafts proposed and kept over the whole run.
  uint64_t numProposed() const { return proposed; }
  uint64_t numAccepted() const { return accepted; }
  size_t maxK() const { return maxK_; }
  bool adaptive() const { return adaptive_; }

  /// The step time the model predicts for k drafts over `batchSize`
  /// sequences; negative when too little was timed in that bucket yet.
  double predictedSeconds(size_t batchSize, size_t k);

  /// After how many steps in a bucket k = 0 or a neighbour of the choice
  /// is timed again, at first and whenever the choice changed since the
  /// refresh before; the interval doubles up to kMaxRefreshInterval while
  /// it holds.
  static constexpr unsigned kRefreshInterval = 32;
  static constexpr unsigned kMaxRefreshInterval = 128;
  /// The gain in tokens per second that turns speculation on or off.
  static constexpr double kSwitchMargin = 0.03;

private:
  /// How many of a k's latest timings its estimate is taken from.
  static constexpr unsigned kTimingWindow = 5;
  struct Timing {
    /// The latest timings, oldest overwritten first.
    std::array<double, kTimingWindow> recent{};
    unsigned samples = 0;  ///< all timings so far
    uint64_t lastStep = 0; ///< bucket step when last measured
    void record(double seconds);
    /// The lower median of the kept timings: a single slow step (of the
    /// two after a k's first, of three from five) does not move it.
    double seconds() const;
  };
  struct Bucket {
    std::vector<Timing> byK; ///< [maxK + 1]
    uint64_t steps = 0;
    /// A k > 0 re-timed while speculation is off runs two steps: the first
    /// catches a draft model up (not timed, ServingEngine), the second is
    /// what the k costs.
    size_t repeatK = 0;
    /// The k chosen last (not a re-timed one), once there is one.
    size_t choice = 0;
    bool chosen = false;
    /// The refresh schedule: the next one's step, the interval to it, and
    /// the choice at the one before.
    uint64_t nextRefresh = kRefreshInterval;
    unsigned interval = kRefreshInterval;
    size_t choiceAtRefresh = SIZE_MAX; ///< none before the first
  };
  Bucket &bucketFor(size_t batchSize);
  double estimate(const Bucket &b, size_t k) const;

  size_t maxK_;
  bool adaptive_;
  std::vector<Bucket> buckets;
  /// Acceptance counts, decayed so that the rate follows the workload.
  double keptDecayed = 0, rejectedDecayed = 0;
  /// Per draft position j (index j - 1): verifications that reached it and
  /// kept it, decayed per recorded sequence.
  std::vector<double> triedAt, keptAt;
  /// Decoding sequences, and those with a guess, decayed per step.
  double sequencesDecayed = 0, guessedDecayed = 0;
  uint64_t proposed = 0, accepted = 0;
};

} // namespace folio::spec

#endif // FOLIO_RUNTIME_SPECDECODE_SPECCONTROLLER_H
