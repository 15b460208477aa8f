//===- BenchData.cpp - What several folio-bench modes read ----------------===//

#include "tools/folio-bench/BenchData.h"

#include "runtime/Core/KVCalibration.h"
#include "runtime/Tokenizer/Tokenizer.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>

namespace folio::bench {

std::string cpuName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos)
        return line.substr(colon + 2);
    }
  return "unknown";
}

Expected<std::vector<std::vector<TokenId>>>
readWindows(const std::string &path, int64_t window, const std::string &flag) {
  // Held-out data is read as ids only: no --tokenizer would encode it.
  auto idsOnly = [&](const std::string &) -> Expected<std::vector<TokenId>> {
    return Status::invalidArgument(flag + ": '" + path + "' is text; " + flag +
                                   " takes .i32 token ids (int32 "
                                   "little-endian) only");
  };
  Expected<std::vector<TokenId>> ids = core::readTokenFile(path, idsOnly, flag);
  if (!ids)
    return ids.status();
  if (ids->size() < size_t(window))
    return Status::invalidArgument(
        flag + " '" + path + "' holds " + std::to_string(ids->size()) +
        " tokens, less than one window of " + std::to_string(window));
  std::vector<std::vector<TokenId>> windows;
  for (size_t b = 0; b + size_t(window) <= ids->size(); b += size_t(window))
    windows.emplace_back(ids->begin() + std::ptrdiff_t(b),
                         ids->begin() + std::ptrdiff_t(b + size_t(window)));
  return windows;
}

std::vector<std::vector<TokenId>>
agreementPrompts(const std::vector<std::vector<TokenId>> &windows,
                 int64_t agreementTokens, int64_t promptTokens,
                 int64_t &perPrompt) {
  size_t numPrompts = std::min(windows.size(), size_t(agreementTokens));
  perPrompt = (agreementTokens + int64_t(numPrompts) - 1) / int64_t(numPrompts);
  std::vector<std::vector<TokenId>> prompts;
  for (size_t i = 0; i < numPrompts; ++i)
    prompts.emplace_back(windows[i].begin(),
                         windows[i].begin() + std::ptrdiff_t(promptTokens));
  return prompts;
}

Expected<std::vector<TokenId>>
readCalibrationTokens(const std::string &path, const std::string &tokenizer) {
  std::function<Expected<std::vector<TokenId>>(const std::string &)> encode;
  std::shared_ptr<Tokenizer> tok;
  if (!tokenizer.empty()) {
    Expected<Tokenizer> t = Tokenizer::fromFile(tokenizer);
    if (!t)
      return t.status();
    tok = std::make_shared<Tokenizer>(std::move(*t));
    encode = [tok](const std::string &text) { return tok->encode(text); };
  }
  return core::readTokenFile(path, encode);
}

Status checkCalibrationNotEval(const std::string &calibration,
                               const std::string &eval,
                               const std::string &what) {
  char *a = realpath(calibration.c_str(), nullptr);
  char *b = realpath(eval.c_str(), nullptr);
  bool same = a && b && std::string(a) == b;
  std::free(a);
  std::free(b);
  if (same)
    return Status::invalidArgument(
        "--calibration-data is the --eval-data file: calibrating on the "
        "evaluation text would flatter " +
        what);
  return Status::ok();
}

} // namespace folio::bench
