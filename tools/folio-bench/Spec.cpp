//===- Spec.cpp - folio-bench --mode=spec ---------------------------------===//

#include "tools/folio-bench/Spec.h"

#include "compiler/Plan/LowerToPlan.h"
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
  /// A group's first step prefills every prompt of the group (the token
  /// budget holds them); the others decode.
  double prefillSeconds = 0;
  double decodeSeconds = 0;
  size_t decodeSteps = 0;
  size_t decodeTokens = 0;
  Outputs outputs;
  core::SpeculativeStats stats;
  /// --profile: the target's time per step kind over the decode steps.
  std::map<std::string, double> decodeKindSeconds;
};

struct Setup {
  std::shared_ptr<const plan::Plan> plan;
  std::shared_ptr<const plan::Plan> draft;
  const SpecBenchOptions *options = nullptr;
  size_t maxModelLen = 0;
  size_t vocab = 0;
  int64_t blockSize = 16;
};

using Groups = std::vector<std::vector<std::vector<TokenId>>>;

/// One configuration's engine (k = 0: no speculation) and what its groups
/// measured.
struct Runner {
  std::unique_ptr<core::ServingEngine> engine;
  /// With --profile, the target's executor (owned by `engine`); else null.
  exec::Executor *executor = nullptr;
  size_t nextId = 0;
  /// The next step prefills the group just admitted.
  bool prefillNext = false;
  Run run;
};

