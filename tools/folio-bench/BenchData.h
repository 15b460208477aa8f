//===- BenchData.h - What several folio-bench modes read --------*- C++ -*-===//

#ifndef FOLIO_TOOLS_FOLIO_BENCH_BENCHDATA_H
#define FOLIO_TOOLS_FOLIO_BENCH_BENCHDATA_H

#include "runtime/Support/Status.h"
#include "runtime/Support/Types.h"

#include <cstdint>
#include <string>
#include <vector>

namespace folio::bench {

/// The CPU's model name (/proc/cpuinfo), for the report: figures from
/// different machines must say where they came from.
std::string cpuName();

/// The whole windows of `window` tokens in an int32 token file (the
/// bundled model's heldout_slice.i32, say); `flag` names it in errors.
Expected<std::vector<std::vector<TokenId>>>
readWindows(const std::string &path, int64_t window, const std::string &flag);

/// The greedy-agreement prompts: the first `promptTokens` of at most one
/// window per token asked for (--agreement-tokens 8 compares 8 tokens, not
/// one per window), and in `perPrompt` the tokens each is continued by.
std::vector<std::vector<TokenId>>
agreementPrompts(const std::vector<std::vector<TokenId>> &windows,
                 int64_t agreementTokens, int64_t promptTokens,
                 int64_t &perPrompt);

/// Refuses --calibration-data that is the --eval-data file: calibrating on
/// the evaluation text would flatter `what` (the quantized dtype).
Status checkCalibrationNotEval(const std::string &calibration,
                               const std::string &eval,
                               const std::string &what);

/// --calibration-data's tokens: int32 ids (.i32) or text encoded with the
/// tokenizer.json at `tokenizer` (empty: none, and text is refused).
Expected<std::vector<TokenId>>
readCalibrationTokens(const std::string &path, const std::string &tokenizer);

} // namespace folio::bench

#endif // FOLIO_TOOLS_FOLIO_BENCH_BENCHDATA_H
