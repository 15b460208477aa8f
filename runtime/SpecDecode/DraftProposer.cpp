//===- DraftProposer.cpp - A small model guesses for the big one ----------===//

#include "runtime/SpecDecode/DraftProposer.h"

#include "runtime/Core/BatchBuilder.h"
#include "runtime/Core/Engine.h"
#include "runtime/Sampler/LogitsProcessors.h"
#include "runtime/Sampler/Philox.h"
#include "runtime/Sampler/Sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace folio::spec {

Expected<std::unique_ptr<DraftProposer>>
DraftProposer::create(std::shared_ptr<const plan::Plan> plan,
                      std::unique_ptr<exec::Executor> executor,
                      int64_t numBlocks, int64_t targetVocab,
                      int64_t maxModelLen) {
  int64_t vocab = plan->configValue("vocab", 0);
  if (vocab != targetVocab)
    return Status::invalidArgument(
        "the speculative model's vocabulary (" + std::to_string(vocab) +
        " tokens) differs from the target's (" + std::to_string(targetVocab) +
        "); a draft must share the target's tokenizer");
  if (Status s = core::Engine::checkMaxModelLen(*plan, maxModelLen); !s)
    return Status::invalidArgument("the speculative model: " + s.message());
  // Prefix sharing would need the draft to follow the target's cache
  // decisions; its KV is a tenth of the target's, so it keeps its own.
  Expected<std::unique_ptr<KVCacheManager>> kv =
      core::Engine::loadWithOwnCache(*executor, plan, numBlocks);
  if (!kv)
    return Status::invalidArgument("the speculative model: " +
                                   kv.status().message());
  auto proposer = std::unique_ptr<DraftProposer>(new DraftProposer());
  proposer->blockSize_ = executor->kvCacheLayout().blockSize;
  proposer->plan = std::move(plan);
  proposer->executor = std::move(executor);
  proposer->kv = std::move(*kv);
  proposer->vocab = vocab;
  proposer->numBlocks = numBlocks;
  return proposer;
}

bool DraftProposer::keepProbsFor(const exec::Executor &verifier) {
  if (!executor->samplesOnDevice())
    return false;
  Expected<exec::DeviceProbRows> probe = executor->reserveDraftProbs(1);
  keepOnDevice = probe && verifier.verifiesDraftProbs(*probe);
  if (keepOnDevice)
    probRows = *probe;
  return keepOnDevice;
}

void DraftProposer::release(const RequestId &requestId) {
  seqs.erase(requestId);
  kv->freeRequest(requestId);
}

size_t DraftProposer::numCached(const RequestId &requestId) const {
  auto it = seqs.find(requestId);
  return it == seqs.end() ? 0 : it->second.numComputed;
}

