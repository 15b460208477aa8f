//===- KVCalibration.cpp - Per-head K/V ranges from calibration data ------===//

#include "runtime/Core/KVCalibration.h"

#include "runtime/Core/TeacherForced.h"
#include "runtime/Executor/Executor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>

namespace folio::core {

int64_t calibrationWindow(const plan::Plan &plan) {
  int64_t window = 2048;
  for (const char *limit : {"max_positions", "max_context"})
    if (int64_t v = plan.configValue(limit, 0); v > 0 && v < window)
      window = v;
  return window;
}

void mergeAbsMax(std::vector<float> &into, const std::vector<float> &from) {
  for (size_t i = 0; i < into.size() && i < from.size(); ++i)
    if (!std::isnan(into[i]) && (std::isnan(from[i]) || from[i] > into[i]))
      into[i] = from[i];
}

namespace {

/// Loads `plan` on a CPU executor and runs `tokens` through it in windows
/// of calibrationWindow(plan), each a sequence from position 0, calling
/// `begin` once the executor is loaded and `afterWindow` after each window.
/// `everyRow` asks for every position's logits (so that the lm_head runs on
/// every row), not one row per call.
Status
runCalibration(std::shared_ptr<const plan::Plan> plan,
               const std::vector<TokenId> &tokens, bool everyRow,
               const std::function<Status(exec::Executor &)> &begin,
               const std::function<Status(exec::Executor &)> &afterWindow) {
  if (tokens.empty())
    return Status::invalidArgument("the calibration data holds no tokens");
  const int64_t window = calibrationWindow(*plan);
  int64_t vocab = plan->configValue("vocab", 0);
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || (vocab > 0 && tokens[i] >= vocab))
      return Status::invalidArgument("calibration token " + std::to_string(i) +
                                     " is " + std::to_string(tokens[i]) +
                                     ", outside the vocabulary [0, " +
                                     std::to_string(vocab) + ")");
  std::unique_ptr<exec::Executor> executor = exec::createCPUExecutor();
  if (Status s = executor->load(plan); !s)
    return s;
  if (Status s = begin(*executor); !s)
    return s;
  // One window at a time keeps the cache small.
  int64_t blockSize = executor->kvCacheLayout().blockSize;
  for (size_t b = 0; b < tokens.size(); b += size_t(window)) {
    std::vector<std::vector<TokenId>> one{std::vector<TokenId>(
        tokens.begin() + std::ptrdiff_t(b),
        tokens.begin() +
            std::ptrdiff_t(std::min(tokens.size(), b + size_t(window))))};
    if (Status s = executor->allocateKVCache(
            std::max<int64_t>(2, teacherForcedBlocks(one, blockSize)));
        !s)
      return s;
    TeacherForcedOptions options;
    options.chunkTokens = 512;
    // Logits of every position (discarded) when the last norm's rows into
    // the lm_head must all be seen; otherwise one row per call.
    if (everyRow)
      options.onLogits = [](const std::vector<float> &, int64_t,
                            const std::vector<int64_t> &,
                            const std::vector<int64_t> &) {};
    if (Status s = runTeacherForced(*executor, one, options); !s)
      return s;
    if (Status s = afterWindow(*executor); !s)
      return s;
  }
  return Status::ok();
}

} // namespace

Expected<KVAbsMax> calibrateKVAbsMax(std::shared_ptr<const plan::Plan> plan,
                                     const std::vector<TokenId> &tokens) {
  KVAbsMax result;
  result.tokens = int64_t(tokens.size());
  Status s = runCalibration(
      std::move(plan), tokens, /*everyRow=*/false,
      [](exec::Executor &) { return Status::ok(); },
      [&](exec::Executor &executor) {
        Expected<exec::KVCacheAbsMax> ranges = executor.kvCacheAbsMax();
        if (!ranges)
          return ranges.status();
        if (result.values.empty()) {
          result.layers = ranges->layers;
          result.kvHeads = ranges->kvHeads;
          result.values = ranges->values;
        } else {
          mergeAbsMax(result.values, ranges->values);
        }
        return Status::ok();
      });
  if (!s)
    return s;
  return result;
}

Expected<LinearInputCalibration>
calibrateLinearInputs(std::shared_ptr<const plan::Plan> plan,
                      const std::vector<TokenId> &tokens) {
  LinearInputCalibration result;
  result.tokens = int64_t(tokens.size());
  Status s = runCalibration(
      std::move(plan), tokens, /*everyRow=*/true,
      [](exec::Executor &executor) {
        return executor.recordLinearInputs(true);
      },
      [&](exec::Executor &executor) {
        // The recording accumulates over the windows; the last read holds
        // them all.
        result.absMax = executor.linearInputAbsMax();
        return Status::ok();
      });
  if (!s)
    return s;
  return result;
}

Expected<std::vector<TokenId>> readTokenFile(
    const std::string &path,
    const std::function<Expected<std::vector<TokenId>>(const std::string &)>
        &encode,
    const std::string &flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::invalidArgument(flag + ": cannot read '" + path + "'");
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".i32") == 0) {
    if (bytes.size() % 4 != 0)
      return Status::invalidArgument(
          flag + ": '" + path + "' has " + std::to_string(bytes.size()) +
          " bytes, not a whole number of int32 token ids");
    std::vector<TokenId> ids(bytes.size() / 4);
    for (size_t i = 0; i < ids.size(); ++i) {
      int32_t v;
      std::memcpy(&v, bytes.data() + 4 * i, 4); // little-endian hosts only
      ids[i] = TokenId(v);
    }
    return ids;
  }
  if (!encode)
    return Status::invalidArgument(
        flag + ": '" + path +
        "' is text (not .i32 token ids) and needs --tokenizer");
  return encode(bytes);
}

} // namespace folio::core
