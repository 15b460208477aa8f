//===- folio-generate.cpp - Text in, text out, through the serving engine -===//
//
// folio-generate --model M.onnx|M.folio --tokenizer tokenizer.json
//                --prompt TEXT [--prompt TEXT ...] [--max-new-tokens N]
//                [--temperature T] [--top-p P] [--seed S] [--max-num-seqs N]
//                [--max-num-batched-tokens N] [--num-blocks N]
//                [--speculative-model D | --speculative-method ngram]
//                [--num-speculative-tokens K]
//
// Offline serving: every prompt becomes a request of the continuous-
// batching engine (scheduler, paged KV, chunked prefill, preemption); the
// continuations are printed as they finish, then a summary: throughput,
// time to first token, KV-cache utilization and, when speculating, how
// many drafts were kept.
//
//===----------------------------------------------------------------------===//

#include "compiler/Plan/LowerToPlan.h"
#include "compiler/Target/Target.h"
#include "runtime/Core/ServingEngine.h"
#include "runtime/Tokenizer/Tokenizer.h"
#include "tools/common/SpeculativeFlags.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>

#include <unistd.h>

using namespace folio;

namespace {

const char *const kUsage =
    "usage: folio-generate --model M.onnx|M.folio --tokenizer tokenizer.json\n"
    "                      --prompt TEXT [--prompt TEXT ...] [options]\n"
    "  --max-new-tokens N          tokens to generate per prompt (default "
    "48)\n"
    "  --temperature T             0 = greedy (default 0.7)\n"
    "  --top-p P                   nucleus sampling (default 0.95)\n"
    "  --seed S                    sampling seed (default 0)\n"
    "  --max-num-seqs N            running requests at most (default 8)\n"
    "  --max-num-batched-tokens N  tokens per step (default 256)\n"
    "  --num-blocks N              KV blocks (default: 4 max-length "
    "sequences)\n"
    "  --kv-cache-dtype D          KV-cache storage when compiling an .onnx: "
    "auto (default: int8 on the CPU), f32, f16, bf16, fp8_e4m3, fp8_e5m2, "
    "int8, int4, int2; with a .folio plan it must be what the plan was "
    "compiled "
    "with\n"
    "  --no-verify-weights         with a .folio plan: skip hashing the "
    "weights against the file's checksum (the metadata is always checked); "
    "a corrupt weight then gives wrong text, not an error\n"
    "Speculative decoding (off by default):\n";

struct Options {
  std::string model, tokenizer;
  std::string kvCacheDtype = "auto";
  std::vector<std::string> prompts;
  size_t maxNewTokens = 48, maxNumSeqs = 8, maxNumBatchedTokens = 256;
  size_t numBlocks = 0;
  float temperature = 0.7f, topP = 0.95f;
  uint64_t seed = 0;
  bool verifyWeights = true;
  tools::SpeculativeFlags speculative;
};

Status parse(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--no-verify-weights") {
      o.verifyWeights = false;
      continue;
    }
    if (tools::SpeculativeFlags::isFlag(arg)) {
      bool consumed = false;
      if (Status s = o.speculative.parse(
              arg, i + 1 < argc ? argv[i + 1] : nullptr, consumed,
              /*allowList=*/false);
          !s)
        return s;
      i += consumed;
      continue;
    }
    if (i + 1 >= argc)
      return Status::invalidArgument(arg + " needs a value");
    std::string value = argv[++i];
    char *end = nullptr;
    auto count = [&](size_t &out) {
      long long v = std::strtoll(value.c_str(), &end, 10);
      if (value.empty() || *end || v < 1)
        return Status::invalidArgument(arg + ": '" + value +
                                       "' is not an integer >= 1");
      out = size_t(v);
      return Status::ok();
    };
    auto real = [&](float &out, float lo, float hi) {
      double v = std::strtod(value.c_str(), &end);
      if (value.empty() || *end || v < lo || v > hi)
        return Status::invalidArgument(
            arg + ": '" + value + "' is not a number in [" +
            std::to_string(lo) + ", " + std::to_string(hi) + "]");
      out = float(v);
      return Status::ok();
    };
    Status s;
    if (arg == "--model")
      o.model = value;
    else if (arg == "--tokenizer")
      o.tokenizer = value;
    else if (arg == "--kv-cache-dtype") {
      if (!parseKVCacheDType(value))
        return Status::invalidArgument("--kv-cache-dtype: '" + value +
                                       "' is not one of " +
                                       supportedKVCacheDTypes());
      o.kvCacheDtype = value;
    } else if (arg == "--prompt")
      o.prompts.push_back(value);
    else if (arg == "--max-new-tokens")
      s = count(o.maxNewTokens);
    else if (arg == "--max-num-seqs")
      s = count(o.maxNumSeqs);
    else if (arg == "--max-num-batched-tokens")
      s = count(o.maxNumBatchedTokens);
    else if (arg == "--num-blocks")
      s = count(o.numBlocks);
    else if (arg == "--temperature")
      s = real(o.temperature, 0, 100);
    else if (arg == "--top-p")
      s = real(o.topP, 1e-6f, 1);
    else if (arg == "--seed") {
      unsigned long long seed = std::strtoull(value.c_str(), &end, 10);
      if (value.empty() || *end || value[0] == '-')
        return Status::invalidArgument("--seed: '" + value +
                                       "' is not an integer >= 0");
      o.seed = seed;
    } else
      return Status::invalidArgument("unknown argument '" + arg + "'");
    if (!s)
      return s;
  }
  if (o.model.empty() || o.tokenizer.empty() || o.prompts.empty())
    return Status::invalidArgument(
        "--model, --tokenizer and at least one --prompt are required");
  return o.speculative.finish();
}

