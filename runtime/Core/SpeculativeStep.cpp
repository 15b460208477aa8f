//===- SpeculativeStep.cpp - Verifying one step's draft tokens ------------===//

#include "runtime/Core/SpeculativeStep.h"

#include "runtime/Executor/RunVerify.h"

#include "runtime/Sampler/LogitsProcessors.h"
#include "runtime/Sampler/Philox.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace folio::core {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/// A row that samples `token` with certainty: how a greedy row takes part
/// in rejection sampling (p one-hot at the argmax makes the test keep a
/// draft exactly when it is the argmax, and the residual is the argmax).
void oneHot(float *row, int64_t vocab, TokenId token) {
  std::fill(row, row + vocab, kNegInf);
  row[token] = 0.0f;
}

/// An executor that only verifies, with the CPU kernels.
class CpuVerifier : public exec::Executor {
public:
  const char *deviceName() const override { return "cpu verifier"; }
  Status load(std::shared_ptr<const plan::Plan>) override { return refuse(); }
  exec::KVCacheLayout kvCacheLayout() const override { return {}; }
  Status allocateKVCache(int64_t) override { return refuse(); }
  Status forward(const exec::ForwardBatch &, std::vector<float> &,
                 int64_t &) override {
    return refuse();
  }
  Status verify(const exec::VerifyBatch &b, std::vector<int32_t> &accepted,
                std::vector<int32_t> &tokens) override {
    cpu::SpecVerifyArgs a = exec::specVerifyArgs(b, accepted, tokens);
    cpu::Status s =
        b.sample ? cpu::specVerifySample(a) : cpu::specVerifyGreedy(a);
    return s.ok() ? Status::ok() : Status::internal(s.message());
  }

private:
  static Status refuse() {
    return Status::invalidArgument("the CPU verifier only verifies");
  }
};

/// A uniform as the kernel takes it: float in [0, 1) (the double's
/// rounding could reach 1.0f).
float toUnitFloat(double u) {
  return std::min(float(u), std::nextafter(1.0f, 0.0f));
}

} // namespace