/// An engine for groups of up to `batch` prompts of up to `longest` tokens.
Expected<std::unique_ptr<core::ServingEngine>>
makeEngine(const Setup &s, size_t batch, size_t longest, size_t k,
           bool adaptive, exec::Executor *&executorOut) {
  const SpecBenchOptions &o = *s.options;
  SchedulerConfig config;
  config.maxModelLen = s.maxModelLen;
  config.maxNumSeqs = batch;
  // Every prompt prefills in the first step; decode steps are what is
  // compared.
  config.maxNumBatchedTokens = std::max<size_t>(2048, batch * (longest + 32));
  config.vocabSize = s.vocab;
  KVCacheConfig kv;
  kv.blockSize = size_t(s.blockSize);
  kv.enablePrefixCaching = false;
  // Room for every sequence at full length plus its drafts: no preemption
  // in the comparison.
  size_t perSeq =
      (longest + size_t(o.newTokens) + 32 + kv.blockSize - 1) / kv.blockSize;
  kv.numBlocks = batch * perSeq + 1;
  exec::ExecutorOptions eopts;
  eopts.numThreads = unsigned(o.threads);
  // Packing at load applies only to a plan without stored weights, for
  // which the caller allowed the executor's dtypes alone.
  if (Expected<exec::WeightType> packAs = exec::parseWeightType(o.weightDtype))
    eopts.weights = *packAs;
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
  // --profile times the target's executor only: the draft's time is
  // draft_ms_per_step.
  exec::ExecutorOptions targetOptions = eopts;
  targetOptions.profile = o.profile;
  std::unique_ptr<exec::Executor> executor =
      exec::createCPUExecutor(targetOptions);
  executorOut = o.profile ? executor.get() : nullptr;
  return core::ServingEngine::create(s.plan, std::move(executor), config, kv,
                                     std::move(spec));
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

/// Admits `group` at once (its prompts prefill in the next step).
Status admit(const Setup &s, Runner &r,
             const std::vector<std::vector<TokenId>> &group) {
  const SpecBenchOptions &o = *s.options;
  auto start = std::chrono::steady_clock::now();
  for (const auto &prompt : group) {
    NewRequest req;
    req.requestId = std::to_string(r.nextId);
    req.promptTokenIds = prompt;
    req.samplingParams.temperature = o.temperature;
    if (o.temperature > 0)
      req.samplingParams.seed = o.seed + r.nextId;
    req.samplingParams.maxTokens = size_t(o.newTokens);
    req.samplingParams.ignoreEos = true;
    ++r.nextId;
    if (Status st = r.engine->addRequest(req); !st)
      return st;
  }
  r.prefillNext = true;
  r.run.seconds += secondsSince(start);
  return Status::ok();
}

/// One engine step of `r`, timed.
Status stepOnce(Runner &r) {
  Run &run = r.run;
  const bool profile = r.executor != nullptr;
  if (profile)
    r.executor->resetProfile();
  auto start = std::chrono::steady_clock::now();
  Expected<std::vector<RequestOutput>> step = r.engine->step();
  if (!step)
    return step.status();
  double seconds = secondsSince(start);
  run.seconds += seconds;
  bool prefill = r.prefillNext;
  if (profile && !prefill)
    for (const exec::KindProfile &k : r.executor->profile())
      run.decodeKindSeconds[k.kind] += k.seconds;
  r.prefillNext = false;
  (prefill ? run.prefillSeconds : run.decodeSeconds) += seconds;
  run.decodeSteps += !prefill;
  ++run.steps;
  for (const RequestOutput &out : *step) {
    if (!out.error.empty())
      return Status::internal(out.error);
    auto &t = run.outputs[out.requestId];
    t.insert(t.end(), out.newTokenIds.begin(), out.newTokenIds.end());
    run.tokens += out.newTokenIds.size();
    run.decodeTokens += prefill ? 0 : out.newTokenIds.size();
  }
  run.stats = r.engine->speculativeStats();
  return Status::ok();
}

/// One run of every configuration over every group: one engine per
/// configuration, each group admitted by every engine and the engines
/// stepped in turn, one step each, until all have finished it; so a change
/// in the machine's speed (shared machines drift within seconds) falls on
/// every configuration alike. (Each step then reads its weights cold, as
/// they are on a machine that does other work.)
Expected<std::vector<Run>>
runInterleaved(const Setup &s, const Groups &groups,
               const std::vector<std::pair<int64_t, bool>> &configs) {
  size_t batch = 0, longest = 0;
  for (const auto &g : groups) {
    batch = std::max(batch, g.size());
    for (const auto &p : g)
      longest = std::max(longest, p.size());
  }
  std::vector<Runner> runners(configs.size());
  for (size_t c = 0; c < configs.size(); ++c) {
    auto engine = makeEngine(s, batch, longest, size_t(configs[c].first),
                             configs[c].second, runners[c].executor);
    if (!engine)
      return engine.status();
    runners[c].engine = std::move(*engine);
  }
  for (const auto &group : groups) {
    for (Runner &r : runners)
      if (Status st = admit(s, r, group); !st)
        return st;
    for (bool any = true; any;) {
      any = false;
      for (Runner &r : runners) {
        if (!r.engine->hasUnfinishedRequests())
          continue;
        any = true;
        if (Status st = stepOnce(r); !st)
          return st;
      }
    }
  }
  std::vector<Run> runs;
  for (Runner &r : runners)
    runs.push_back(std::move(r.run));
  return runs;
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
  // An .onnx draft stores its weights in the target's dtype, as the
  // target's executors would have packed them.
  draftOptions.weightDtype = o.weightDtype;
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
  // A plan's stored weights run as stored; constants are packed as
  // --weight-dtype says.
  j.field("weight_dtype", plan->weights.empty()
                              ? o.weightDtype
                              : mlir::folio::planWeightDType(*plan));
  // What the draft stores (a .folio draft as it was compiled).
  if (s.draft)
    j.field("draft_weight_dtype", mlir::folio::planWeightDType(*s.draft));
  j.field("temperature", double(o.temperature));
  j.key("runs").beginArray();
  // One untimed run first: page the weights in, warm the allocator.
  if (Expected<std::vector<Run>> warm =
          runInterleaved(s, {{base[0]}}, {{0, false}});
      !warm)
    return warm.status();
  int64_t maxK = *std::max_element(o.speculative.numTokens.begin(),
                                   o.speculative.numTokens.end());
  for (int64_t batch : o.batchSizes) {
    // Every window once, `batch` at a time (a batch above the window count
    // repeats windows): one window's 64 tokens are too short and too
    // particular a sample of acceptance.
    size_t numGroups = (base.size() + size_t(batch) - 1) / size_t(batch);
    Groups groups(numGroups);
    for (size_t g = 0; g < numGroups; ++g)
      for (int64_t i = 0; i < batch; ++i)
        groups[g].push_back(
            base[(g * size_t(batch) + size_t(i)) % base.size()]);
    std::vector<std::pair<int64_t, bool>> configs = {{0, false}};
    for (int64_t k : o.speculative.numTokens)
      configs.push_back({k, false});
    if (o.speculative.adaptive)
      configs.push_back({maxK, true});
    // The fastest of the repeats per configuration, each repeat
    // interleaved (runInterleaved).
    std::cerr << "folio-bench: spec " << o.speculative.method << ", batch "
              << batch << ": " << configs.size() << " configurations, "
              << groups.size() << " groups, " << o.repeats << " repeats\n";
    std::vector<Run> fastest;
    for (int64_t r = 0; r < o.repeats; ++r) {
      Expected<std::vector<Run>> runs = runInterleaved(s, groups, configs);
      if (!runs)
        return runs.status();
      for (size_t c = 0; c < configs.size(); ++c)
        if (r == 0 || (*runs)[c].seconds < fastest[c].seconds) {
          if (r == 0)
            fastest.push_back(std::move((*runs)[c]));
          else
            fastest[c] = std::move((*runs)[c]);
        }
    }
    const Run *baseline = &fastest[0];
    double baseRate = double(baseline->tokens) / baseline->seconds;
    double baseStepMs = 1e3 * baseline->seconds / double(baseline->steps);
    for (size_t c = 1; c < configs.size(); ++c) {
      auto [k, adaptive] = configs[c];
      const Run *run = &fastest[c];
      const core::SpeculativeStats &st = run->stats;
      double rate = double(run->tokens) / run->seconds;
      double draftMs = st.numSpecSteps
                           ? 1e3 * st.proposeSeconds / double(st.numSpecSteps)
                           : 0.0;
      double targetMs = 1e3 * st.targetSeconds / double(run->steps);
      // Leviathan et al.'s speedup E[tokens] / (1 + k c) for the measured
      // tokens per decode step and draft cost, if verifying cost what a
      // plain decode step costs: the run's decode steps each at the
      // baseline's decode step plus the mean proposing time per decode
      // step, and the baseline's prefill steps, against the baseline's
      // whole time. Decode steps that verified nothing (no n-gram match, k
      // = 0 chosen) count, at one token each.
      double baseDecodeStep =
          baseline->decodeSteps
              ? baseline->decodeSeconds / double(baseline->decodeSteps)
              : 0.0;
      double draftPerDecodeStep =
          run->decodeSteps ? st.proposeSeconds / double(run->decodeSteps) : 0.0;
      double ideal =
          baseline->prefillSeconds +
          double(run->decodeSteps) * (baseDecodeStep + draftPerDecodeStep);
      double bound = ideal > 0 ? baseline->seconds / ideal : 1.0;
      double tokensPerStep = run->decodeSteps ? double(run->decodeTokens) /
                                                    double(run->decodeSteps)
                                              : 0.0;
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
      j.field("baseline_ms_per_decode_step", 1e3 * baseDecodeStep);
      j.field("spec_ms_per_decode_step",
              run->decodeSteps
                  ? 1e3 * run->decodeSeconds / double(run->decodeSteps)
                  : 0.0);
      j.field("tokens_per_decode_step", tokensPerStep);
      j.field("bound", bound);
      j.field("fraction_of_bound", bound > 0 ? speedup / bound : 0.0);
      j.field("mean_k", st.numSpecSteps
                            ? double(st.sumK) / double(st.numSpecSteps)
                            : 0.0);
      j.field("steps_off", int64_t(st.numOffSteps));
      j.field("steps_timed", int64_t(st.numTimedSteps));
      // Sampled outputs are distributed alike, not equal token for token.
      j.key("outputs_identical");
      if (o.temperature > 0)
        j.null();
      else
        j.value(run->outputs == baseline->outputs);
      if (o.profile) {
        // Microseconds per decode step by step kind, the target's forward
        // (the verify entry and the engine around it are not in it).
        auto kinds = [&](const Run &r) {
          j.beginObject();
          for (const auto &[kind, sec] : r.decodeKindSeconds)
            j.field(kind,
                    r.decodeSteps ? 1e6 * sec / double(r.decodeSteps) : 0.0);
          j.endObject();
        };
        j.key("profile").beginObject();
        j.key("baseline_us_per_decode_step");
        kinds(*baseline);
        j.key("spec_us_per_decode_step");
        kinds(*run);
        j.endObject();
      }
      j.endObject();
    }
  }
  j.endArray();
  j.endObject();
  return j.str() + "\n";
}

} // namespace folio::bench
