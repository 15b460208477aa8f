//===- KVQuant.cpp - folio-bench --mode=kv-quant --------------------------===//
//
// For each dtype the model is compiled with that cache and measured on the
// same inputs as the f32 cache:
// - bytes_per_token: what the executor sizes its block pool by (all layers,
//   K and V, scales included);
// - perplexity: teacher-forced over the held-out windows, each from
//   position 0 at the full window, one token of every window per step, so
//   each token reads the cache as decoding leaves it (int2 KIVI's window
//   included);
// - greedy_agreement: the f32 cache's greedy continuations of the windows'
//   prompts are fed back, and each next-token argmax is compared. Feeding
//   the same context keeps one early difference from making every later
//   token of a sequence differ;
// - decode_tokens_per_s: a batch of sequences at a long context, one token
//   each per step, the best of several timed runs.
//
//===----------------------------------------------------------------------===//

#include "tools/folio-bench/KVQuant.h"
#include "tools/folio-bench/BenchData.h"
#include "tools/folio-bench/Json.h"
#include "tools/folio-bench/Quality.h"

#include "compiler/Plan/LowerToPlan.h"
#include "compiler/Target/PlanKVCache.h"
#include "runtime/Core/BatchBuilder.h"
#include "runtime/Core/KVCalibration.h"
#include "runtime/Core/TeacherForced.h"
#include "runtime/Executor/Executor.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <random>

#include <unistd.h>

namespace folio::bench {
namespace {

/// Decode tokens per second of `batch` sequences at context `context`.
Expected<double> decodeSpeed(std::shared_ptr<const plan::Plan> plan,
                             const KVQuantOptions &o) {
  int64_t vocab = plan->configValue("vocab", 0);
  int64_t len = o.context + o.decodeSteps * o.repeats;
  std::mt19937 rng(0);
  Seqs seqs(size_t(o.decodeBatch));
  for (std::vector<TokenId> &s : seqs)
    for (int64_t i = 0; i < len; ++i)
      s.push_back(TokenId(rng() % uint32_t(std::max<int64_t>(vocab, 1))));
  Expected<PagedRun> paged =
      pagedRun(plan, std::vector<int64_t>(seqs.size(), len), o.threads);
  if (!paged)
    return paged.status();
  std::vector<float> logits;
  auto run = [&](int64_t from, int64_t count) -> Status {
    int64_t v = 0;
    return paged->step(seqs, std::vector<int64_t>(seqs.size(), from),
                       std::vector<int64_t>(seqs.size(), count), logits, v);
  };
  // The context, one sequence's chunk at a time.
  for (int64_t p = 0; p < o.context; p += 512)
    if (Status s = run(p, std::min<int64_t>(512, o.context - p)); !s)
      return s;
  double best = 0;
  int64_t pos = o.context;
  for (int64_t r = 0; r < o.repeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < o.decodeSteps; ++i, ++pos)
      if (Status s = run(pos, 1); !s)
        return s;
    double sec =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    best = std::max(best, double(o.decodeSteps * o.decodeBatch) / sec);
  }
  return best;
}

} // namespace

