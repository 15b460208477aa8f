//===- Options.cpp - folio-run's command line -----------------------------===//

#include "tools/folio-run/Options.h"

#include "compiler/Target/Target.h"
#include "tools/common/EngineFlags.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace folio::run {

const char *const kUsage =
    "usage: folio-run --model M.onnx|M.folio --prompt-ids 1,2,3 "
    "[--prompt-ids ...]\n"
    "                 [--max-new-tokens N] [--temperature T [--top-k K] "
    "[--top-p P] [--seed S]]\n"
    "                 [--dump-logits out.npy] [--json] [--weight-dtype D]\n"
    "                 [--threads N] [--block-size B] [--max-model-len L]\n"
    "                 [--kv-cache-dtype D] [--no-verify-weights] "
    "[--device cpu|cuda|auto]\n"
    "                 [--enforce-eager]\n"
    "       folio-run --model M.folio --print-kernels\n"
    "Runs every prompt together as one ragged batch.\n"
    "  --model           a model exported to ONNX (compiled by running the "
    "folioc next to folio-run, or $FOLIOC) or a plan from `folioc -o "
    "M.folio`\n"
    "  --prompt-ids      comma-separated token ids; repeat for more prompts\n"
    "  --max-new-tokens  tokens to generate per prompt (default 16)\n"
    "  --temperature     0 = greedy (default); > 0 samples from "
    "softmax(logits / T)\n"
    "  --top-k           with T > 0: keep the K most likely tokens (0 = all)\n"
    "  --top-p           with T > 0: keep the smallest set reaching "
    "probability P (1 = all)\n"
    "  --seed            with T > 0: same seed, same tokens (default: "
    "random); every prompt uses it\n"
    "  --dump-logits     write the logits each new token was chosen from, "
    "float32 [prompts, N, vocab]\n"
    "  --json            print {\"outputs\":[{\"prompt_ids\":[..],"
    "\"token_ids\":[..]}, ..]}\n"
    "  --weight-dtype    how folioc stores linear weights when compiling an "
    ".onnx: f32 (default), bf16, f16, int8, fp8_e4m3, int4 "
    "(docs/cpu-kernels.md); a .folio plan runs as it was compiled\n"
    "  --threads         kernel threads, oneDNN's OpenMP team included "
    "(default: FOLIO_NUM_THREADS or every core)\n"
    "  --block-size      KV block size when compiling an .onnx (default 16, "
    "or 32 for int2 caches); with a .folio, what it was compiled with\n"
    "  --kv-cache-dtype  KV-cache storage when compiling an .onnx: auto "
    "(default: int8 on the CPU), f32, f16, bf16, fp8_e4m3, fp8_e5m2, int8, "
    "int4, int2; with a .folio plan it must be what the plan was compiled "
    "with\n"
    "  --no-verify-weights  with a .folio plan: skip hashing the weights "
    "against the file's checksum (the metadata is always checked); a "
    "corrupt weight then gives wrong tokens, not an error\n"
    "  --device          cpu (default), cuda (the GPU; without a CUDA "
    "driver or device, the CPU with a note saying why) or auto (the GPU "
    "when it can run the plan, else the CPU with a note)\n"
    "  --enforce-eager   with --device cuda: launch every kernel every step "
    "(decode steps otherwise replay a CUDA graph per batch size and context "
    "range); the CPU always runs this way\n"
    "  --print-kernels   list the plan's kernels, and the CUDA kernels "
    "folioc --target=sm_XX embedded with their registers, spills and shared "
    "memory, then exit\n"
    "  --max-model-len   longest context accepted (default: the model's "
    "positions); never more than the context its attention masks were "
    "proven causal up to\n";

