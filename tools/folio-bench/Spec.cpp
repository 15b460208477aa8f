//===- Spec.cpp - folio-bench --mode=spec ---------------------------------===//

#include "tools/folio-bench/Spec.h"

#include "runtime/Core/ServingEngine.h"
#include "tools/folio-bench/BenchData.h"
#include "tools/folio-bench/Json.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>

namespace folio::bench {

namespace {

using Outputs = std::map<RequestId, std::vector<TokenId>>;

struct Run {
  double seconds = 0;
  size_t tokens = 0;
  size_t steps = 0;
  Outputs outputs;
  core::SpeculativeStats stats;
};

struct Setup {
  std::shared_ptr<const plan::Plan> plan;
  std::shared_ptr<const plan::Plan> draft;
  const SpecBenchOptions *options = nullptr;
  size_t maxModelLen = 0;
  size_t vocab = 0;
  int64_t blockSize = 16;
};

/// One run of `prompts` to `newTokens` tokens each, all admitted at once;
/// k = 0 runs without speculation.
Expected<Run> runOnce(const Setup &s,
                      const std::vector<std::vector<TokenId>> &prompts,
                      size_t k, bool adaptive) {
  const SpecBenchOptions &o = *s.options;
  SchedulerConfig config;
  config.maxModelLen = s.maxModelLen;
  config.maxNumSeqs = prompts.size();
  size_t longest = 0;
  for (const auto &p : prompts)
    longest = std::max(longest, p.size());
  // Every prompt prefills in the first step; decode steps are what is
  // compared.
  config.maxNumBatchedTokens =
      std::max<size_t>(2048, prompts.size() * (longest + 32));
  config.vocabSize = s.vocab;
  KVCacheConfig kv;
  kv.blockSize = size_t(s.blockSize);
  kv.enablePrefixCaching = false;
  // Room for every sequence at full length plus its drafts: no preemption
  // in the comparison.
  size_t perSeq =
      (longest + size_t(o.newTokens) + 32 + kv.blockSize - 1) / kv.blockSize;
  kv.numBlocks = prompts.size() * perSeq + 1;
  exec::ExecutorOptions eopts;
  eopts.numThreads = unsigned(o.threads);
  eopts.weights = o.weights;
  core::SpeculativeConfig spec;
  if (k > 0) {
    tools::SpeculativeFlags flags = o.speculative;
    flags.adaptive = adaptive;
    Expected<core::SpeculativeConfig> made = tools::makeSpeculativeConfig(
        flags, k, s.draft, int64_t(s.vocab), int64_t(s.maxModelLen),
        int64_t(kv.numBlocks - 1) * int64_t(kv.blockSize), eopts);
    if (!made)
      return made.status();
    spec = std::move(*made);
  }
  auto engine = core::ServingEngine::create(
      s.plan, exec::createCPUExecutor(eopts), config, kv, std::move(spec));
  if (!engine)
    return engine.status();
  for (size_t i = 0; i < prompts.size(); ++i) {
    NewRequest r;
    r.requestId = std::to_string(i);
    r.promptTokenIds = prompts[i];
    r.samplingParams.temperature = o.temperature;
    if (o.temperature > 0)
      r.samplingParams.seed = o.seed + i;
    r.samplingParams.maxTokens = size_t(o.newTokens);
    r.samplingParams.ignoreEos = true;
    if (Status st = (*engine)->addRequest(r); !st)
      return st;
  }
  Run run;
  auto start = std::chrono::steady_clock::now();
  while ((*engine)->hasUnfinishedRequests()) {
    Expected<std::vector<RequestOutput>> step = (*engine)->step();
    if (!step)
      return step.status();
    ++run.steps;
    for (const RequestOutput &out : *step) {
      if (!out.error.empty())
        return Status::internal(out.error);
      auto &t = run.outputs[out.requestId];
      t.insert(t.end(), out.newTokenIds.begin(), out.newTokenIds.end());
      run.tokens += out.newTokenIds.size();
    }
  }
  run.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  run.stats = (*engine)->speculativeStats();
  return run;
}

/// The fastest of `repeats` runs (seeded runs repeat their outputs).
Expected<Run> best(const Setup &s,
                   const std::vector<std::vector<TokenId>> &prompts, size_t k,
                   bool adaptive) {
  Run fastest;
  for (int64_t r = 0; r < s.options->repeats; ++r) {
    Expected<Run> run = runOnce(s, prompts, k, adaptive);
    if (!run)
      return run.status();
    if (r == 0 || run->seconds < fastest.seconds)
      fastest = std::move(*run);
  }
  return fastest;
}

} // namespace

Expected<std::string>
runSpecBench(std::shared_ptr<const plan::Plan> plan,
             const std::string &modelPath,
             const mlir::folio::CompileToPlanOptions &compile,
             const SpecBenchOptions &o) {
  if (!o.speculative.enabled())
    return Status::invalidArgument("--mode=spec needs --speculative-model or "
                                   "--speculative-method ngram");
  if (o.workload != "heldout" && o.workload != "edit")
    return Status::invalidArgument("--workload: '" + o.workload +
                                   "' is not a spec workload (heldout, edit)");
  std::string data = o.evalData;
  if (data.empty()) {
    size_t slash = modelPath.find_last_of('/');
    data = (slash == std::string::npos ? std::string()
                                       : modelPath.substr(0, slash + 1)) +
           "heldout_slice.i32";
  }
  Expected<std::vector<std::vector<TokenId>>> windows =
      readWindows(data, o.evalWindow, "--eval-data");
  if (!windows)
    return Status::invalidArgument(windows.status().message() +
                                   (o.evalData.empty()
                                        ? " (the default next to --model; pass "
                                          "--eval-data)"
                                        : ""));
  // heldout: the first promptTokens of each window. edit: the first
  // promptTokens of each window, then its first quarter again: the
  // continuation the text suggests is the rest of what the prompt already
  // holds.
  if (o.promptTokens >= o.evalWindow)
    return Status::invalidArgument("--prompt-tokens must be below the " +
                                   std::to_string(o.evalWindow) +
                                   "-token windows");
  std::vector<std::vector<TokenId>> base;
  for (const auto &w : *windows) {
    std::vector<TokenId> p(w.begin(), w.begin() + o.promptTokens);
    if (o.workload == "edit")
      p.insert(p.end(), w.begin(), w.begin() + o.promptTokens / 4);
    base.push_back(std::move(p));
  }

  Setup s;
  s.plan = plan;
  s.options = &o;
  s.vocab = size_t(plan->configValue("vocab", 0));
  s.blockSize = plan->configValue("block_size", 16);
  size_t longest = 0;
  for (const auto &p : base)
    longest = std::max(longest, p.size());
  s.maxModelLen = longest + size_t(o.newTokens) + 1;
  int64_t maxPositions = plan->configValue("max_positions", 0);
  if (maxPositions > 0 && s.maxModelLen > size_t(maxPositions))
    return Status::invalidArgument(
        "prompts of " + std::to_string(longest) + " tokens plus " +
        std::to_string(o.newTokens) + " new tokens exceed the model's " +
        std::to_string(maxPositions) + " positions");
  tools::ModelLoadOptions draftOptions;
  draftOptions.kvCacheDtype = compile.kvCacheDtype;
  draftOptions.verifyWeights = compile.verifyWeights;
  Expected<std::shared_ptr<const plan::Plan>> draft =
      tools::loadDraftPlan(o.speculative, draftOptions);
  if (!draft)
    return draft.status();
  s.draft = *draft;

  Json j;
  j.beginObject();
  j.field("cpu", cpuName());
  j.field("method", o.speculative.method);
  j.field("workload", o.workload);
  j.field("new_tokens", o.newTokens);
  j.field("weight_dtype", exec::weightTypeName(o.weights));
  j.field("temperature", double(o.temperature));
  j.key("runs").beginArray();
  // One untimed run first: page the weights in, warm the allocator.
  if (Expected<Run> warm = runOnce(s, {base[0]}, 0, false); !warm)
    return warm.status();
  int64_t maxK = *std::max_element(o.speculative.numTokens.begin(),
                                   o.speculative.numTokens.end());
  for (int64_t batch : o.batchSizes) {
    std::vector<std::vector<TokenId>> prompts;
    for (int64_t i = 0; i < batch; ++i)
      prompts.push_back(base[size_t(i) % base.size()]);
    std::cerr << "folio-bench: spec " << o.speculative.method << ", batch "
              << batch << ": baseline\n";
    Expected<Run> baseline = best(s, prompts, 0, false);
    if (!baseline)
      return baseline.status();
    double baseRate = double(baseline->tokens) / baseline->seconds;
    double baseStepMs = 1e3 * baseline->seconds / double(baseline->steps);
    std::vector<std::pair<int64_t, bool>> configs;
    for (int64_t k : o.speculative.numTokens)
      configs.push_back({k, false});
    if (o.speculative.adaptive)
      configs.push_back({maxK, true});
    for (auto [k, adaptive] : configs) {
      std::cerr << "folio-bench: spec " << o.speculative.method << ", batch "
                << batch << ", k " << k << (adaptive ? " adaptive" : "")
                << "\n";
      Expected<Run> run = best(s, prompts, size_t(k), adaptive);
      if (!run)
        return run.status();
      const core::SpeculativeStats &st = run->stats;
      double rate = double(run->tokens) / run->seconds;
      double draftMs = st.numSpecSteps
                           ? 1e3 * st.proposeSeconds / double(st.numSpecSteps)
                           : 0.0;
      double targetMs = 1e3 * st.targetSeconds / double(run->steps);
      // Leviathan et al.'s speedup for the measured tokens per verifying
      // step and draft cost, if verifying cost what a plain decode step
      // costs: E[tokens] / (1 + k c) with k c = draft time per step over
      // the baseline's step time.
      double bound =
          st.numVerifiedSeqSteps
              ? st.meanAcceptedLength() * baseStepMs / (baseStepMs + draftMs)
              : 1.0;
      double speedup = rate / baseRate;
      j.beginObject();
      j.field("method", o.speculative.method);
      j.field("workload", o.workload);
      j.field("k", k);
      j.field("batch", batch);
      j.field("adaptive", adaptive);
      j.field("baseline_tokens_per_s", baseRate);
      j.field("spec_tokens_per_s", rate);
      j.field("speedup", speedup);
      j.field("acceptance_rate", st.acceptanceRate());
      j.field("mean_accepted_length", st.meanAcceptedLength());
      j.field("draft_ms_per_step", draftMs);
      j.field("target_ms_per_step", targetMs);
      j.field("baseline_ms_per_step", baseStepMs);
      j.field("bound", bound);
      j.field("fraction_of_bound", bound > 0 ? speedup / bound : 0.0);
      j.field("mean_k", st.numSpecSteps
                            ? double(st.sumK) / double(st.numSpecSteps)
                            : 0.0);
      j.field("steps_off", int64_t(st.numOffSteps));
      // Sampled outputs are distributed alike, not equal token for token.
      j.key("outputs_identical");
      if (o.temperature > 0)
        j.null();
      else
        j.value(run->outputs == baseline->outputs);
      j.endObject();
    }
  }
  j.endArray();
  j.endObject();
  return j.str() + "\n";
}

} // namespace folio::bench