Status DraftProposer::propose(const std::vector<ProposeInput> &inputs, size_t k,
                              std::vector<Proposal> &out) {
  out.assign(inputs.size(), Proposal());
  if (k == 0)
    return Status::ok();

  // Catch up: roll each sequence back to what the cache holds of it, then
  // schedule everything after that.
  struct Active {
    size_t input;
    SeqState *state;
    size_t numDrafts; ///< drafts wanted
    size_t numNew;    ///< tokens this round computes
    int32_t qRow;     ///< deviceDraws: the first q row, -1 for greedy
  };
  std::vector<Active> active;
  steady = true;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ProposeInput &in = inputs[i];
    const std::vector<TokenId> &tokens = *in.tokens;
    size_t want = std::min(k, in.maxDrafts);
    if (want == 0 || tokens.empty())
      continue;
    SeqState &st = seqs[*in.requestId];
    size_t common = 0, limit = std::min(st.numComputed, tokens.size());
    while (common < limit && st.tokens[common] == tokens[common])
      ++common;
    // The last token is always recomputed: its logits give the first draft.
    common = std::min(common, tokens.size() - 1);
    // KV for the new tokens and for the drafts fed back (all but the last).
    if (!kv->allocateSlots(*in.requestId, common, tokens.size() - common, {},
                           want - 1)) {
      // The draft's cache is full: this sequence does not speculate now.
      if (st.numComputed == 0)
        release(*in.requestId);
      continue;
    }
    st.tokens = tokens;
    st.numComputed = common;
    steady = steady && tokens.size() - common <= 2;
    active.push_back({i, &st, want, tokens.size() - common, -1});
  }

  // Where the target verifies what the draft's device keeps
  // (keepProbsFor) and that device takes every sequence's processing, each
  // round draws there and sampled drafts keep their q there: only tokens
  // come back. One reservation holds every q row of this call.
  bool deviceDraws = keepOnDevice;
  int64_t qRows = 0;
  for (Active &a : active) {
    const SamplingParams &params = *inputs[a.input].params;
    deviceDraws &= !hasPenalties(params) || executor->penalizesOnDevice();
    if (!params.isGreedy()) {
      a.qRow = int32_t(qRows);
      qRows += int64_t(a.numDrafts);
    }
  }
  deviceDraws &= qRows > 0;
  if (deviceDraws) {
    Expected<exec::DeviceProbRows> reserved =
        executor->reserveDraftProbs(qRows);
    if (!reserved)
      return Status::internal("the speculative model: " +
                              reserved.status().message());
    probRows = *reserved;
  }

  // History for penalties: the prompt, then the output and the drafts so
  // far, as the target's verification will see them.
  auto history = [&](const Active &a, std::vector<TokenId> &prompt,
                     std::vector<TokenId> &output) {
    const std::vector<TokenId> &all = a.state->tokens;
    const long split = long(inputs[a.input].numPromptTokens);
    prompt.assign(all.begin(), all.begin() + split);
    output.assign(all.begin() + split, all.end());
  };
  std::vector<float> logits;
  std::vector<int32_t> deviceTokens;
  std::vector<exec::DeviceLogprobs> noLogprobs;
  std::vector<double> processed;
  for (size_t round = 0; !active.empty(); ++round) {
    std::vector<core::ScheduledSequence> batch;
    for (const Active &a : active) {
      core::ScheduledSequence s;
      s.tokens = &a.state->tokens;
      s.numComputed = int64_t(a.state->numComputed);
      s.numScheduled = int64_t(a.numNew);
      s.blockTable = &kv->blockIds(*inputs[a.input].requestId);
      batch.push_back(s);
    }
    Expected<exec::ForwardBatch> fb =
        core::buildForwardBatch(batch, blockSize_);
    if (!fb)
      return fb.status();
    // Where the draft's executor takes greedy tokens on its device (a GPU)
    // and every sequence drafts greedily without penalties, only each
    // row's argmax comes back, not the row.
    bool greedyOnDevice = !deviceDraws && executor->greedyOnDevice();
    for (const Active &a : active) {
      const SamplingParams &params = *inputs[a.input].params;
      greedyOnDevice &= params.isGreedy() && !hasPenalties(params);
    }
    const bool onDevice = deviceDraws || greedyOnDevice;
    int64_t rowVocab = 0;
    Status ran = Status::ok();
    if (deviceDraws) {
      std::vector<exec::DeviceDraw> draws;
      for (const Active &a : active) {
        const ProposeInput &in = inputs[a.input];
        std::vector<TokenId> prompt, output;
        if (hasPenalties(*in.params))
          history(a, prompt, output);
        draws.push_back(core::deviceDraw(
            *in.params,
            philoxUniform(in.seed, a.state->tokens.size(), kDraftStream),
            &prompt, &output));
        if (a.qRow >= 0)
          draws.back().probsRow = a.qRow + int32_t(out[a.input].tokens.size());
      }
      ran = executor->forwardSampled(*fb, draws, deviceTokens, noLogprobs,
                                     rowVocab);
    } else {
      ran = greedyOnDevice
                ? executor->forwardGreedy(*fb, deviceTokens, rowVocab)
                : executor->forward(*fb, logits, rowVocab);
    }
    if (!ran)
      return Status::internal("the speculative model: " + ran.message());
    const size_t got =
        onDevice ? deviceTokens.size() : logits.size() / size_t(vocab);
    if (rowVocab != vocab || got != active.size() ||
        (!onDevice && logits.size() != got * size_t(vocab)))
      return Status::internal(
          "the speculative model returned " + std::to_string(got) +
          " rows of " + std::to_string(rowVocab) + " for " +
          std::to_string(active.size()) + " rows of " + std::to_string(vocab));

    std::vector<Active> next;
    for (size_t r = 0; r < active.size(); ++r) {
      Active &a = active[r];
      const ProposeInput &in = inputs[a.input];
      SeqState &st = *a.state;
      st.numComputed += a.numNew;
      Proposal &p = out[a.input];
      const float *row = onDevice ? nullptr : logits.data() + r * size_t(vocab);
      // A row sampled here takes the history too (a device's draw had it).
      std::vector<TokenId> prompt, output;
      SampleRow sr;
      sr.params = in.params;
      if (!onDevice && hasPenalties(*in.params)) {
        history(a, prompt, output);
        sr.promptTokenIds = &prompt;
        sr.outputTokenIds = &output;
      }
      sr.seed = in.seed;
      sr.position = st.tokens.size();
      TokenId token;
      if (onDevice) {
        // -1: a row the device's sampler refused (NaN, +inf or only -inf),
        // which ends this sequence's guesses as below.
        if (deviceTokens[r] < 0 || deviceTokens[r] >= vocab)
          continue;
        token = deviceTokens[r];
        // q of a sampled draft stays where the draw wrote it.
        if (deviceDraws && a.qRow >= 0)
          p.probsRow = a.qRow;
      } else if (in.params->isGreedy() && !hasPenalties(*in.params)) {
        // The row's first maximum as it is: the processed copy's argmax
        // without the copy. A broken draft row ends this sequence's
        // guesses, not the step: what was drafted so far is still worth
        // verifying.
        if (!checkSampleRow(row, size_t(vocab), sr))
          continue;
        token = firstMaximum(row, size_t(vocab));
      } else {
        Expected<std::vector<double>> proc =
            processLogits(row, size_t(vocab), sr);
        if (!proc) // as above
          continue;
        if (in.params->isGreedy()) {
          token = argmaxProcessed(*proc);
        } else {
          token = drawProcessed(
              *proc, philoxUniform(in.seed, st.tokens.size(), kDraftStream));
          // q: the distribution the token was drawn from.
          double best = *std::max_element(proc->begin(), proc->end());
          double total = 0;
          for (double l : *proc)
            total += std::exp(l - best);
          size_t base = p.probs.size();
          p.probs.resize(base + size_t(vocab));
          for (int64_t v = 0; v < vocab; ++v)
            p.probs[base + size_t(v)] =
                float(std::exp((*proc)[size_t(v)] - best) / total);
          // Rounding to float must not make the drawn token impossible.
          float &q = p.probs[base + size_t(token)];
          q = std::max(q, std::numeric_limits<float>::min());
        }
      }
      p.tokens.push_back(token);
      st.tokens.push_back(token);
      if (p.tokens.size() < a.numDrafts) {
        a.numNew = 1;
        next.push_back(a);
      }
    }
    active = std::move(next);
  }
  return Status::ok();
}

} // namespace folio::spec
