//===- ModelRunner.cpp - SchedulerOutput in, sampled tokens out -----------===//

#include "runtime/Core/ModelRunner.h"

#include "runtime/Core/BatchBuilder.h"
#include "runtime/Sampler/Sampler.h"

namespace folio::core {

Expected<ModelRunnerOutput> ModelRunner::execute(const SchedulerOutput &step) {
  for (const RequestId &id : step.finishedRequestIds)
    requests.erase(id);
  for (const RequestId &id : step.preemptedRequestIds)
    requests.erase(id);
  if (!step.scheduledSpecDecodeTokens.empty())
    return Status::invalidArgument(
        "the model runner does not verify speculative tokens yet");

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

  std::vector<ScheduledSequence> seqs;
  std::vector<const RequestId *> sampled;
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
    seq.wantLogits = state.numComputed + count->second >= state.all.size();
    if (seq.wantLogits)
      sampled.push_back(id);
    seqs.push_back(seq);
  }

  ModelRunnerOutput result;
  uint64_t stepIndex = numSteps++;
  if (seqs.empty())
    return result;
  Expected<exec::ForwardBatch> batch = buildForwardBatch(seqs, blockSize);
  if (!batch)
    return batch.status();
  std::vector<float> logits;
  int64_t vocab = 0;
  if (Status s = executor.forward(*batch, logits, vocab); !s)
    return s;
  if (logits.size() != sampled.size() * size_t(vocab))
    return Status::internal("the executor returned " +
                            std::to_string(logits.size()) + " logits for " +
                            std::to_string(sampled.size()) + " rows of " +
                            std::to_string(vocab));

  // Every sampled row is checked (one pass) before sampling: NaN or +inf
  // anywhere, or no entry above -inf, fails that request alone; the rest
  // of the batch samples as if it were not there.
  std::vector<SampledToken> tokens(sampled.size());
  std::vector<std::string> errors(sampled.size());
  for (size_t r = 0; r < sampled.size(); ++r) {
    const RequestState &state = requests.at(*sampled[r]);
    const float *row = logits.data() + r * size_t(vocab);
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

  size_t next = 0;
  for (const RequestId *id : order) {
    if (!step.numScheduledTokens.count(*id))
      continue;
    RunnerRequestOutput out;
    out.requestId = *id;
    if (next < sampled.size() && sampled[next] == id) {
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
