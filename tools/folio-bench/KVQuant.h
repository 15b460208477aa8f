//===- KVQuant.h - folio-bench --mode=kv-quant ------------------*- C++ -*-===//
//
// Accuracy, memory and decode speed of each KV-cache dtype on one model,
// every figure against the f32 cache measured in the same run.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_FOLIO_BENCH_KVQUANT_H
#define FOLIO_TOOLS_FOLIO_BENCH_KVQUANT_H

#include "runtime/Support/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace folio::bench {

struct KVQuantOptions {
  /// Cache dtypes; f32 (the baseline) is measured whether listed or not.
  std::vector<std::string> dtypes = {"f32",  "bf16", "fp8_e4m3", "fp8_e5m2",
                                     "int8", "int4", "int2"};
  int64_t blockSize = 0; ///< 0: the compiler's default per dtype
  /// Held-out windows, int32 little-endian, evalWindow tokens each.
  std::string evalData;
  int64_t evalWindow = 256;
  /// Greedy agreement: prompts are each window's first promptTokens
  /// tokens, continued by agreementTokens / windows tokens each.
  int64_t promptTokens = 32;
  int64_t agreementTokens = 1024;
  /// Decode speed: decodeBatch sequences at context `context`, timed over
  /// decodeSteps steps, the best of `repeats`.
  int64_t context = 2048;
  int64_t decodeBatch = 4;
  int64_t decodeSteps = 16;
  int64_t repeats = 3;
  /// Resident sequences of `context` tokens this budget holds.
  int64_t kvCacheMemory = int64_t(256) << 20;
  /// fp8 scales: calibration tokens (.i32 ids) or text (with `tokenizer`);
  /// empty: the compiler's default scales (and its warning).
  std::string calibrationData;
  std::string tokenizer;
  int64_t threads = 0;
};

/// Runs the comparison on an .onnx model and returns one JSON object keyed
/// by dtype name.
Expected<std::string> runKVQuant(const std::string &model,
                                 const KVQuantOptions &options);

} // namespace folio::bench

#endif // FOLIO_TOOLS_FOLIO_BENCH_KVQUANT_H