Status verifySpeculative(exec::Executor &executor, float *logits,
                         int64_t maxDrafts, int64_t vocab,
                         const std::vector<SpecSequence> &seqs,
                         std::vector<SpecOutcome> &out) {
  size_t numSeqs = seqs.size();
  size_t K = size_t(maxDrafts), V = size_t(vocab);
  out.assign(numSeqs, SpecOutcome());
  if (numSeqs == 0)
    return Status::ok();
  bool sample = false, anyProbs = false;
  for (const SpecSequence &s : seqs) {
    sample |= !s.params->isGreedy();
    anyProbs |= s.draftProbs && !s.draftProbs->empty();
    if (draftProbsOnlyOnDevice(s))
      return Status::internal("draft distributions kept on a device reached "
                              "the host's verification without a copy");
  }

  std::vector<int32_t> drafts(numSeqs * K, -1);
  std::vector<std::vector<std::vector<double>>> kept(numSeqs);
  for (size_t i = 0; i < numSeqs; ++i) {
    const SpecSequence &s = seqs[i];
    const SamplingParams &params = *s.params;
    size_t k = s.drafts->size();
    bool penalties = hasPenalties(params);
    bool logprobs = params.logprobs.has_value();
    bool process = !params.isGreedy() || penalties || logprobs;
    std::vector<TokenId> history;
    if (penalties)
      history = *s.output;
    for (size_t j = 0; j <= k && out[i].error.empty(); ++j) {
      float *row = logits + (i * (K + 1) + j) * V;
      LogitsCheck check = checkLogitsRow(row, V);
      if (!check.ok()) {
        out[i].error = std::string("logits hold ") +
                       logitsFaultName(check.fault) +
                       (check.fault == LogitsFault::AllNegInf
                            ? ""
                            : " (entry " + std::to_string(check.index) + ")") +
                       " at draft position " + std::to_string(j);
        break;
      }
      if (!process) {
        // Greedy without penalties: the kernel takes the argmax of the
        // raw row as the sampler would; in a sampled batch it must be
        // spelled out as a certainty.
        if (sample)
          oneHot(row, vocab, firstMaximum(row, V));
        continue;
      }
      SampleRow sr;
      sr.params = &params;
      sr.promptTokenIds = penalties ? s.prompt : nullptr;
      sr.outputTokenIds = penalties ? &history : nullptr;
      sr.seed = s.seed;
      sr.position = s.position + j;
      Expected<std::vector<double>> proc = processLogits(row, V, sr);
      if (!proc) {
        out[i].error =
            proc.status().message() + " at draft position " + std::to_string(j);
        break;
      }
      if (params.isGreedy()) {
        // The argmax taken in double precision, as plain greedy sampling
        // takes it, so speculation never changes a greedy token.
        oneHot(row, vocab, argmaxProcessed(*proc));
      } else {
        for (size_t v = 0; v < V; ++v)
          row[v] = float((*proc)[v]);
      }
      if (logprobs)
        kept[i].push_back(std::move(*proc));
      if (penalties && j < k)
        history.push_back((*s.drafts)[j]);
    }
    if (!out[i].error.empty()) {
      // Out of the batch: no drafts, and a harmless row to read.
      std::fill(logits + i * (K + 1) * V, logits + (i * (K + 1) + 1) * V, 0.0f);
      continue;
    }
    std::copy(s.drafts->begin(), s.drafts->end(), drafts.begin() + long(i * K));
  }

  std::vector<float> probs, uniforms;
  if (sample) {
    uniforms.resize(numSeqs * (K + 1));
    for (size_t i = 0; i < numSeqs; ++i)
      verifyUniforms(seqs[i], maxDrafts, uniforms.data() + i * (K + 1));
    if (anyProbs) {
      probs.assign(numSeqs * K * V, 0.0f);
      for (size_t i = 0; i < numSeqs; ++i) {
        const SpecSequence &s = seqs[i];
        size_t k = out[i].error.empty() ? s.drafts->size() : 0;
        float *q = probs.data() + i * K * V;
        bool own = s.draftProbs && s.draftProbs->size() >= k * V &&
                   !s.draftProbs->empty() && !s.params->isGreedy();
        for (size_t j = 0; j < k; ++j) {
          if (own)
            std::copy(s.draftProbs->begin() + long(j * V),
                      s.draftProbs->begin() + long((j + 1) * V), q + j * V);
          else
            q[j * V + size_t((*s.drafts)[j])] = 1.0f;
        }
      }
    }
  }

  exec::VerifyBatch batch;
  batch.numSeqs = int64_t(numSeqs);
  batch.numDraft = maxDrafts;
  batch.vocab = vocab;
  batch.sample = sample;
  batch.targetLogits = logits;
  batch.draftTokens = drafts.data();
  batch.draftProbs = probs.empty() ? nullptr : probs.data();
  batch.uniforms = uniforms.empty() ? nullptr : uniforms.data();
  std::vector<int32_t> accepted, tokens;
  if (Status st = executor.verify(batch, accepted, tokens); !st)
    return st;
  if (accepted.size() != numSeqs || tokens.size() != numSeqs * (K + 1))
    return Status::internal("verification returned " +
                            std::to_string(accepted.size()) + " counts and " +
                            std::to_string(tokens.size()) + " tokens for " +
                            std::to_string(numSeqs) + " sequences");
  for (size_t i = 0; i < numSeqs; ++i) {
    SpecOutcome &o = out[i];
    if (!o.error.empty())
      continue;
    size_t n = size_t(accepted[i]);
    if (n > seqs[i].drafts->size())
      return Status::internal("verification kept more drafts than proposed");
    o.numAccepted = n;
    o.tokens.assign(tokens.begin() + long(i * (K + 1)),
                    tokens.begin() + long(i * (K + 1) + n + 1));
    if (seqs[i].params->logprobs)
      for (size_t j = 0; j <= n; ++j)
        o.logprobs.push_back(logprobsProcessed(kept[i][j], o.tokens[j],
                                               *seqs[i].params->logprobs));
  }
  return Status::ok();
}

