//===- WeightQuant.cpp - folio-bench --mode=weight-quant ------------------===//
//
// For each dtype the model is compiled with its linear weights stored in
// that dtype (and every other setting the same) and measured on the same
// inputs as f32 weights:
// - weight_bytes: the stored linear weights as the kernels stream them
//   (int8 scales and bf16 outlier columns, fp8 scales, int4 group scales
//   and mins included); plan_blob_bytes adds
//   the embedding, norms and other constants;
// - perplexity: teacher-forced over the held-out windows (Quality.h);
// - greedy_agreement: f32's greedy continuations of the windows' prompts
//   fed back, each next-token argmax compared (one early difference does
//   not make every later token of a sequence differ).
// With --calibration-data, int8's outlier columns also take the calibrated
// input rule (codegen/CPU/WeightPack.h), as folioc's do.
//
//===----------------------------------------------------------------------===//

#include "tools/folio-bench/WeightQuant.h"
#include "tools/folio-bench/BenchData.h"
#include "tools/folio-bench/Json.h"
#include "tools/folio-bench/Quality.h"

#include "compiler/Plan/LowerToPlan.h"
#include "compiler/Plan/StoreWeights.h"
#include "runtime/Core/KVCalibration.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>

namespace folio::bench {

Expected<std::string> runWeightQuant(const std::string &model,
                                     const WeightQuantOptions &o) {
  if (model.size() < 5 || model.compare(model.size() - 5, 5, ".onnx") != 0)
    return Status::invalidArgument(
        "--mode=weight-quant compiles one plan per weight dtype and needs an "
        ".onnx --model, not '" +
        model + "'");
  std::string evalData = o.evalData;
  if (evalData.empty()) {
    size_t slash = model.find_last_of('/');
    evalData = (slash == std::string::npos ? std::string(".")
                                           : model.substr(0, slash)) +
               "/heldout_slice.i32";
    if (!std::ifstream(evalData))
      return Status::invalidArgument(
          "--mode=weight-quant needs --eval-data (there is no "
          "heldout_slice.i32 beside the model)");
  }
  Expected<Seqs> windows = readWindows(evalData, o.evalWindow, "--eval-data");
  if (!windows)
    return windows.status();
  if (o.promptTokens >= o.evalWindow)
    return Status::invalidArgument("--prompt-tokens must be below the window");
  std::vector<std::string> dtypes = o.dtypes;
  for (const std::string &d : dtypes) {
    auto parsed = mlir::folio::parseWeightDtype(d);
    if (!parsed)
      return Status::invalidArgument(llvm::toString(parsed.takeError()));
    if (d == "none")
      return Status::invalidArgument(
          "--weight-dtype none stores nothing to compare; supported: " +
          std::string(mlir::folio::kSupportedWeightDtypes));
  }
  dtypes.erase(std::remove(dtypes.begin(), dtypes.end(), "f32"), dtypes.end());
  dtypes.insert(dtypes.begin(), "f32");

  // int8's outlier columns from calibration data, as folioc does: the
  // inputs of every weight recorded on a plan compiled the same way.
  std::optional<core::LinearInputCalibration> calibration;
  if (!o.calibrationData.empty()) {
    if (std::find(dtypes.begin(), dtypes.end(), "int8") == dtypes.end())
      return Status::invalidArgument(
          "--calibration-data chooses int8's outlier columns, and int8 is "
          "not in --weight-dtype");
    if (Status s = checkCalibrationNotEval(o.calibrationData, evalData, "int8");
        !s)
      return s;
    Expected<std::vector<TokenId>> ids =
        readCalibrationTokens(o.calibrationData, o.tokenizer);
    if (!ids)
      return ids.status();
    mlir::folio::CompileToPlanOptions c;
    c.kvCacheDtype = o.kvCacheDtype;
    c.blockSize = o.blockSize;
    Expected<plan::Plan> unpacked = mlir::folio::loadOrCompilePlan(model, c);
    if (!unpacked)
      return unpacked.status();
    Expected<core::LinearInputCalibration> inputs = core::calibrateLinearInputs(
        std::make_shared<const plan::Plan>(std::move(*unpacked)), *ids);
    if (!inputs)
      return Status::invalidArgument("--calibration-data: " +
                                     inputs.status().message());
    calibration = std::move(*inputs);
  } else if (!o.tokenizer.empty()) {
    return Status::invalidArgument(
        "--tokenizer only encodes text --calibration-data, and none was given");
  }

  int64_t perPrompt = 0;
  Seqs prompts =
      agreementPrompts(*windows, o.agreementTokens, o.promptTokens, perPrompt);

  double f32Ppl = 0;
  int64_t f32Bytes = 1;
  Seqs reference;
  Json j;
  j.beginObject();
  std::string cpu = cpuName();
  for (const std::string &dtype : dtypes) {
    std::cerr << "folio-bench: weight-quant " << dtype << "\n";
    mlir::folio::CompileToPlanOptions c;
    c.weightDtype = dtype;
    c.weightGroupSize = dtype == "int4" ? o.int4GroupSize : 0;
    c.kvCacheDtype = o.kvCacheDtype;
    c.blockSize = o.blockSize;
    if (dtype == "int8" && calibration)
      c.inputAbsMax = &calibration->absMax;
    c.onWarning = [&](const std::string &w) {
      std::cerr << "folio-bench: " << dtype << ": warning: " << w << "\n";
    };
    Expected<plan::Plan> compiled = mlir::folio::loadOrCompilePlan(model, c);
    if (!compiled)
      return Status::invalidArgument("--weight-dtype " + dtype + ": " +
                                     compiled.status().message());
    auto plan = std::make_shared<const plan::Plan>(std::move(*compiled));
    for (const char *limit : {"max_positions", "max_context"}) {
      int64_t most = plan->configValue(limit, 0);
      if (most > 0 &&
          (o.evalWindow > most || o.promptTokens + perPrompt > most))
        return Status::invalidArgument(
            "the eval window (" + std::to_string(o.evalWindow) +
            ") or a prompt plus its " + std::to_string(perPrompt) +
            " greedy tokens exceeds the model's " + limit + " (" +
            std::to_string(most) + ")");
    }
    if (dtype == "f32") {
      Expected<Seqs> cont = greedyContinue(plan, prompts, perPrompt, o.threads);
      if (!cont)
        return cont.status();
      reference = std::move(*cont);
    }
    Expected<double> ppl = perplexity(plan, *windows, o.threads);
    if (!ppl)
      return ppl.status();
    int64_t bytes = plan->storedWeightBytes();
    if (dtype == "f32") {
      f32Ppl = *ppl;
      f32Bytes = std::max<int64_t>(bytes, 1);
    }
    int64_t compared = 0;
    Expected<double> agree =
        agreement(plan, reference, o.promptTokens, o.threads, compared);
    if (!agree)
      return agree.status();
    int64_t outliers = 0, columns = 0;
    for (const plan::StoredWeight &w : plan->weights) {
      // A tied table's lookup shares its lm_head's columns.
      if (plan->steps[size_t(w.step)].kind == "embedding")
        continue;
      outliers += w.numOutliers;
      columns += w.k;
    }
    j.key(dtype).beginObject();
    j.key("weight_bytes").value(bytes);
    j.key("weight_bytes_vs_f32").value(double(bytes) / double(f32Bytes));
    j.key("plan_blob_bytes").value(int64_t(plan->blob.size()));
    j.key("stored_weights").value(int64_t(plan->weights.size()));
    if (dtype == "int4" && !plan->weights.empty())
      j.key("group_size")
          .value(plan::int4LayoutGroupSize(plan->weights.front().layout));
    if (dtype == "int8") {
      j.key("outlier_columns").value(outliers);
      j.key("outlier_column_fraction")
          .value(columns ? double(outliers) / double(columns) : 0.0);
      j.key("calibration_tokens")
          .value(calibration ? calibration->tokens : int64_t(0));
    }
    j.key("perplexity").value(*ppl);
    j.key("delta_perplexity_pct").value(100.0 * (*ppl - f32Ppl) / f32Ppl);
    j.key("greedy_agreement").value(*agree);
    j.key("greedy_tokens_compared").value(compared);
    j.key("eval_tokens_scored")
        .value(int64_t(windows->size()) * (o.evalWindow - 1));
    j.key("kv_cache_dtype").value(o.kvCacheDtype);
    j.key("cpu").value(cpu);
    j.endObject();
  }
  j.endObject();
  return j.str() + "\n";
}

} // namespace folio::bench
