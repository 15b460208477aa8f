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

#include "compiler/Target/PlanKVCache.h"
#include "runtime/Core/ServingEngine.h"
#include "runtime/Server/TextStream.h"
#include "runtime/Tokenizer/Tokenizer.h"
#include "tools/common/LoadModel.h"

#include <algorithm>
#include <cerrno>
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
    "  --top-k K                   keep the K most likely tokens (default 0: "
    "all)\n"
    "  --min-p P                   drop tokens below P x the most likely "
    "(default 0)\n"
    "  --repetition-penalty R      > 1 discourages seen tokens (default 1)\n"
    "  --presence-penalty P        [-2, 2], once per generated token (default "
    "0)\n"
    "  --frequency-penalty P       [-2, 2], per occurrence (default 0)\n"
    "  --seed S                    sampling seed (default 0); prompt i's "
    "sample j uses S + i * n + j\n"
    "  --n N                       samples per prompt (default 1)\n"
    "  --stop TEXT                 end a sample at TEXT (matched across "
    "tokens, not printed); repeatable\n"
    "  --stop-token-ids L          comma-separated token ids that end a "
    "sample\n"
    "  --ignore-eos                keep going past the tokenizer's "
    "end-of-sequence token\n"
    "  --logprobs N                print each new token's logprob and its N "
    "most likely alternatives (0-20)\n";

const char *const kKVDtype =
    "KV-cache storage when compiling an .onnx: auto (default: int8 on the "
    "CPU), f32, f16, bf16, fp8_e4m3, fp8_e5m2, int8, int4, int2; with a "
    ".folio plan it must be what the plan was compiled with";

/// folio-generate's engine defaults: a few prompts, not a server's load.
tools::EngineFlags defaultEngineFlags() {
  tools::EngineFlags flags;
  flags.maxNumSeqs = 8;
  flags.maxNumBatchedTokens = 256;
  flags.prefixCaching = false;
  return flags;
}

struct Options {
  std::string model, tokenizer;
  std::vector<std::string> prompts;
  size_t maxNewTokens = 48;
  float temperature = 0.7f, topP = 0.95f, minP = 0.0f;
  float repetitionPenalty = 1.0f, presencePenalty = 0.0f,
        frequencyPenalty = 0.0f;
  int32_t topK = 0, n = 1;
  std::optional<int32_t> logprobs;
  std::vector<std::string> stop;
  std::vector<TokenId> stopTokenIds;
  bool ignoreEos = false;
  uint64_t seed = 0;
  bool topPGiven = false, seedGiven = false;
  bool help = false;
  tools::EngineFlags engine = defaultEngineFlags();
};

