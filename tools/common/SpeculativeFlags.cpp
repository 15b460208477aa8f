//===- SpeculativeFlags.cpp - Speculative-decoding flags ------------------===//

#include "tools/common/SpeculativeFlags.h"

#include "compiler/Target/Target.h"
#include "runtime/Device/CudaExecutor.h"
#include "runtime/SpecDecode/DraftProposer.h"
#include "runtime/SpecDecode/NgramProposer.h"

#include <cerrno>
#include <cstdlib>
#include <iostream>

namespace folio::tools {

namespace {

/// Drafts per step at most: past this, verifying costs more than any
/// acceptance rate seen in practice repays, and the [S, K+1, V] rows grow.
constexpr int64_t kMaxSpeculativeTokens = 16;
/// n-gram lengths at most (longer ones almost never recur).
constexpr int64_t kMaxNgram = 64;

Status parseCount(const std::string &flag, const std::string &text, int64_t lo,
                  int64_t hi, int64_t &out) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || errno || v < lo || v > hi)
    return Status::invalidArgument(
        flag + ": '" + text + "' is not an integer in [" + std::to_string(lo) +
        ", " + std::to_string(hi) + "]");
  out = v;
  return Status::ok();
}

} // namespace

bool SpeculativeFlags::isFlag(const std::string &arg) {
  return arg == "--speculative-model" || arg == "--speculative-method" ||
         arg == "--speculative-weight-dtype" ||
         arg == "--num-speculative-tokens" ||
         arg == "--ngram-prompt-lookup-min" ||
         arg == "--ngram-prompt-lookup-max" ||
         arg == "--no-adaptive-speculation";
}

Status SpeculativeFlags::parse(const std::string &arg, const char *value,
                               bool &consumed, bool allowList) {
  consumed = false;
  if (arg == "--no-adaptive-speculation") {
    adaptive = false;
    return Status::ok();
  }
  if (!value)
    return Status::invalidArgument(arg + " needs a value");
  consumed = true;
  std::string v = value;
  if (arg == "--speculative-model") {
    if (v.empty())
      return Status::invalidArgument("--speculative-model needs a path");
    model = v;
    return Status::ok();
  }
  if (arg == "--speculative-weight-dtype") {
    if (!isWeightDtypeName(v))
      return Status::invalidArgument(
          "--speculative-weight-dtype: '" + v +
          "' is not a weight dtype; supported: " + kWeightDtypeNames);
    weightDtype = v;
    return Status::ok();
  }
  if (arg == "--speculative-method") {
    if (v != "draft" && v != "ngram")
      return Status::invalidArgument("--speculative-method: '" + v +
                                     "' is not one of draft, ngram");
    method = v;
    return Status::ok();
  }
  if (arg == "--num-speculative-tokens") {
    numTokens.clear();
    size_t start = 0;
    while (true) {
      size_t comma = v.find(',', start);
      std::string item =
          v.substr(start, comma == std::string::npos ? std::string::npos
                                                     : comma - start);
      int64_t k = 0;
      if (Status s = parseCount(arg, item, 1, kMaxSpeculativeTokens, k); !s)
        return s;
      numTokens.push_back(k);
      if (comma == std::string::npos)
        break;
      start = comma + 1;
    }
    if (numTokens.size() > 1 && !allowList)
      return Status::invalidArgument(
          "--num-speculative-tokens takes one value here, not a list");
    return Status::ok();
  }
  if (arg == "--ngram-prompt-lookup-min")
    return parseCount(arg, v, 1, kMaxNgram, ngramMin);
  if (arg == "--ngram-prompt-lookup-max")
    return parseCount(arg, v, 1, kMaxNgram, ngramMax);
  return Status::invalidArgument("unknown argument '" + arg + "'");
}

Status SpeculativeFlags::finish() {
  if (method.empty() && !model.empty())
    method = "draft";
  if (method.empty()) {
    if (!numTokens.empty())
      return Status::invalidArgument(
          "--num-speculative-tokens needs --speculative-model or "
          "--speculative-method ngram");
    if (ngramMin || ngramMax)
      return Status::invalidArgument(
          "--ngram-prompt-lookup-min/max need --speculative-method ngram");
    if (!adaptive)
      return Status::invalidArgument(
          "--no-adaptive-speculation needs speculative decoding "
          "(--speculative-model or --speculative-method ngram)");
    if (!weightDtype.empty())
      return Status::invalidArgument(
          "--speculative-weight-dtype needs a draft model "
          "(--speculative-model)");
    return Status::ok();
  }
  if (method == "draft") {
    if (model.empty())
      return Status::invalidArgument(
          "--speculative-method draft needs --speculative-model");
    if (ngramMin || ngramMax)
      return Status::invalidArgument(
          "--ngram-prompt-lookup-min/max apply to --speculative-method "
          "ngram, not draft");
    // A plan runs as it was compiled.
    if (!weightDtype.empty() && model.size() >= 6 &&
        model.compare(model.size() - 6, 6, ".folio") == 0)
      return Status::invalidArgument(
          "--speculative-weight-dtype applies to an .onnx draft, which "
          "folioc compiles with it; the plan " +
          model + " keeps the weights it was compiled with (folioc " +
          "--weight-dtype)");
  } else {
    if (!model.empty())
      return Status::invalidArgument(
          "--speculative-model is a draft model; --speculative-method "
          "ngram takes none");
    if (!weightDtype.empty())
      return Status::invalidArgument(
          "--speculative-weight-dtype applies to a draft model; "
          "--speculative-method ngram has none");
    if (!ngramMin)
      ngramMin = 1;
    if (!ngramMax)
      ngramMax = std::max<int64_t>(4, ngramMin);
    if (ngramMin > ngramMax)
      return Status::invalidArgument("--ngram-prompt-lookup-min (" +
                                     std::to_string(ngramMin) +
                                     ") exceeds --ngram-prompt-lookup-max (" +
                                     std::to_string(ngramMax) + ")");
  }
  if (numTokens.empty())
    numTokens.push_back(4);
  return Status::ok();
}

