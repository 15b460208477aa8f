//===- WeightQuant.h - folio-bench --mode=weight-quant ----------*- C++ -*-===//
//
// Size and accuracy of each stored weight dtype (folioc --weight-dtype) on
// one model, every figure against f32 weights measured in the same run.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_FOLIO_BENCH_WEIGHTQUANT_H
#define FOLIO_TOOLS_FOLIO_BENCH_WEIGHTQUANT_H

#include "runtime/Support/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace folio::bench {

struct WeightQuantOptions {
  /// Weight dtypes; f32 (the baseline) is measured whether listed or not.
  std::vector<std::string> dtypes = {"bf16", "int8"};
  /// Held-out windows, int32 little-endian, evalWindow tokens each; empty:
  /// heldout_slice.i32 beside the model (models/bundled has one).
  std::string evalData;
  int64_t evalWindow = 256;
  /// Greedy agreement: each window's first promptTokens tokens continued
  /// by agreementTokens / windows tokens.
  int64_t promptTokens = 32;
  int64_t agreementTokens = 1024;
  /// Every variant's KV cache: f32 by default, so only the weights differ.
  /// Token ids (.i32) or text (with `tokenizer`) to calibrate int8's
  /// outlier columns on, as folioc --calibration-data; empty: the weight
  /// rule alone. Refused unless int8 is listed.
  std::string calibrationData;
  std::string tokenizer;
  std::string kvCacheDtype = "f32";
  int64_t blockSize = 0;
  int64_t threads = 0;
  /// int4's group along K (0: folioc's default, 128).
  int64_t int4GroupSize = 0;
};

/// Compiles the .onnx `model` once per dtype and returns one JSON object
/// keyed by dtype: weight_bytes, perplexity, delta_perplexity_pct,
/// greedy_agreement and what they were measured on.
Expected<std::string> runWeightQuant(const std::string &model,
                                     const WeightQuantOptions &options);

} // namespace folio::bench

#endif // FOLIO_TOOLS_FOLIO_BENCH_WEIGHTQUANT_H
