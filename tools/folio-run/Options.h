//===- Options.h - folio-run's command line ---------------------*- C++ -*-===//

#ifndef FOLIO_TOOLS_FOLIO_RUN_OPTIONS_H
#define FOLIO_TOOLS_FOLIO_RUN_OPTIONS_H

#include "runtime/Device/DeviceSelection.h"
#include "runtime/Support/Status.h"
#include "runtime/Support/Types.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace folio::run {

struct Options {
  std::string model;
  std::vector<std::vector<TokenId>> prompts;
  int64_t maxNewTokens = 16;
  double temperature = 0.0;
  int64_t topK = 0;  ///< 0 = off
  double topP = 1.0; ///< 1 = off
  std::optional<uint64_t> seed;
  std::string dumpLogits;
  bool json = false;
  /// A .folio plan's weights are hashed against its checksum.
  bool verifyWeights = true;
  std::string weightDtype = "f32";
  bool weightDtypeGiven = false;
  int64_t threads = 0;   ///< 0 = FOLIO_NUM_THREADS or every core
  int64_t blockSize = 0; ///< 0: the compiler's default
  std::string kvCacheDtype = "auto";
  int64_t maxModelLen = 0;
  /// --device cpu|cuda|auto (runtime/Device).
  device::DeviceKind device = device::DeviceKind::Cpu;
  /// --enforce-eager: no CUDA graphs (ExecutorOptions::cudaGraphs).
  bool enforceEager = false;
  /// --print-kernels: list the plan's kernels and exit (no prompt needed).
  bool printKernels = false;
  bool help = false;
};

/// Parses argv; every error names the flag and what it accepts.
Expected<Options> parseOptions(int argc, char **argv);

extern const char *const kUsage;

} // namespace folio::run

#endif // FOLIO_TOOLS_FOLIO_RUN_OPTIONS_H