void verifyGreedyTokens(const int32_t *argmax, int64_t maxDrafts, int64_t vocab,
                        const std::vector<SpecSequence> &seqs,
                        std::vector<SpecOutcome> &out) {
  const size_t rowsPerSeq = size_t(maxDrafts) + 1;
  out.assign(seqs.size(), SpecOutcome());
  for (size_t i = 0; i < seqs.size(); ++i) {
    const std::vector<TokenId> &drafts = *seqs[i].drafts;
    const int32_t *rows = argmax + i * rowsPerSeq;
    SpecOutcome &o = out[i];
    // Every row is checked, kept or not, as verifySpeculative checks them.
    for (size_t j = 0; j <= drafts.size(); ++j)
      if (rows[j] < 0 || rows[j] >= vocab) {
        o.error = "logits hold NaN or +inf, or only -inf (the argmax was "
                  "taken on the device) at draft position " +
                  std::to_string(j);
        break;
      }
    if (!o.error.empty())
      continue;
    size_t n = 0;
    while (n < drafts.size() && drafts[n] == rows[n])
      ++n;
    o.numAccepted = n;
    o.tokens.assign(drafts.begin(), drafts.begin() + long(n));
    o.tokens.push_back(rows[n]);
  }
}

Status verifySpeculativeOnCpu(float *logits, int64_t maxDrafts, int64_t vocab,
                              const std::vector<SpecSequence> &seqs,
                              std::vector<SpecOutcome> &out) {
  CpuVerifier verifier;
  return verifySpeculative(verifier, logits, maxDrafts, vocab, seqs, out);
}

void verifyUniforms(const SpecSequence &seq, int64_t maxDrafts, float *out) {
  const size_t K = size_t(maxDrafts);
  for (size_t j = 0; j < K; ++j)
    out[j] = toUnitFloat(
        philoxUniform(seq.seed, seq.position + j, kVerifyAcceptStream));
  out[K] =
      toUnitFloat(philoxUniform(seq.seed, seq.position, kVerifyDrawStream));
}

void verifyPenaltyLists(const SpecSequence &seq, int64_t maxDrafts,
                        std::vector<int32_t> *tokens,
                        std::vector<int32_t> *counts) {
  // Row 0's from the history, then each row's from the row before it and
  // one more draft: one sort of the history per sequence, not one per row.
  penaltyList(*seq.params, *seq.prompt, *seq.output, tokens[0], counts[0]);
  for (size_t j = 1; j <= size_t(maxDrafts); ++j) {
    tokens[j] = tokens[j - 1];
    counts[j] = counts[j - 1];
    if (j > seq.drafts->size())
      continue;
    const TokenId t = (*seq.drafts)[j - 1];
    auto at = std::lower_bound(tokens[j].begin(), tokens[j].end(), t);
    const long i = at - tokens[j].begin();
    if (at != tokens[j].end() && *at == t) {
      ++counts[j][size_t(i)];
    } else {
      tokens[j].insert(at, t);
      counts[j].insert(counts[j].begin() + i, 1);
    }
  }
}

bool verifiableOnDevice(const SpecSequence &seq, bool logprobs, bool penalties,
                        bool deviceProbs) {
  const SamplingParams &params = *seq.params;
  const bool oneHot = !seq.draftProbs || seq.draftProbs->empty();
  return (!hasPenalties(params) || penalties) &&
         (!params.logprobs || logprobs) &&
         (params.isGreedy() ||
          (oneHot && (seq.draftProbsRow < 0 || deviceProbs)));
}

Status verifiedOnDevice(const int32_t *accepted, const int32_t *tokens,
                        int64_t maxDrafts, int64_t vocab,
                        const std::vector<SpecSequence> &seqs,
                        std::vector<SpecOutcome> &out) {
  const size_t rowsPerSeq = size_t(maxDrafts) + 1;
  out.assign(seqs.size(), SpecOutcome());
  for (size_t i = 0; i < seqs.size(); ++i) {
    SpecOutcome &o = out[i];
    if (accepted[i] < 0) {
      o.error = "logits hold NaN or +inf, or only -inf (the drafts were "
                "verified on the device)";
      continue;
    }
    const size_t n = size_t(accepted[i]);
    const int32_t *row = tokens + i * rowsPerSeq;
    if (n > seqs[i].drafts->size() || row[n] < 0 || row[n] >= vocab)
      return Status::internal("the device's verification of sequence " +
                              std::to_string(i) + " kept " + std::to_string(n) +
                              " of " + std::to_string(seqs[i].drafts->size()) +
                              " drafts, then token " + std::to_string(row[n]));
    o.numAccepted = n;
    o.tokens.assign(row, row + n + 1);
  }
  return Status::ok();
}

} // namespace folio::core