Status parse(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      o.help = true;
      return Status::ok();
    }
    bool handled = false;
    if (Status s = o.engine.parse(argc, argv, i, handled); !s)
      return s;
    if (handled)
      continue;
    if (arg == "--ignore-eos") {
      o.ignoreEos = true;
      continue;
    }
    if (i + 1 >= argc)
      return Status::invalidArgument(arg + " needs a value");
    std::string value = argv[++i];
    char *end = nullptr;
    // Digits only, and no wrap past the type: strto* would skip blanks,
    // take a sign and clamp an overflow to the largest value.
    auto digits = [&](unsigned long long &out) {
      if (value.empty() ||
          value.find_first_not_of("0123456789") != std::string::npos)
        return false;
      errno = 0;
      out = std::strtoull(value.c_str(), &end, 10);
      return errno != ERANGE;
    };
    auto count = [&](size_t &out) {
      unsigned long long v = 0;
      if (!digits(v) || v < 1 || v > INT64_MAX)
        return Status::invalidArgument(arg + ": '" + value +
                                       "' is not an integer from 1 to " +
                                       std::to_string(INT64_MAX));
      out = size_t(v);
      return Status::ok();
    };
    auto real = [&](float &out, float lo, float hi) {
      double v = std::strtod(value.c_str(), &end);
      if (value.empty() || *end || !(v >= lo && v <= hi))
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
    else if (arg == "--prompt")
      o.prompts.push_back(value);
    else if (arg == "--max-new-tokens")
      s = count(o.maxNewTokens);
    else if (arg == "--temperature")
      s = real(o.temperature, 0, 100);
    else if (arg == "--top-p") {
      s = real(o.topP, 1e-6f, 1);
      o.topPGiven = true;
    } else if (arg == "--min-p")
      s = real(o.minP, 0, 1);
    else if (arg == "--repetition-penalty")
      s = real(o.repetitionPenalty, 1e-6f, 100);
    else if (arg == "--presence-penalty")
      s = real(o.presencePenalty, -2, 2);
    else if (arg == "--frequency-penalty")
      s = real(o.frequencyPenalty, -2, 2);
    else if (arg == "--top-k" || arg == "--n" || arg == "--logprobs") {
      long long v = std::strtoll(value.c_str(), &end, 10);
      long long lo = arg == "--n" ? 1 : arg == "--top-k" ? -1 : 0;
      long long hi = arg == "--n" ? 64 : arg == "--top-k" ? INT32_MAX : 20;
      if (value.empty() || *end || v < lo || v > hi)
        return Status::invalidArgument(
            arg + ": '" + value + "' is not an integer in [" +
            std::to_string(lo) + ", " + std::to_string(hi) + "]");
      if (arg == "--top-k")
        o.topK = int32_t(v);
      else if (arg == "--n")
        o.n = int32_t(v);
      else
        o.logprobs = int32_t(v);
    } else if (arg == "--stop") {
      if (value.empty())
        return Status::invalidArgument("--stop needs a non-empty string");
      o.stop.push_back(value);
    } else if (arg == "--stop-token-ids") {
      size_t start = 0;
      while (true) {
        size_t comma = value.find(',', start);
        std::string item = value.substr(
            start, comma == std::string::npos ? comma : comma - start);
        long long v = std::strtoll(item.c_str(), &end, 10);
        if (item.empty() || *end || v < 0 || v > INT32_MAX)
          return Status::invalidArgument("--stop-token-ids: '" + item +
                                         "' is not a token id");
        o.stopTokenIds.push_back(TokenId(v));
        if (comma == std::string::npos)
          break;
        start = comma + 1;
      }
    } else if (arg == "--seed") {
      unsigned long long seed = 0;
      if (!digits(seed))
        return Status::invalidArgument("--seed: '" + value +
                                       "' is not an integer from 0 to " +
                                       std::to_string(UINT64_MAX));
      o.seed = seed;
      o.seedGiven = true;
    } else
      return Status::invalidArgument("unknown argument '" + arg + "'");
    if (!s)
      return s;
  }
  if (o.model.empty() || o.tokenizer.empty() || o.prompts.empty())
    return Status::invalidArgument(
        "--model, --tokenizer and at least one --prompt are required");
  return o.engine.finish();
}

