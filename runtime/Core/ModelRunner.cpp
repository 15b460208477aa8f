//===- ModelRunner.cpp - SchedulerOutput in, sampled tokens out -----------===//

#include "runtime/Core/ModelRunner.h"

#include "runtime/Core/BatchBuilder.h"
#include "runtime/Core/SpeculativeStep.h"
#include "runtime/Sampler/LogitsProcessors.h"
#include "runtime/Sampler/Philox.h"
#include "runtime/Sampler/Sampler.h"

#include <algorithm>
#include <unordered_map>

namespace folio::core {

Expected<ModelRunnerOutput>
ModelRunner::execute(const SchedulerOutput &step,
                     const DraftDistributions *draftProbs) {
  for (const RequestId &id : step.finishedRequestIds)
    requests.erase(id);
  for (const RequestId &id : step.preemptedRequestIds)
    requests.erase(id);

  for (const NewRequestData &n : step.scheduledNewRequests) {
    RequestState state;
    state.prompt = n.promptTokenIds;
    state.output = n.outputTokenIds;
    state.all = n.promptTokenIds;
    state.all.insert(state.all.end(), n.outputTokenIds.begin(),
                     n.outputTokenIds.end());
    state.blockTable = n.blockIds;
    state.params = n.samplingParams;
    state.seed = n.seed;
    state.numComputed = n.numComputedTokens;
    requests[n.requestId] = std::move(state);
  }
  for (const CachedRequestData &c : step.scheduledCachedRequests) {
    auto it = requests.find(c.requestId);
    if (it == requests.end())
      return Status::invalidArgument("the step continues request '" +
                                     c.requestId +
                                     "', which the model runner never saw");
    RequestState &state = it->second;
    state.output.insert(state.output.end(), c.newTokenIds.begin(),
                        c.newTokenIds.end());
    state.all.insert(state.all.end(), c.newTokenIds.begin(),
                     c.newTokenIds.end());
    state.blockTable.insert(state.blockTable.end(), c.newBlockIds.begin(),
                            c.newBlockIds.end());
    state.numComputed = c.numComputedTokens;
  }

  // New requests first, then continuing ones: the order SchedulerOutput
  // lists them in, so each step's batch layout is reproducible.
  std::vector<const RequestId *> order;
  for (const NewRequestData &n : step.scheduledNewRequests)
    order.push_back(&n.requestId);
  for (const CachedRequestData &c : step.scheduledCachedRequests)
    order.push_back(&c.requestId);

  // Rows: speculating requests first, K + 1 each ([S, K + 1, V], the
  // verify entry's layout, padded by repeating the last row), then one per
  // other request that samples.
  std::vector<ScheduledSequence> seqs;
  std::vector<const RequestId *> sampled, speculating;
  std::vector<const std::vector<TokenId> *> specDrafts;
  std::vector<size_t> sampledSeq, specSeq; // index into seqs
  // Known tokens then drafts, per speculating request: what the forward
  // runs. Reserved, so the views into it stay valid.
  std::vector<std::vector<TokenId>> withDrafts;
  withDrafts.reserve(step.scheduledSpecDecodeTokens.size());
  size_t maxDrafts = 0;
  for (const RequestId *id : order) {
    auto count = step.numScheduledTokens.find(*id);
    if (count == step.numScheduledTokens.end() || count->second == 0)
      continue;
    RequestState &state = requests.at(*id);
    ScheduledSequence seq;
    seq.tokens = &state.all;
    seq.numComputed = int64_t(state.numComputed);
    seq.numScheduled = int64_t(count->second);
    seq.blockTable = &state.blockTable;
    seq.wantLogits = false; // the rows are laid out below
    auto spec = step.scheduledSpecDecodeTokens.find(*id);
    if (spec != step.scheduledSpecDecodeTokens.end() && !spec->second.empty()) {
      const std::vector<TokenId> &drafts = spec->second;
      if (state.numComputed + count->second != state.all.size() + drafts.size())
        return Status::invalidArgument(
            "the step schedules " + std::to_string(count->second) +
            " tokens of request '" + *id + "' from " +
            std::to_string(state.numComputed) + ", which does not end at its " +
            std::to_string(drafts.size()) + " drafts after " +
            std::to_string(state.all.size()) + " known tokens");
      withDrafts.push_back(state.all);
      withDrafts.back().insert(withDrafts.back().end(), drafts.begin(),
                               drafts.end());
      seq.tokens = &withDrafts.back();
      speculating.push_back(id);
      specDrafts.push_back(&drafts);
      specSeq.push_back(seqs.size());
      maxDrafts = std::max(maxDrafts, drafts.size());
    } else if (state.numComputed + count->second >= state.all.size()) {
      sampled.push_back(id);
      sampledSeq.push_back(seqs.size());
    }
    seqs.push_back(seq);
  }

  ModelRunnerOutput result;
  uint64_t stepIndex = numSteps++;
  if (seqs.empty())
    return result;
  Expected<exec::ForwardBatch> batch = buildForwardBatch(seqs, blockSize);
  if (!batch)
    return batch.status();
  std::vector<int32_t> &rows = batch->logitsIndices;
  rows.clear();
  for (size_t i = 0; i < speculating.size(); ++i) {
    int32_t end = batch->queryStartLoc[specSeq[i] + 1];
    int32_t k = int32_t(specDrafts[i]->size());
    for (int32_t j = 0; j <= int32_t(maxDrafts); ++j)
      rows.push_back(end - 1 - k + std::min(j, k));
  }
  for (size_t i : sampledSeq)
    rows.push_back(batch->queryStartLoc[i + 1] - 1);
  std::vector<SampledToken> tokens(sampled.size());
  std::vector<std::string> errors(sampled.size());
  std::vector<SpecOutcome> outcomes;
  const size_t specRows = speculating.size() * (maxDrafts + 1);
  std::vector<SpecSequence> specs;
  for (size_t i = 0; i < speculating.size(); ++i) {
    const RequestState &state = requests.at(*speculating[i]);
    SpecSequence s;
    s.prompt = &state.prompt;
    s.output = &state.output;
    s.drafts = specDrafts[i];
    if (draftProbs) {
      auto it = draftProbs->host.find(*speculating[i]);
      if (it != draftProbs->host.end())
        s.draftProbs = &it->second;
      auto row = draftProbs->deviceRow.find(*speculating[i]);
      if (row != draftProbs->deviceRow.end())
        s.draftProbsRow = row->second;
    }
    s.params = &state.params;
    s.seed = state.seed;
    s.position = state.all.size();
    specs.push_back(s);
  }
  // Where the executor samples on its device (a GPU) and every row this
  // step samples or verifies is plain greedy, or every row samples greedy
  // or a draw (temperature, min-p, top-k, top-p; penalties and logprobs
  // where the executor takes them there) with nothing speculating, only the
  // tokens (and logprobs) come back, not the logits rows: greedy
  // verification needs no more than each row's argmax.
  bool allGreedy = !sampled.empty() || !speculating.empty(),
       allDraws = !sampled.empty();
  const bool penalizes = executor.penalizesOnDevice(),
             reportsLogprobs = executor.logprobsOnDevice();
  for (const RequestId *id : sampled) {
    const SamplingParams &params = requests.at(*id).params;
    allGreedy &= plainGreedy(params);
    allDraws &= (!hasPenalties(params) || penalizes) &&
                (!params.logprobs || reportsLogprobs);
  }
  for (const RequestId *id : speculating)
    allGreedy &= plainGreedy(requests.at(*id).params);
  bool greedyOnDevice = allGreedy && executor.greedyOnDevice(),
       drawsOnDevice =
           speculating.empty() && allDraws && executor.samplesOnDevice();
  // The plain rows' tokens taken on the device (after specRows): -1 fails
  // that request alone, as a faulty row does on the host.
  auto takeDeviceTokens = [&](const std::vector<int32_t> &ids, int64_t vocab) {
    for (size_t r = 0; r < sampled.size(); ++r) {
      const int32_t id = ids[specRows + r];
      if (id >= 0 && id < vocab) {
        tokens[r].token = id;
        continue;
      }
      errors[r] = "logits of request '" + *sampled[r] +
                  "' hold NaN or +inf, or only -inf (its token was sampled "
                  "on the device) at step " +
                  std::to_string(stepIndex) + ", output token " +
                  std::to_string(requests.at(*sampled[r]).output.size());
    }
  };
  // The plain rows' draws: the uniform the host sampler would draw with
  // (sampleRow), the penalties' lists, and how many logprobs to report.
  auto plainDraws = [&] {
    std::vector<exec::DeviceDraw> draws;
    for (const RequestId *id : sampled) {
      const RequestState &state = requests.at(*id);
      draws.push_back(deviceDraw(state.params,
                                 philoxUniform(state.seed, state.all.size()),
                                 &state.prompt, &state.output));
      draws.back().logprobs = state.params.logprobs.value_or(-1);
    }
    return draws;
  };
  // Logprobs the device reported (one entry per row: the speculating
  // sequences' maxDrafts + 1 rows each, then the plain rows) into the
  // outcomes and tokens of the rows that asked and have a token.
  auto takeDeviceLogprobs = [&](std::vector<exec::DeviceLogprobs> &logprobs,
                                int64_t vocab) -> Status {
    if (logprobs.size() != specRows + sampled.size())
      return Status::internal(
          "the executor returned " + std::to_string(logprobs.size()) +
          " logprobs for " + std::to_string(specRows + sampled.size()) +
          " rows");
    auto take = [&](exec::DeviceLogprobs &l, int32_t want,
                    const RequestId &id) -> Expected<TokenLogprobs> {
      if (l.topTokens.size() != std::min<size_t>(size_t(want), size_t(vocab)) ||
          l.topLogprobs.size() != l.topTokens.size())
        return Status::internal("the executor reported " +
                                std::to_string(l.topTokens.size()) +
                                " top logprobs for request '" + id +
                                "', which asked for " + std::to_string(want));
      TokenLogprobs t;
      t.logprob = l.logprob;
      for (size_t j = 0; j < l.topTokens.size(); ++j)
        t.top.emplace_back(l.topTokens[j], l.topLogprobs[j]);
      return t;
    };
    for (size_t i = 0; i < speculating.size(); ++i) {
      const std::optional<int32_t> &want = specs[i].params->logprobs;
      SpecOutcome &o = outcomes[i];
      if (!want || !o.error.empty())
        continue;
      for (size_t j = 0; j < o.tokens.size(); ++j) {
        Expected<TokenLogprobs> t =
            take(logprobs[i * (maxDrafts + 1) + j], *want, *speculating[i]);
        if (!t)
          return t.status();
        o.logprobs.push_back(std::move(*t));
      }
    }
    for (size_t r = 0; r < sampled.size(); ++r) {
      const std::optional<int32_t> &want =
          requests.at(*sampled[r]).params.logprobs;
      if (!want || !errors[r].empty())
        continue;
      Expected<TokenLogprobs> t =
          take(logprobs[specRows + r], *want, *sampled[r]);
      if (!t)
        return t.status();
      tokens[r].hasLogprobs = true;
      tokens[r].logprobs = std::move(*t);
    }
    return Status::ok();
  };
  // Speculating sequences with one-hot drafts (n-gram lookup, or greedy)
  // or a draft model's distributions kept where the executor reads them,
  // and plain processing are verified where the logits are, beside plain
  // rows: the device processes each row and runs the rejection sampling.
  bool verifyOnDevice = !greedyOnDevice && !speculating.empty() &&
                        (sampled.empty() || allDraws) &&
                        executor.verifiesOnDevice();
  const bool deviceProbs =
      draftProbs && executor.verifiesDraftProbs(draftProbs->device);
  for (const SpecSequence &s : specs)
    verifyOnDevice &=
        verifiableOnDevice(s, reportsLogprobs, penalizes, deviceProbs);
  if (verifyOnDevice) {
    exec::DeviceVerify verify;
    const size_t K = maxDrafts;
    verify.numSeqs = int64_t(specs.size());
    verify.numDraft = int64_t(K);
    verify.drafts.assign(specs.size() * K, -1);
    verify.uniforms.resize(specs.size() * (K + 1));
    bool penalties = false;
    for (const SpecSequence &s : specs)
      penalties |= hasPenalties(*s.params);
    if (penalties) {
      verify.rowPenaltyTokens.resize(specs.size() * (K + 1));
      verify.rowPenaltyCounts.resize(specs.size() * (K + 1));
    }
    for (size_t i = 0; i < specs.size(); ++i) {
      const SpecSequence &s = specs[i];
      verify.params.push_back(deviceDraw(*s.params, 0.0));
      verify.params.back().logprobs = s.params->logprobs.value_or(-1);
      std::copy(s.drafts->begin(), s.drafts->end(),
                verify.drafts.begin() + long(i * K));
      verifyUniforms(s, int64_t(K), verify.uniforms.data() + i * (K + 1));
      if (hasPenalties(*s.params))
        verifyPenaltyLists(s, int64_t(K), &verify.rowPenaltyTokens[i * (K + 1)],
                           &verify.rowPenaltyCounts[i * (K + 1)]);
      // A draft model's q rows where it kept them on the device.
      if (s.draftProbsRow >= 0 && !s.params->isGreedy()) {
        verify.probRows.resize(specs.size(), -1);
        verify.probRows[i] = s.draftProbsRow;
        verify.draftProbs = draftProbs->device;
      }
    }
    std::vector<int32_t> accepted, ids;
    std::vector<exec::DeviceLogprobs> logprobs;
    int64_t vocab = 0;
    if (Status s = executor.forwardVerified(*batch, verify, plainDraws(),
                                            accepted, ids, logprobs, vocab);
        !s)
      return s;
    if (accepted.size() != specs.size() ||
        ids.size() != specRows + sampled.size())
      return Status::internal(
          "the executor returned " + std::to_string(accepted.size()) +
          " counts and " + std::to_string(ids.size()) + " tokens for " +
          std::to_string(specs.size()) + " sequences and " +
          std::to_string(specRows + sampled.size()) + " rows");
    if (Status s = verifiedOnDevice(accepted.data(), ids.data(), int64_t(K),
                                    vocab, specs, outcomes);
        !s)
      return s;
    takeDeviceTokens(ids, vocab);
    if (Status s = takeDeviceLogprobs(logprobs, vocab); !s)
      return s;
  } else if (greedyOnDevice) {
    std::vector<int32_t> ids;
    int64_t vocab = 0;
    if (Status s = executor.forwardGreedy(*batch, ids, vocab); !s)
      return s;
    if (ids.size() != specRows + sampled.size())
      return Status::internal(
          "the executor returned " + std::to_string(ids.size()) +
          " tokens for " + std::to_string(specRows + sampled.size()) + " rows");
    verifyGreedyTokens(ids.data(), int64_t(maxDrafts), vocab, specs, outcomes);
    takeDeviceTokens(ids, vocab);
  } else if (drawsOnDevice) {
    std::vector<int32_t> ids;
    std::vector<exec::DeviceLogprobs> logprobs;
    int64_t vocab = 0;
    if (Status s =
            executor.forwardSampled(*batch, plainDraws(), ids, logprobs, vocab);
        !s)
      return s;
    if (ids.size() != sampled.size())
      return Status::internal("the executor returned " +
                              std::to_string(ids.size()) + " tokens for " +
                              std::to_string(sampled.size()) + " rows");
    takeDeviceTokens(ids, vocab);
    if (Status s = takeDeviceLogprobs(logprobs, vocab); !s)
      return s;
  } else {
    std::vector<float> allLogits;
    int64_t vocab = 0;
    if (Status s = executor.forward(*batch, allLogits, vocab); !s)
      return s;
    if (allLogits.size() != (specRows + sampled.size()) * size_t(vocab))
      return Status::internal(
          "the executor returned " + std::to_string(allLogits.size()) +
          " logits for " + std::to_string(specRows + sampled.size()) +
          " rows of " + std::to_string(vocab));
    // Distributions a draft model kept on the device, verified here after
    // all (a step the device cannot verify): copied over.
    std::vector<std::vector<float>> copied(speculating.size());
    for (size_t i = 0; i < speculating.size(); ++i) {
      SpecSequence &s = specs[i];
      if (!draftProbsOnlyOnDevice(s))
        continue;
      const int64_t k = int64_t(specDrafts[i]->size());
      if (draftProbs->device.vocab != vocab)
        return Status::internal(
            "the draft distributions kept on the device have " +
            std::to_string(draftProbs->device.vocab) + " tokens per row; " +
            "the target's vocabulary has " + std::to_string(vocab));
      copied[i].resize(size_t(k * vocab));
      if (Status st = executor.readDraftProbs(
              draftProbs->device, s.draftProbsRow, k, copied[i].data());
          !st)
        return st;
      s.draftProbs = &copied[i];
    }
    for (size_t i = 0; i < speculating.size(); ++i) {
      const std::vector<float> *probs = specs[i].draftProbs;
      if (probs && !probs->empty() &&
          probs->size() < specDrafts[i]->size() * size_t(vocab))
        return Status::invalidArgument(
            "request '" + *speculating[i] + "' has draft probabilities for " +
            std::to_string(probs->size() / size_t(vocab)) + " tokens but " +
            std::to_string(specDrafts[i]->size()) + " drafts");
    }
    if (Status s =
            verifySpeculative(executor, allLogits.data(), int64_t(maxDrafts),
                              vocab, specs, outcomes);
        !s)
      return s;
    // The plain rows follow the speculative ones.
    const float *plainLogits = allLogits.data() + specRows * size_t(vocab);

    // Every sampled row is checked (one pass) before sampling: NaN or +inf
    // anywhere, or no entry above -inf, fails that request alone; the rest
    // of the batch samples as if it were not there.
    for (size_t r = 0; r < sampled.size(); ++r) {
      const RequestState &state = requests.at(*sampled[r]);
      const float *row = plainLogits + r * size_t(vocab);
      auto where = [&] {
        return " at step " + std::to_string(stepIndex) + ", output token " +
               std::to_string(state.output.size());
      };
      LogitsCheck check = checkLogitsRow(row, size_t(vocab));
      if (!check.ok()) {
        errors[r] = "logits of request '" + *sampled[r] + "' hold " +
                    logitsFaultName(check.fault) +
                    (check.fault == LogitsFault::AllNegInf
                         ? ""
                         : " (entry " + std::to_string(check.index) + ")") +
                    where();
        continue;
      }
      SampleRow sr;
      sr.params = &state.params;
      sr.promptTokenIds = &state.prompt;
      sr.outputTokenIds = &state.output;
      sr.seed = state.seed;
      sr.position = state.all.size();
      Expected<SampledToken> token = sampleRow(row, size_t(vocab), sr);
      if (!token)
        errors[r] = "sampling request '" + *sampled[r] + "' failed" + where() +
                    ": " + token.status().message();
      else
        tokens[r] = std::move(*token);
    }
  }

  size_t next = 0, nextSpec = 0;
  for (const RequestId *id : order) {
    if (!step.numScheduledTokens.count(*id))
      continue;
    RunnerRequestOutput out;
    out.requestId = *id;
    if (nextSpec < speculating.size() && speculating[nextSpec] == id) {
      SpecOutcome &o = outcomes[nextSpec++];
      if (!o.error.empty()) {
        out.error = "logits of request '" + *id + "': " + o.error +
                    " at step " + std::to_string(stepIndex) +
                    ", output token " +
                    std::to_string(requests.at(*id).output.size());
      } else {
        out.sampledTokenIds = std::move(o.tokens);
        out.logprobs = std::move(o.logprobs);
      }
    } else if (next < sampled.size() && sampled[next] == id) {
      size_t r = next++;
      if (!errors[r].empty()) {
        out.error = std::move(errors[r]);
      } else {
        out.sampledTokenIds.push_back(tokens[r].token);
        if (tokens[r].hasLogprobs)
          out.logprobs.push_back(std::move(tokens[r].logprobs));
      }
    }
    result.outputs.push_back(std::move(out));
  }
  return result;
}

} // namespace folio::core