namespace {

bool parseDouble(const std::string &s, double &out) {
  char *end = nullptr;
  errno = 0;
  out = std::strtod(s.c_str(), &end);
  return !s.empty() && *end == '\0' && errno == 0 && std::isfinite(out);
}

bool parseInt(const std::string &s, int64_t &out) {
  if (s.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0')
    return false;
  out = v;
  return true;
}

Expected<std::vector<TokenId>> parseIds(const std::string &s) {
  std::vector<TokenId> ids;
  size_t start = 0;
  while (true) {
    size_t comma = s.find(',', start);
    std::string item = s.substr(
        start, comma == std::string::npos ? std::string::npos : comma - start);
    int64_t v;
    if (!parseInt(item, v) || v < 0 || v > INT32_MAX)
      return Status::invalidArgument(
          "--prompt-ids: '" + item +
          "' is not a token id (expected comma-separated non-negative "
          "integers, e.g. 1,2,3)");
    ids.push_back(TokenId(v));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return ids;
}

} // namespace

Expected<Options> parseOptions(int argc, char **argv) {
  Options o;
  bool sawModel = false;
  bool sawSampling = false;
  // Flags that run the model: --print-kernels lists its kernels instead.
  static const char *const kRunFlags[] = {
      "--prompt-ids", "--max-new-tokens", "--temperature",   "--top-k",
      "--top-p",      "--seed",           "--threads",       "--dump-logits",
      "--json",       "--device",         "--enforce-eager", "--max-model-len"};
  std::string runFlag;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool hasInline = false;
    if (arg.rfind("--", 0) == 0) {
      size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        hasInline = true;
      }
    }
    auto needValue = [&]() -> Status {
      if (hasInline)
        return Status::ok();
      if (i + 1 >= argc)
        return Status::invalidArgument(arg + " needs a value");
      value = argv[++i];
      return Status::ok();
    };
    auto intFlag = [&](int64_t &out, int64_t min,
                       int64_t max =
                           std::numeric_limits<int64_t>::max()) -> Status {
      if (Status s = needValue(); !s)
        return s;
      if (!parseInt(value, out) || out < min || out > max)
        return Status::invalidArgument(
            arg + ": '" + value + "' is not an integer from " +
            std::to_string(min) + " to " + std::to_string(max));
      return Status::ok();
    };
    // A flag without a value must not be given one: --json=0 would
    // otherwise mean --json.
    auto noValue = [&]() -> Status {
      if (hasInline)
        return Status::invalidArgument(arg + " takes no value (got '" + arg +
                                       "=" + value + "')");
      return Status::ok();
    };
    for (const char *flag : kRunFlags)
      if (arg == flag && runFlag.empty())
        runFlag = arg;
    Status s;
    if (arg == "--help" || arg == "-h") {
      if (Status v = noValue(); !v)
        return v;
      o.help = true;
      return o;
    } else if (arg == "--json") {
      s = noValue();
      o.json = true;
    } else if (arg == "--no-verify-weights") {
      s = noValue();
      o.verifyWeights = false;
    } else if (arg == "--enforce-eager") {
      s = noValue();
      o.enforceEager = true;
    } else if (arg == "--print-kernels") {
      s = noValue();
      o.printKernels = true;
    } else if (arg == "--device") {
      if (s = needValue(); s)
        s = tools::parseDeviceFlag(value, o.device);
    } else if (arg == "--model") {
      s = needValue();
      o.model = value;
      sawModel = true;
    } else if (arg == "--prompt-ids") {
      if (s = needValue(); s) {
        Expected<std::vector<TokenId>> ids = parseIds(value);
        if (!ids)
          return ids.status();
        o.prompts.push_back(std::move(*ids));
      }
    } else if (arg == "--max-new-tokens") {
      // Positions are i32 in the serving contract.
      s = intFlag(o.maxNewTokens, 1, std::numeric_limits<int32_t>::max());
    } else if (arg == "--block-size") {
      s = intFlag(o.blockSize, 1);
    } else if (arg == "--kv-cache-dtype") {
      if (s = needValue(); s && !parseKVCacheDType(value))
        return Status::invalidArgument("--kv-cache-dtype: '" + value +
                                       "' is not one of " +
                                       supportedKVCacheDTypes());
      o.kvCacheDtype = value;
    } else if (arg == "--max-model-len") {
      s = intFlag(o.maxModelLen, 1, std::numeric_limits<int32_t>::max());
    } else if (arg == "--temperature") {
      if (s = needValue();
          s && (!parseDouble(value, o.temperature) || o.temperature < 0))
        return Status::invalidArgument("--temperature: '" + value +
                                       "' is not a number >= 0");
    } else if (arg == "--top-k") {
      s = intFlag(o.topK, 0);
      sawSampling = true;
    } else if (arg == "--top-p") {
      if (s = needValue();
          s && (!parseDouble(value, o.topP) || !(o.topP > 0 && o.topP <= 1)))
        return Status::invalidArgument("--top-p: '" + value +
                                       "' is not a number in (0, 1]");
      sawSampling = true;
    } else if (arg == "--seed") {
      int64_t seed = 0;
      // Seeds are u64 in the sampler; the flag takes the non-negative
      // int64 range, which is plenty for reproducibility.
      s = intFlag(seed, 0);
      o.seed = uint64_t(seed);
      sawSampling = true;
    } else if (arg == "--threads") {
      s = intFlag(o.threads, 1, 1024);
    } else if (arg == "--dump-logits") {
      if (s = needValue(); s && value.empty())
        return Status::invalidArgument("--dump-logits needs a file name");
      o.dumpLogits = value;
    } else if (arg == "--weight-dtype") {
      if (s = needValue(); s) {
        if (!isWeightDtypeName(value))
          return Status::invalidArgument("--weight-dtype: '" + value +
                                         "' is not one of " +
                                         kWeightDtypeNames);
        o.weightDtype = value;
        o.weightDtypeGiven = true;
      }
    } else {
      return Status::invalidArgument("unknown argument '" +
                                     std::string(argv[i]) + "' (see --help)");
    }
    if (!s)
      return s;
  }
  if (!sawModel || o.model.empty())
    return Status::invalidArgument(
        "--model is required (an .onnx or .folio file)");
  if (o.printKernels && !runFlag.empty())
    return Status::invalidArgument(
        runFlag + " runs the model, and --print-kernels lists its kernels "
                  "instead (give one or the other)");
  if (o.prompts.empty() && !o.printKernels)
    return Status::invalidArgument("at least one --prompt-ids is required");
  // Silently ignoring them would look like a broken seed or top-k.
  if (sawSampling && o.temperature == 0)
    return Status::invalidArgument(
        "--top-k, --top-p and --seed need --temperature > 0 (temperature 0 "
        "is greedy decoding)");
  return o;
}

} // namespace folio::run