Expected<std::string> runKVQuant(const std::string &model,
                                 const KVQuantOptions &o) {
  if (model.size() < 5 || model.compare(model.size() - 5, 5, ".onnx") != 0)
    return Status::invalidArgument(
        "--mode=kv-quant compiles one variant per dtype and needs an .onnx "
        "--model, not '" +
        model + "'");
  if (o.evalData.empty())
    return Status::invalidArgument("--mode=kv-quant needs --eval-data");
  Expected<Seqs> windows = readWindows(o.evalData, o.evalWindow, "--eval-data");
  if (!windows)
    return windows.status();
  if (!o.tokenizer.empty() && o.calibrationData.empty())
    return Status::invalidArgument(
        "--tokenizer only encodes text --calibration-data, and none was given");
  if (o.promptTokens >= o.evalWindow)
    return Status::invalidArgument("--prompt-tokens must be below the window");
  auto fp8 = [](const std::string &d) { return d.rfind("fp8", 0) == 0; };
  if (!o.calibrationData.empty()) {
    if (std::none_of(o.dtypes.begin(), o.dtypes.end(), fp8))
      return Status::invalidArgument(
          "--calibration-data sets fp8 scales, and no fp8 dtype is listed");
    if (Status s =
            checkCalibrationNotEval(o.calibrationData, o.evalData, "fp8");
        !s)
      return s;
  }
  std::vector<std::string> dtypes = o.dtypes;
  if (std::find(dtypes.begin(), dtypes.end(), "f32") == dtypes.end())
    dtypes.insert(dtypes.begin(), "f32");
  else
    std::stable_partition(dtypes.begin(), dtypes.end(),
                          [](const std::string &d) { return d == "f32"; });

  auto compile = [&](const std::string &dtype,
                     const core::KVAbsMax *calibration)
      -> Expected<std::shared_ptr<const plan::Plan>> {
    mlir::folio::CompileToPlanOptions c;
    c.kvCacheDtype = dtype;
    c.blockSize = o.blockSize;
    if (calibration) {
      c.kvCalibration = calibration->values;
      c.kvCalibrationLayers = calibration->layers;
      c.kvCalibrationHeads = calibration->kvHeads;
    }
    c.onWarning = [&](const std::string &w) {
      std::cerr << "folio-bench: " << dtype << ": warning: " << w << "\n";
    };
    Expected<plan::Plan> p = mlir::folio::loadOrCompilePlan(model, c);
    if (!p)
      return p.status();
    return std::make_shared<const plan::Plan>(std::move(*p));
  };

  int64_t perPrompt = 0;
  Seqs prompts =
      agreementPrompts(*windows, o.agreementTokens, o.promptTokens, perPrompt);

  std::shared_ptr<const plan::Plan> f32Plan;
  double f32Ppl = 0, f32Bytes = 1;
  Seqs reference;
  std::unique_ptr<core::KVAbsMax> calibration;
  Json j;
  j.beginObject();
  std::string cpu = cpuName();
  for (const std::string &dtype : dtypes) {
    std::cerr << "folio-bench: kv-quant " << dtype << "\n";
    if (fp8(dtype) && !o.calibrationData.empty() && !calibration) {
      Expected<std::vector<TokenId>> ids =
          readCalibrationTokens(o.calibrationData, o.tokenizer);
      if (!ids)
        return ids.status();
      // folioc's calibration, window rule included.
      Expected<core::KVAbsMax> absMax = core::calibrateKVAbsMax(f32Plan, *ids);
      if (!absMax)
        return absMax.status();
      calibration = std::make_unique<core::KVAbsMax>(std::move(*absMax));
    }
    Expected<std::shared_ptr<const plan::Plan>> plan =
        compile(dtype, fp8(dtype) ? calibration.get() : nullptr);
    if (!plan)
      return Status::invalidArgument("--kv-cache-dtype " + dtype + ": " +
                                     plan.status().message());
    std::unique_ptr<exec::Executor> probe = exec::createCPUExecutor();
    if (Status s = probe->load(*plan); !s)
      return s;
    exec::KVCacheLayout layout = probe->kvCacheLayout();
    // The decode timing's cache holds every sequence's whole context: a
    // batch past the machine's memory would only thrash or be killed.
    {
      int64_t len = o.context + o.decodeSteps * o.repeats;
      double need = double(o.decodeBatch) *
                    double((len + layout.blockSize - 1) / layout.blockSize) *
                    double(layout.bytesPerBlock);
      double have =
          double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
      if (have > 0 && need > have / 2)
        return Status::invalidArgument(
            "--decode-batch " + std::to_string(o.decodeBatch) + " at " +
            std::to_string(len) + " tokens each needs " +
            std::to_string(int64_t(need / double(1 << 20))) + " MiB of " +
            dtype +
            " KV cache, more than half of this "
            "machine's " +
            std::to_string(int64_t(have / double(1 << 20))) + " MiB");
    }
    // Every run stays inside what the plan was compiled to serve.
    for (const char *limit : {"max_positions", "max_context"}) {
      int64_t most = (*plan)->configValue(limit, 0);
      if (most <= 0)
        continue;
      if (o.evalWindow > most)
        return Status::invalidArgument(
            "--eval-window " + std::to_string(o.evalWindow) +
            " exceeds the "
            "model's " +
            limit + " (" + std::to_string(most) + ")");
      if (o.promptTokens + perPrompt > most)
        return Status::invalidArgument(
            "--prompt-tokens plus the " + std::to_string(perPrompt) +
            " greedy tokens per prompt exceed the model's " + limit + " (" +
            std::to_string(most) + ")");
      if (o.context + o.decodeSteps * o.repeats > most)
        return Status::invalidArgument(
            "--context " + std::to_string(o.context) + " plus " +
            std::to_string(o.decodeSteps * o.repeats) +
            " timed decode steps exceeds the model's " + limit + " (" +
            std::to_string(most) + ")");
    }
    if (dtype == "f32") {
      f32Plan = *plan;
      Expected<Seqs> cont =
          greedyContinue(f32Plan, prompts, perPrompt, o.threads);
      if (!cont)
        return cont.status();
      reference = std::move(*cont);
    }
    Expected<double> ppl = perplexity(*plan, *windows, o.threads);
    if (!ppl)
      return ppl.status();
    if (dtype == "f32")
      f32Ppl = *ppl;
    int64_t compared = 0;
    Expected<double> agree =
        agreement(*plan, reference, o.promptTokens, o.threads, compared);
    if (!agree)
      return agree.status();
    Expected<double> speed = decodeSpeed(*plan, o);
    if (!speed)
      return speed.status();

    int64_t perSeq = (o.context + layout.blockSize - 1) / layout.blockSize;
    int64_t blocks = o.kvCacheMemory / layout.bytesPerBlock - 1; // null block
    j.key(dtype).beginObject();
    j.key("bytes_per_token")
        .value(double(layout.bytesPerBlock) / double(layout.blockSize));
    double perToken = double(layout.bytesPerBlock) / double(layout.blockSize);
    if (dtype == "f32")
      f32Bytes = perToken;
    j.key("bytes_per_token_vs_f32").value(perToken / f32Bytes);
    j.key("max_resident_seqs").value(std::max<int64_t>(blocks, 0) / perSeq);
    j.key("perplexity").value(*ppl);
    j.key("delta_perplexity_pct").value(100.0 * (*ppl - f32Ppl) / f32Ppl);
    j.key("greedy_agreement").value(*agree);
    j.key("greedy_tokens_compared").value(compared);
    j.key("decode_tokens_per_s").value(*speed);
    std::string compiled = folio::planKVCacheDType(**plan);
    j.key("kv_cache_dtype").value(compiled);
    j.key("scales").value(
        compiled == "int2" ? "KIVI: keys per channel over a block, values per "
                             "token, the newest tokens in full precision"
        : compiled == "int8" || compiled == "int4"
            ? "per token, computed when written"
        : !fp8(compiled) ? "none"
        : calibration    ? "calibrated"
                         : "default (uncalibrated)");
    j.key("kv_cache_memory").value(o.kvCacheMemory);
    j.key("context").value(o.context);
    j.key("decode_batch").value(o.decodeBatch);
    j.key("eval_tokens_scored")
        .value(int64_t(windows->size()) * (o.evalWindow - 1));
    j.key("cpu").value(cpu);
    j.endObject();
  }
  j.endObject();
  return j.str() + "\n";
}

} // namespace folio::bench
