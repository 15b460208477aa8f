//===- SpeculativeFlags.h - Speculative-decoding flags ---------*- C++ -*-===//
//
// One parser for the flags every serving tool takes, named as vLLM names
// them: --speculative-model, --speculative-method draft|ngram,
// --num-speculative-tokens, --ngram-prompt-lookup-min/max, and
// --no-adaptive-speculation; and Folio's --speculative-weight-dtype. A flag
// that means nothing with the others given is refused, never ignored. Plain
// runtime code; loading a draft model that may need compiling is in
// tools/common/LoadModel.h.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_COMMON_SPECULATIVEFLAGS_H
#define FOLIO_TOOLS_COMMON_SPECULATIVEFLAGS_H

#include "runtime/Core/ServingEngine.h"
#include "runtime/Device/DeviceSelection.h"

#include <string>
#include <vector>

namespace folio::tools {

struct SpeculativeFlags {
  std::string model; ///< --speculative-model (.onnx or .folio)
  /// --speculative-weight-dtype: how folioc stores an .onnx draft's
  /// weights; empty: as the target's.
  std::string weightDtype;
  std::string method; ///< "draft", "ngram" or "" (off)
  /// --num-speculative-tokens: one value, or a list for folio-bench.
  std::vector<int64_t> numTokens;
  int64_t ngramMin = 0, ngramMax = 0; ///< 0: not given
  bool adaptive = true;

  /// Whether `arg` is one of these flags. If so, `value` (the next
  /// argument, null when there is none) is consumed unless the flag takes
  /// none (`consumed` says), and a bad value is an error.
  static bool isFlag(const std::string &arg);
  Status parse(const std::string &arg, const char *value, bool &consumed,
               bool allowList);

  /// Fills defaults and refuses combinations that mean nothing: a method
  /// needs its inputs (draft: a model; ngram: no model), and
  /// --num-speculative-tokens, the n-gram bounds and
  /// --no-adaptive-speculation need speculation.
  Status finish();
  bool enabled() const { return !method.empty(); }

  /// The usage lines of these flags; `compiledDraftsOnly` for a tool that
  /// takes a .folio draft only (a model binary carries no compiler).
  static std::string usage(bool compiledDraftsOnly = false);
};

/// The engine's speculative configuration with `k` drafts at most: a fresh
/// proposer (for a draft model, on `draftPlan` with a KV cache holding
/// `cacheTokens` tokens, like the target's). The draft runs where `device`
/// selects for its plan (device::selectDevice): pass the --device the
/// target runs on its GPU by, and Cpu when the target runs on the CPU.
/// `cuda` with a draft plan that has no kernels for the GPU is an error;
/// `auto` then runs the draft on the CPU with a note on stderr.
Expected<core::SpeculativeConfig>
makeSpeculativeConfig(const SpeculativeFlags &flags, size_t k,
                      std::shared_ptr<const plan::Plan> draftPlan,
                      int64_t targetVocab, int64_t maxModelLen,
                      int64_t cacheTokens,
                      const exec::ExecutorOptions &executorOptions = {},
                      device::DeviceKind device = device::DeviceKind::Cpu);

} // namespace folio::tools

#endif // FOLIO_TOOLS_COMMON_SPECULATIVEFLAGS_H