int fail(const Status &s) {
  std::cerr << "folio-generate: error: " << s.message() << "\n";
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  if (argc == 2 &&
      (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::cout << kUsage << tools::SpeculativeFlags::usage();
    return 0;
  }
  if (Status s = parse(argc, argv, o); !s) {
    std::cerr << "folio-generate: error: " << s.message() << "\n"
              << kUsage << tools::SpeculativeFlags::usage();
    return 2;
  }
  Expected<Tokenizer> tok = Tokenizer::fromFile(o.tokenizer);
  if (!tok)
    return fail(tok.status());
  mlir::folio::CompileToPlanOptions copts;
  copts.kvCacheDtype = o.kvCacheDtype;
  copts.verifyWeights = o.verifyWeights;
  Expected<plan::Plan> loaded = mlir::folio::loadOrCompilePlan(o.model, copts);
  if (!loaded)
    return fail(loaded.status());
  auto plan = std::make_shared<const plan::Plan>(std::move(*loaded));
  int64_t maxPositions = plan->configValue("max_positions", 0);
  size_t maxModelLen = maxPositions > 0 ? size_t(maxPositions) : 2048;
  // At most the length the attention masks were proven causal up to.
  if (int64_t maxContext = plan->configValue("max_context", 0))
    maxModelLen = std::min(maxModelLen, size_t(maxContext));
  int64_t blockSize = plan->configValue("block_size", 16);

  SchedulerConfig config;
  config.maxModelLen = maxModelLen;
  config.maxNumSeqs = o.maxNumSeqs;
  config.maxNumBatchedTokens = o.maxNumBatchedTokens;
  config.vocabSize = size_t(plan->configValue("vocab", 0));
  KVCacheConfig kv;
  kv.blockSize = size_t(blockSize);
  kv.numBlocks =
      o.numBlocks ? o.numBlocks
                  : 4 * ((maxModelLen + kv.blockSize - 1) / kv.blockSize) + 1;
  Expected<std::shared_ptr<const plan::Plan>> draftPlan =
      tools::loadDraftPlan(o.speculative, copts);
  if (!draftPlan)
    return fail(draftPlan.status());
  Expected<core::SpeculativeConfig> speculative = tools::makeSpeculativeConfig(
      o.speculative,
      o.speculative.enabled() ? size_t(o.speculative.numTokens[0]) : 0,
      *draftPlan, int64_t(config.vocabSize), int64_t(maxModelLen),
      int64_t(kv.numBlocks - 1) * int64_t(kv.blockSize));
  if (!speculative)
    return fail(speculative.status());
  auto engine = core::ServingEngine::create(
      plan, exec::createCPUExecutor(), config, kv, std::move(*speculative));
  if (!engine)
    return fail(engine.status());

  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  auto since = [&] {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  std::map<std::string, std::vector<TokenId>> outputs;
  std::map<std::string, double> firstToken;
  for (size_t i = 0; i < o.prompts.size(); ++i) {
    Expected<std::vector<TokenId>> ids = tok->encode(o.prompts[i]);
    if (!ids)
      return fail(ids.status());
    NewRequest r;
    r.requestId = std::to_string(i);
    r.promptTokenIds = *ids;
    r.samplingParams.temperature = o.temperature;
    if (o.temperature > 0) {
      r.samplingParams.topP = o.topP;
      r.samplingParams.seed = o.seed + i;
    }
    r.samplingParams.maxTokens = o.maxNewTokens;
    if (Status s = (*engine)->addRequest(r); !s)
      return fail(Status::invalidArgument("prompt " + std::to_string(i) + ": " +
                                          s.message()));
  }

  bool bold = isatty(STDOUT_FILENO);
  const Scheduler &scheduler = (*engine)->getScheduler();
  const BlockPool &pool = scheduler.kvCache().pool();
  double utilizationSum = 0, utilizationPeak = 0;
  size_t samples = 0, tokens = 0, failed = 0;
  while ((*engine)->hasUnfinishedRequests()) {
    Expected<std::vector<RequestOutput>> step = (*engine)->step();
    if (!step)
      return fail(step.status());
    if (step->empty() && scheduler.numRunning() == 0)
      return fail(Status::resourceExhausted(
          "the KV cache cannot hold the prompts; raise --num-blocks"));
    if (double u = (*engine)->kvUtilization(); u > 0) {
      utilizationSum += u;
      utilizationPeak = std::max(utilizationPeak, u);
      ++samples;
    }
    for (const RequestOutput &out : *step) {
      auto &seq = outputs[out.requestId];
      if (seq.empty() && !out.newTokenIds.empty())
        firstToken[out.requestId] = since();
      seq.insert(seq.end(), out.newTokenIds.begin(), out.newTokenIds.end());
      tokens += out.newTokenIds.size();
      if (!out.finished)
        continue;
      size_t i = std::stoul(out.requestId);
      if (out.finishReason == FinishReason::Error) {
        // One request failed (e.g. non-finite logits); the others go on.
        std::cout << "=== prompt " << i << "\n";
        std::cerr << "folio-generate: error: prompt " << i << ": " << out.error
                  << "\n";
        ++failed;
        continue;
      }
      Expected<std::string> text = tok->decode(seq, /*skipSpecialTokens=*/true);
      // The continuation in bold on a terminal, plain in logs.
      std::cout << "=== prompt " << i << "\n"
                << o.prompts[i] << (bold ? "\033[1m" : "")
                << (text ? *text : "<" + text.status().message() + ">")
                << (bold ? "\033[0m" : "") << "\n";
    }
  }
  double seconds = since();
  std::vector<double> ttft;
  for (auto &[id, t] : firstToken)
    ttft.push_back(t * 1e3);
  std::sort(ttft.begin(), ttft.end());
  std::printf("\n%zu prompts, %zu new tokens in %.2f s: %.1f tokens/s; time "
              "to first token median %.0f ms; KV cache utilization mean "
              "%.0f%%, peak %.0f%% (%zu blocks of %zu tokens); %llu "
              "preemptions\n",
              o.prompts.size(), tokens, seconds,
              seconds > 0 ? double(tokens) / seconds : 0.0,
              ttft.empty() ? 0.0 : ttft[ttft.size() / 2],
              samples ? 100.0 * utilizationSum / double(samples) : 0.0,
              100.0 * utilizationPeak, pool.numUsableBlocks(),
              size_t(kv.blockSize),
              (unsigned long long)scheduler.numPreemptions());
  exec::KVCacheLayout layout = (*engine)->kvCacheLayout();
  if (layout.blockSize > 0 && layout.bytesPerBlock16 > 0) {
    double perToken = double(layout.bytesPerBlock) / double(layout.blockSize);
    double saved =
        1.0 - double(layout.bytesPerBlock) / double(layout.bytesPerBlock16);
    std::printf("KV cache %s: %.0f bytes per token (all layers, K and V, "
                "scales included), %.0f%% %s than 16 bits\n",
                mlir::folio::planKVCacheDType(*plan).c_str(), perToken,
                100.0 * std::fabs(saved), saved >= 0 ? "less" : "more");
  }
  if (o.speculative.enabled()) {
    const core::SpeculativeStats &st = (*engine)->speculativeStats();
    std::printf(
        "speculative decoding (%s, k <= %lld%s): %llu of %llu drafts "
        "kept (%.0f%%), %.2f tokens per verifying step; %llu steps "
        "speculated (mean k %.1f), %llu judged not to pay\n",
        o.speculative.method.c_str(), (long long)o.speculative.numTokens[0],
        o.speculative.adaptive ? ", adaptive" : "",
        (unsigned long long)st.numAccepted, (unsigned long long)st.numProposed,
        100.0 * st.acceptanceRate(), st.meanAcceptedLength(),
        (unsigned long long)st.numSpecSteps,
        st.numSpecSteps ? double(st.sumK) / double(st.numSpecSteps) : 0.0,
        (unsigned long long)st.numOffSteps);
    if (int64_t bytes = (*engine)->proposer()->kvCacheBytes())
      std::printf("draft KV cache: %.1f MiB, for as many tokens as the "
                  "target's %.1f MiB\n",
                  double(bytes) / (1 << 20),
                  double(layout.bytesPerBlock) * double(kv.numBlocks) /
                      (1 << 20));
  }
  if (failed)
    return fail(Status::internal(std::to_string(failed) + " of " +
                                 std::to_string(o.prompts.size()) +
                                 " prompts failed"));
  return 0;
}
