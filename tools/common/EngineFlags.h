//===- EngineFlags.h - The engine flags of the serving tools ----*- C++ -*-===//
//
// One parser and one engine setup for every tool that serves a model
// (folio-serve, folio-generate, the model binaries folioc --emit=binary
// writes): --max-model-len, --max-num-seqs, --max-num-batched-tokens,
// --num-blocks, --kv-cache-dtype, --[no-]enable-prefix-caching,
// --no-verify-weights, --device, --enforce-eager and the speculative
// flags, named as vLLM names them.
// Each tool sets its own defaults. Plain runtime code: loading a model
// (which may compile an .onnx) is the caller's, so a model binary serves
// without linking the compiler.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_COMMON_ENGINEFLAGS_H
#define FOLIO_TOOLS_COMMON_ENGINEFLAGS_H

#include "runtime/Core/ServingEngine.h"
#include "runtime/Device/DeviceSelection.h"
#include "tools/common/SpeculativeFlags.h"

#include <memory>
#include <optional>
#include <string>

namespace folio::tools {

/// `value` as an integer >= `lo`, or an error naming `flag`.
Status parseCount(const std::string &flag, const std::string &value,
                  long long lo, size_t &out);

struct EngineFlags {
  std::string kvCacheDtype = "auto";
  size_t maxModelLen = 0; ///< 0: the model's limit
  size_t maxNumSeqs = 64, maxNumBatchedTokens = 512;
  size_t numBlocks = 0; ///< 0: room for 4 max-model-len sequences
  bool prefixCaching = true, verifyWeights = true;
  /// --device: cpu (default), cuda or auto (runtime/Device).
  device::DeviceKind device = device::DeviceKind::Cpu;
  /// --enforce-eager: no CUDA graphs (ExecutorOptions::cudaGraphs).
  bool enforceEager = false;
  /// The tool takes a compiled (.folio) draft only: its usage says so.
  bool compiledDraftsOnly = false;
  SpeculativeFlags speculative;

  /// Parses argv[i] when it is one of these flags (then `handled`),
  /// advancing `i` past the value it takes. A bad value is an error.
  Status parse(int argc, char **argv, int &i, bool &handled);
  /// Checks the flags together (the speculative ones, see
  /// SpeculativeFlags::finish).
  Status finish() { return speculative.finish(); }

  /// The usage lines of these flags with this object's defaults. `kvDtype`
  /// describes --kv-cache-dtype for the tool (what a given value does).
  std::string usage(const std::string &kvDtype) const;
};

/// The longest sequence `plan` serves: its max_positions (2048 when it
/// names none), at most its proven max_context.
size_t modelLengthLimit(const plan::Plan &plan);

/// A serving engine on `plan` and what the tools report of it.
struct EngineSetup {
  std::unique_ptr<core::ServingEngine> engine;
  size_t maxModelLen = 0;
  KVCacheConfig kv;
};

/// "--device: 'x' is not one of cpu, cuda, auto" for a bad value.
Status parseDeviceFlag(const std::string &value, device::DeviceKind &out);
/// The usage line of --device.
std::string deviceFlagUsage();
/// The usage line of --enforce-eager.
const char *enforceEagerUsage();

/// Builds the engine `flags` ask for on the CPU executor (after resolving
/// --device: `cuda` is an error until a CUDA executor exists, `auto`
/// prints a one-line note to stderr saying why the CPU runs): scheduler
/// limits,
/// the KV cache (sized for 4 max-model-len sequences unless --num-blocks),
/// prefix caching and speculative decoding (a draft model's plan in
/// `draftPlan`, null for ngram or none).
Expected<EngineSetup> buildEngine(std::shared_ptr<const plan::Plan> plan,
                                  const EngineFlags &flags,
                                  std::optional<TokenId> eos, uint64_t seed,
                                  std::shared_ptr<const plan::Plan> draftPlan);

} // namespace folio::tools

#endif // FOLIO_TOOLS_COMMON_ENGINEFLAGS_H
