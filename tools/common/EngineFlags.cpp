//===- EngineFlags.cpp - The engine flags of the serving tools ------------===//

#include "tools/common/EngineFlags.h"

#include "runtime/Device/CudaExecutor.h"

#include "compiler/Target/Target.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <iostream>

namespace folio::tools {

Status parseCount(const std::string &flag, const std::string &value,
                  long long lo, size_t &out) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end || errno || v < lo)
    return Status::invalidArgument(
        flag + ": '" + value + "' is not an integer >= " + std::to_string(lo));
  out = size_t(v);
  return Status::ok();
}

Status EngineFlags::parse(int argc, char **argv, int &i, bool &handled) {
  std::string arg = argv[i];
  handled = true;
  if (arg == "--no-verify-weights") {
    verifyWeights = false;
    return Status::ok();
  }
  if (arg == "--enforce-eager") {
    enforceEager = true;
    return Status::ok();
  }
  if (arg == "--enable-prefix-caching" || arg == "--no-enable-prefix-caching") {
    prefixCaching = arg == "--enable-prefix-caching";
    return Status::ok();
  }
  if (SpeculativeFlags::isFlag(arg)) {
    bool consumed = false;
    Status s = speculative.parse(arg, i + 1 < argc ? argv[i + 1] : nullptr,
                                 consumed, /*allowList=*/false);
    i += consumed;
    return s;
  }
  size_t *count = nullptr;
  long long lo = 1;
  if (arg == "--max-model-len")
    count = &maxModelLen, lo = 2;
  else if (arg == "--max-num-seqs")
    count = &maxNumSeqs;
  else if (arg == "--max-num-batched-tokens")
    count = &maxNumBatchedTokens;
  else if (arg == "--num-blocks")
    count = &numBlocks, lo = 2; // block 0 is reserved
  else if (arg == "--device") {
    if (i + 1 >= argc)
      return Status::invalidArgument(arg + " needs a value");
    return parseDeviceFlag(argv[++i], device);
  } else if (arg != "--kv-cache-dtype") {
    handled = false;
    return Status::ok();
  }
  if (i + 1 >= argc)
    return Status::invalidArgument(arg + " needs a value");
  std::string value = argv[++i];
  if (count)
    return parseCount(arg, value, lo, *count);
  if (!parseKVCacheDType(value))
    return Status::invalidArgument("--kv-cache-dtype: '" + value +
                                   "' is not one of " +
                                   supportedKVCacheDTypes());
  kvCacheDtype = value;
  return Status::ok();
}

Status parseDeviceFlag(const std::string &value, device::DeviceKind &out) {
  std::optional<device::DeviceKind> kind = device::parseDeviceKind(value);
  if (!kind)
    return Status::invalidArgument("--device: '" + value +
                                   "' is not one of cpu, cuda, auto");
  out = *kind;
  return Status::ok();
}

std::string deviceFlagUsage() {
  return "  --device D                  cpu (default), cuda (the GPU; "
         "without a CUDA driver or device, the CPU with a note saying why) or "
         "auto (the GPU when it can run the plan, else the CPU with a note)\n";
}

const char *enforceEagerUsage() {
  return "  --enforce-eager             with --device cuda: launch every "
         "kernel every step (decode steps otherwise replay a CUDA graph per "
         "batch size and context range); the CPU always runs this way\n";
}

std::string EngineFlags::usage(const std::string &kvDtype) const {
  std::string on = prefixCaching ? " (default)" : "";
  std::string off = prefixCaching ? "" : " (default)";
  return "  --max-model-len N           prompt plus completion at most "
         "(default: the model's limit)\n"
         "  --max-num-seqs N            running sequences at most (default " +
         std::to_string(maxNumSeqs) +
         ")\n"
         "  --max-num-batched-tokens N  tokens per engine step (default " +
         std::to_string(maxNumBatchedTokens) +
         ")\n"
         "  --num-blocks N              KV blocks (default: 4 max-model-len "
         "sequences)\n"
         "  --kv-cache-dtype D          " +
         kvDtype +
         "\n"
         "  --enable-prefix-caching     share cached prompt blocks between "
         "requests" +
         on +
         "\n"
         "  --no-enable-prefix-caching  compute every prompt in full" +
         off +
         "\n"
         "  --no-verify-weights         skip hashing the weights against "
         "their checksum (the metadata is always checked); a corrupt weight "
         "then gives wrong text, not an error\n" +
         deviceFlagUsage() + enforceEagerUsage() +
         "Speculative decoding (off by default):\n" +
         SpeculativeFlags::usage(compiledDraftsOnly);
}

size_t modelLengthLimit(const plan::Plan &plan) {
  int64_t maxPositions = plan.configValue("max_positions", 0);
  size_t limit = maxPositions > 0 ? size_t(maxPositions) : 2048;
  // At most the length the attention masks were proven causal up to.
  if (int64_t maxContext = plan.configValue("max_context", 0))
    limit = std::min(limit, size_t(maxContext));
  return limit;
}

Expected<EngineSetup> buildEngine(std::shared_ptr<const plan::Plan> plan,
                                  const EngineFlags &flags,
                                  std::optional<TokenId> eos, uint64_t seed,
                                  std::shared_ptr<const plan::Plan> draftPlan) {
  Expected<device::DeviceChoice> device =
      device::selectDevice(flags.device, plan.get());
  if (!device)
    return device.status();
  if (!device->notice.empty())
    std::cerr << "note: " << device->notice << "\n";
  EngineSetup setup;
  // A larger --max-model-len is refused by the engine, naming the limit.
  setup.maxModelLen =
      flags.maxModelLen ? flags.maxModelLen : modelLengthLimit(*plan);
  SchedulerConfig config;
  config.maxModelLen = setup.maxModelLen;
  config.maxNumSeqs = flags.maxNumSeqs;
  config.maxNumBatchedTokens = flags.maxNumBatchedTokens;
  config.vocabSize = size_t(plan->configValue("vocab", 0));
  config.eosTokenId = eos;
  config.seed = seed;
  KVCacheConfig &kv = setup.kv;
  kv.blockSize = size_t(plan->configValue("block_size", 16));
  kv.enablePrefixCaching = flags.prefixCaching;
  kv.numBlocks =
      flags.numBlocks
          ? flags.numBlocks
          : 4 * ((setup.maxModelLen + kv.blockSize - 1) / kv.blockSize) + 1;
  exec::ExecutorOptions options;
  options.cudaGraphs = !flags.enforceEager;
  options.warn = [](const std::string &w) {
    std::cerr << "warning: " << w << "\n";
  };
  // A draft model runs on the target's GPU when its plan has kernels for it
  // (see makeSpeculativeConfig).
  const SpeculativeFlags &spec = flags.speculative;
  Expected<core::SpeculativeConfig> speculative = makeSpeculativeConfig(
      spec, spec.enabled() ? size_t(spec.numTokens[0]) : 0,
      std::move(draftPlan), int64_t(config.vocabSize),
      int64_t(setup.maxModelLen),
      int64_t(kv.numBlocks - 1) * int64_t(kv.blockSize), options,
      device->device == device::DeviceKind::Cuda ? flags.device
                                                 : device::DeviceKind::Cpu);
  if (!speculative)
    return speculative.status();
  Expected<std::unique_ptr<exec::Executor>> executor =
      device::createExecutor(*device, options);
  if (!executor)
    return executor.status();
  auto engine =
      core::ServingEngine::create(std::move(plan), std::move(*executor), config,
                                  kv, std::move(*speculative));
  if (!engine)
    return engine.status();
  setup.engine = std::move(*engine);
  return setup;
}

} // namespace folio::tools