std::string SpeculativeFlags::usage(bool compiledDraftsOnly) {
  std::string draft =
      compiledDraftsOnly
          ? "  --speculative-model M       a compiled draft (.folio) with the\n"
            "                              target's vocabulary: speculative\n"
            "                              decoding\n"
          : "  --speculative-model M       a draft model (.onnx or .folio) "
            "with the\n"
            "                              target's vocabulary: speculative "
            "decoding\n"
            "  --speculative-weight-dtype D\n"
            "                              how folioc stores an .onnx "
            "draft's\n"
            "                              weights: f32, bf16, f16, int8, "
            "fp8_e4m3,\n"
            "                              int4 (default: as the target's); "
            "the\n"
            "                              output stays the target's\n";
  return draft +
         "  --speculative-method D      draft (with --speculative-model) or "
         "ngram\n"
         "                              (prompt lookup, no model)\n"
         "  --num-speculative-tokens K  drafts per step at most (default 4)\n"
         "  --ngram-prompt-lookup-min N shortest n-gram looked up (default "
         "1)\n"
         "  --ngram-prompt-lookup-max N longest n-gram looked up (default "
         "4)\n"
         "  --no-adaptive-speculation   always K drafts (default: K chosen "
         "per\n"
         "                              step from measured acceptance and "
         "step\n"
         "                              times, 0 when it does not pay;\n"
         "                              requests that sample with a seed of\n"
         "                              their own always take K)\n";
}

Expected<core::SpeculativeConfig> makeSpeculativeConfig(
    const SpeculativeFlags &flags, size_t k,
    std::shared_ptr<const plan::Plan> draftPlan, int64_t targetVocab,
    int64_t maxModelLen, int64_t cacheTokens,
    const exec::ExecutorOptions &executorOptions, device::DeviceKind device) {
  core::SpeculativeConfig config;
  if (!flags.enabled())
    return config;
  config.numSpeculativeTokens = k;
  config.adaptive = flags.adaptive;
  if (flags.method == "ngram") {
    auto p = spec::NgramProposer::create(size_t(flags.ngramMin),
                                         size_t(flags.ngramMax));
    if (!p)
      return p.status();
    config.proposer = std::move(*p);
    return config;
  }
  if (!draftPlan)
    return Status::invalidArgument("speculative decoding with a draft model "
                                   "needs the model loaded");
  int64_t blockSize = draftPlan->configValue("block_size", 16);
  int64_t blocks = (cacheTokens + blockSize - 1) / blockSize + 1;
  auto refused = [&](const Status &s) {
    return Status::invalidArgument("--speculative-model " + flags.model + ": " +
                                   s.message());
  };
  device::DeviceChoice where;
  if (device != device::DeviceKind::Cpu) {
    Expected<device::DeviceChoice> chosen =
        device::selectDevice(device, draftPlan.get());
    if (!chosen)
      return refused(chosen.status());
    where = *chosen;
    if (!where.notice.empty())
      std::cerr << "note: the draft model: " << where.notice << "\n";
  }
  // On the CPU the draft runs on the calling thread alone: its kernels are
  // a tenth of the target's, too small to repay waking a pool per kernel.
  // On the bundled pair (AMD EPYC, 2 vCPUs) a draft step at batch 1 took
  // 0.40 ms on one thread against 0.84 ms on two, and the same at batch 8.
  exec::ExecutorOptions options = executorOptions;
  if (where.device == device::DeviceKind::Cpu)
    options.numThreads = 1;
  Expected<std::unique_ptr<exec::Executor>> executor =
      device::createExecutor(where, options);
  if (!executor)
    return refused(executor.status());
  auto draft = spec::DraftProposer::create(draftPlan, std::move(*executor),
                                           blocks, targetVocab, maxModelLen);
  if (!draft)
    return refused(draft.status());
  config.proposer = std::move(*draft);
  return config;
}

} // namespace folio::tools