int fail(const Status &s) {
  std::cerr << "folio-generate: error: " << s.message() << "\n";
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  Status parsed = parse(argc, argv, o);
  if (o.help) {
    std::cout << kUsage << o.engine.usage(kKVDtype);
    return 0;
  }
  if (Status s = parsed; !s) {
    std::cerr << "folio-generate: error: " << s.message() << "\n"
              << kUsage << o.engine.usage(kKVDtype);
    return 2;
  }
  Expected<Tokenizer> tok = Tokenizer::fromFile(o.tokenizer);
  if (!tok)
    return fail(tok.status());
  Expected<std::shared_ptr<const plan::Plan>> plan =
      tools::loadModelPlan(o.model, o.engine);
  if (!plan)
    return fail(plan.status());
  Expected<std::shared_ptr<const plan::Plan>> draftPlan = tools::loadDraftPlan(
      o.engine.speculative, tools::modelLoadOptions(o.engine));
  if (!draftPlan)
    return fail(draftPlan.status());
  // The end-of-sequence token: the tokenizer's one special token (GPT-2's
  // <|endoftext|>, the bundled model's id 0); with several there is no
  // telling which ends a sequence, and generation runs to its length.
  std::optional<TokenId> eos;
  size_t numSpecial = 0;
  for (const AddedToken &t : tok->addedTokens())
    if (t.special && numSpecial++ == 0)
      eos = t.id;
  if (numSpecial != 1)
    eos.reset();
  Expected<tools::EngineSetup> setup = tools::buildEngine(
      *plan, o.engine, eos, /*seed=*/0, std::move(*draftPlan));
  if (!setup)
    return fail(setup.status());
  std::unique_ptr<core::ServingEngine> &engine = setup->engine;
  const KVCacheConfig &kv = setup->kv;

  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  auto since = [&] {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  std::map<std::string, std::vector<TokenId>> outputs;
  std::map<std::string, std::vector<TokenLogprobs>> logprobs;
  std::map<std::string, server::TextStream> texts;
  std::map<std::string, double> firstToken;
  for (size_t i = 0; i < o.prompts.size(); ++i) {
    Expected<std::vector<TokenId>> ids = tok->encode(o.prompts[i]);
    if (!ids)
      return fail(ids.status());
    NewRequest r;
    r.requestId = std::to_string(i);
    r.promptTokenIds = *ids;
    SamplingParams &sp = r.samplingParams;
    sp.temperature = o.temperature;
    if (o.temperature > 0) {
      sp.topP = o.topP;
      sp.topK = o.topK;
      sp.minP = o.minP;
      sp.seed = o.seed + i * size_t(o.n);
    } else if (o.topK != 0 || o.minP != 0 || o.topPGiven || o.seedGiven) {
      return fail(Status::invalidArgument(
          "--top-k, --top-p, --min-p and --seed shape sampling; with "
          "--temperature 0 (greedy) they would be ignored"));
    }
    sp.repetitionPenalty = o.repetitionPenalty;
    sp.presencePenalty = o.presencePenalty;
    sp.frequencyPenalty = o.frequencyPenalty;
    sp.n = o.n;
    sp.logprobs = o.logprobs;
    sp.stopTokenIds = o.stopTokenIds;
    sp.ignoreEos = o.ignoreEos;
    sp.maxTokens = o.maxNewTokens;
    if (Status s = engine->addRequest(r); !s)
      return fail(Status::invalidArgument("prompt " + std::to_string(i) + ": " +
                                          s.message()));
  }

  bool bold = isatty(STDOUT_FILENO);
  const Scheduler &scheduler = engine->getScheduler();
  const BlockPool &pool = scheduler.kvCache().pool();
  double utilizationSum = 0, utilizationPeak = 0;
  size_t samples = 0, tokens = 0, failed = 0;
  // Prints a finished sample: its prompt, its text, its logprobs.
  auto report = [&](const std::string &id) {
    size_t hash = id.find('#');
    size_t i = std::stoul(id.substr(0, hash));
    std::cout << "=== prompt " << i
              << (hash == std::string::npos ? ""
                                            : ", sample " + id.substr(hash + 1))
              << "\n";
    server::TextStream &text = texts.at(id);
    Expected<std::string> rest = text.flush();
    // The continuation in bold on a terminal, plain in logs.
    std::cout << o.prompts[i] << (bold ? "\033[1m" : "")
              << (rest ? text.text() : "<" + rest.status().message() + ">")
              << (bold ? "\033[0m" : "") << "\n";
    for (const TokenLogprobs &lp : logprobs[id]) {
      std::printf("  logprob %.4f; top", lp.logprob);
      for (const auto &[token, value] : lp.top)
        std::printf(" %d:%.4f", token, value);
      std::printf("\n");
    }
  };
  while (engine->hasUnfinishedRequests()) {
    Expected<std::vector<RequestOutput>> step = engine->step();
    if (!step)
      return fail(step.status());
    if (step->empty() && scheduler.numRunning() == 0)
      return fail(Status::resourceExhausted(
          "the KV cache cannot hold the prompts; raise --num-blocks"));
    if (double u = engine->kvUtilization(); u > 0) {
      utilizationSum += u;
      utilizationPeak = std::max(utilizationPeak, u);
      ++samples;
    }
    for (const RequestOutput &out : *step) {
      auto &seq = outputs[out.requestId];
      if (seq.empty() && !out.newTokenIds.empty())
        firstToken[out.requestId] = since();
      server::TextStream &text =
          texts.try_emplace(out.requestId, *tok, o.stop).first->second;
      bool stopped = text.stopped();
      for (size_t t = 0; t < out.newTokenIds.size() && !stopped; ++t) {
        seq.push_back(out.newTokenIds[t]);
        if (t < out.newLogprobs.size())
          logprobs[out.requestId].push_back(out.newLogprobs[t]);
        ++tokens;
        if (Expected<std::string> piece = text.append(out.newTokenIds[t]);
            !piece)
          return fail(piece.status());
        stopped = text.stopped();
      }
      if (out.finishReason == FinishReason::Error) {
        // One request failed (e.g. non-finite logits); the others go on.
        std::cout << "=== prompt " << out.requestId << "\n";
        std::cerr << "folio-generate: error: prompt " << out.requestId << ": "
                  << out.error << "\n";
        ++failed;
        continue;
      }
      // A stop string ends the sample: its blocks go back now.
      if (stopped && !out.finished)
        if (Status s = engine->abortRequest(out.requestId); !s)
          return fail(s);
      if (stopped || out.finished)
        report(out.requestId);
    }
  }
  double seconds = since();
  std::vector<double> ttft;
  for (auto &[id, t] : firstToken)
    ttft.push_back(t * 1e3);
  std::sort(ttft.begin(), ttft.end());
  std::printf("\n%zu prompts (%zu samples), %zu new tokens in %.2f s: %.1f "
              "tokens/s; time "
              "to first token median %.0f ms; KV cache utilization mean "
              "%.0f%%, peak %.0f%% (%zu blocks of %zu tokens); %llu "
              "preemptions\n",
              o.prompts.size(), o.prompts.size() * size_t(o.n), tokens, seconds,
              seconds > 0 ? double(tokens) / seconds : 0.0,
              ttft.empty() ? 0.0 : ttft[ttft.size() / 2],
              samples ? 100.0 * utilizationSum / double(samples) : 0.0,
              100.0 * utilizationPeak, pool.numUsableBlocks(),
              size_t(kv.blockSize),
              (unsigned long long)scheduler.numPreemptions());
  if (o.engine.prefixCaching) {
    const KVCacheManager &kvm = scheduler.kvCache();
    std::printf("prefix cache: %llu of %llu prompt tokens looked up were "
                "cached (%.0f%%)\n",
                (unsigned long long)kvm.numPrefixHitTokens(),
                (unsigned long long)kvm.numPrefixQueryTokens(),
                kvm.numPrefixQueryTokens()
                    ? 100.0 * double(kvm.numPrefixHitTokens()) /
                          double(kvm.numPrefixQueryTokens())
                    : 0.0);
  }
  exec::KVCacheLayout layout = engine->kvCacheLayout();
  if (layout.blockSize > 0 && layout.bytesPerBlock16 > 0) {
    double perToken = double(layout.bytesPerBlock) / double(layout.blockSize);
    double saved =
        1.0 - double(layout.bytesPerBlock) / double(layout.bytesPerBlock16);
    std::printf("KV cache %s: %.0f bytes per token (all layers, K and V, "
                "scales included), %.0f%% %s than 16 bits\n",
                folio::planKVCacheDType(**plan).c_str(), perToken,
                100.0 * std::fabs(saved), saved >= 0 ? "less" : "more");
  }
  if (o.engine.speculative.enabled()) {
    const core::SpeculativeStats &st = engine->speculativeStats();
    std::printf("speculative decoding (%s, k <= %lld%s): %llu of %llu drafts "
                "kept (%.0f%%), %.2f tokens per verifying step; %llu steps "
                "speculated (mean k %.1f), %llu judged not to pay\n",
                o.engine.speculative.method.c_str(),
                (long long)o.engine.speculative.numTokens[0],
                o.engine.speculative.adaptive ? ", adaptive" : "",
                (unsigned long long)st.numAccepted,
                (unsigned long long)st.numProposed, 100.0 * st.acceptanceRate(),
                st.meanAcceptedLength(), (unsigned long long)st.numSpecSteps,
                st.numSpecSteps ? double(st.sumK) / double(st.numSpecSteps)
                                : 0.0,
                (unsigned long long)st.numOffSteps);
    if (int64_t bytes = engine->proposer()->kvCacheBytes())
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
