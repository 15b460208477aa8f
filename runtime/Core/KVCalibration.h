//===- KVCalibration.h - Per-head K/V ranges from calibration data -*- C++ -*-//
//
// Static-scale KV caches (fp8) need each layer's per-head range of K and V
// before serving. This runs a plan compiled with an f32 cache over
// calibration tokens and reads the ranges off the cache itself, so no
// hook into the kernels is needed. int8 weights' outlier columns need the
// largest input of each linear weight's columns, which the executor
// records while the same windows run (Executor::recordLinearInputs).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_CORE_KVCALIBRATION_H
#define FOLIO_RUNTIME_CORE_KVCALIBRATION_H

#include "runtime/Plan/Plan.h"
#include "runtime/Support/Status.h"
#include "runtime/Support/Types.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace folio::core {

/// max |K| and max |V| per layer and kv head: values[(layer * 2 + kv) *
/// kvHeads + head], kv 0 for K and 1 for V.
struct KVAbsMax {
  int64_t layers = 0;
  int64_t kvHeads = 0;
  int64_t tokens = 0; ///< calibration tokens run
  std::vector<float> values;
};

/// The calibration window for `plan`: 2048 tokens, or less where the plan
/// has a learned position table (`max_positions`) or masks proven causal
/// only up to a shorter context (`max_context`).
int64_t calibrationWindow(const plan::Plan &plan);

/// Runs `tokens` through `plan` (every KV cache f32) in windows of
/// calibrationWindow(plan) tokens, each window a sequence from position 0,
/// and returns the per-head abs-max of everything written to the caches.
Expected<KVAbsMax> calibrateKVAbsMax(std::shared_ptr<const plan::Plan> plan,
                                     const std::vector<TokenId> &tokens);

/// The calibrated inputs of the linear weights of the plan that ran.
struct LinearInputCalibration {
  int64_t tokens = 0; ///< calibration tokens run
  plan::LinearInputAbsMax absMax;
};

/// Runs `tokens` through `plan` as calibrateKVAbsMax does and records the
/// inputs of every linear and gated-MLP weight (int8 weights' outlier
/// columns, codegen/CPU/WeightPack.h). Any cache dtype.
Expected<LinearInputCalibration>
calibrateLinearInputs(std::shared_ptr<const plan::Plan> plan,
                      const std::vector<TokenId> &tokens);

/// into[i] = max(into[i], from[i]), a NaN on either side kept: a NaN in any
/// window must reach the compiler, which refuses it.
void mergeAbsMax(std::vector<float> &into, const std::vector<float> &from);

/// Reads token data: `.i32` files are int32 little-endian token ids; any
/// other file is text, which needs `encode` (a tokenizer). Errors name
/// `flag`, the file and what was wrong.
Expected<std::vector<TokenId>> readTokenFile(
    const std::string &path,
    const std::function<Expected<std::vector<TokenId>>(const std::string &)>
        &encode,
    const std::string &flag = "--calibration-data");

} // namespace folio::core

#endif // FOLIO_RUNTIME_CORE_KVCALIBRATION_H
