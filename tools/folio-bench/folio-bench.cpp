//===- folio-bench.cpp - Performance measurements as JSON -----------------===//
//
// folio-bench --mode=roofline --model M.onnx|M.folio [--threads 1,2]
//             [--weight-dtype bf16,f32] [--repeats 3] [--prefill-tokens 512]
//             [--decode-tokens 32] [--bandwidth-mib 1024] [--gemm-sizes
//             2048,4096]
// folio-bench --model M --workload sharegpt-like --num-requests N --seed S
//             --max-model-len L --policy continuous,static [--json] ...
// folio-bench --mode=kv-quant --model M.onnx --eval-data W.i32 [...]
// folio-bench --mode=spec --model T --speculative-model D
//             --num-speculative-tokens 1,2,4,6 --batch-sizes 1,4,16 [...]
// folio-bench --mode=serve --url http://127.0.0.1:PORT --workload
//             sharegpt-like [--model M (in-process baseline)] [...]
//
// A tool, not a test: it prints one JSON object on stdout (progress on
// stderr). Each mode is one function over the loaded plan (kv-quant over
// one plan per KV-cache dtype).
//
//===----------------------------------------------------------------------===//

#include "tools/folio-bench/KVQuant.h"
#include "tools/folio-bench/LoadTime.h"
#include "tools/folio-bench/Roofline.h"
#include "tools/folio-bench/Spec.h"
#include "tools/folio-bench/WeightQuant.h"
#ifdef FOLIO_BENCH_HTTP
#include "tools/folio-bench/ServeBench.h"
#endif

#include "compiler/Target/Target.h"

#include "runtime/Bench/ServingBench.h"

#include "compiler/Plan/LowerToPlan.h"
#include "compiler/Plan/StoreWeights.h"
#include "runtime/Plan/PlanIO.h"
#include "tools/common/EngineFlags.h"
#include "tools/common/LoadModel.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>

using namespace folio;

namespace {

const char *const kUsage =
    "usage: folio-bench --mode=roofline --model M.onnx|M.folio [options]\n"
    "Modes:\n"
    "  roofline  single-stream decode vs the memory-bandwidth roofline and a\n"
    "            long prefill vs oneDNN's GEMM peak, both ceilings measured\n"
    "            in the same run\n"
    "Options:\n"
    "  --threads L         comma-separated thread counts (default 1,2); sets\n"
    "                      Folio's pool and oneDNN's OpenMP team\n"
    "  --weight-dtype L    comma-separated stored weight dtypes, one plan\n"
    "                      each: f32|bf16|f16|int8|fp8_e4m3|int4 (default\n"
    "                      bf16,f32); a .folio plan takes only the dtype\n"
    "                      it stores (its default)\n"
    "  --weight-group-size N  int4's group along K, 32|64|128 (default 128),\n"
    "                      compiling an .onnx; also in weight-quant mode\n"
    "  --repeats N         timed repeats per configuration, after a warm-up\n"
    "                      (default 3; medians reported with all samples)\n"
    "  --prefill-tokens N  prompt length (default 512)\n"
    "  --decode-tokens N   decoded tokens per repeat (default 32)\n"
    "  --bandwidth-mib N   read-loop buffer (default 1024)\n"
    "  --gemm-sizes L      square GEMM sizes; the peak is the best of them\n"
    "                      (default 2048,4096)\n"
    "  --block-size B      KV block size when compiling an .onnx (default "
    "16,\n"
    "                      or 32 for int2 caches); with a .folio, what it\n"
    "                      was compiled with\n"
    "  --kv-cache-dtype D  KV-cache storage when compiling an .onnx (default\n"
    "                      auto: int8 on the CPU); with a .folio, what it was\n"
    "                      compiled with\n"
    "  --no-verify-weights with a .folio: skip hashing the weights against\n"
    "                      the file's checksum (the metadata is always\n"
    "                      checked); also in serving mode\n"
    "  --device D          cpu (default), cuda or auto; every mode. The\n"
    "                      benchmarks run on the CPU executor: without a\n"
    "                      GPU, cuda and auto run there with a note; with\n"
    "                      one, cuda is an error (tools/gpu-check.sh\n"
    "                      measures the GPU)\n"
    "\n"
    "usage: folio-bench --mode=weight-quant --model M.onnx [options]\n"
    "  weight-quant  per stored weight dtype, against f32 weights in the\n"
    "            same run: weight bytes, held-out perplexity and greedy\n"
    "            agreement (one JSON object keyed by dtype;\n"
    "            docs/cpu-kernels.md)\n"
    "  --weight-dtype L            comma-separated f32|bf16|f16|int8|\n"
    "                              fp8_e4m3|int4 (int4 in groups of\n"
    "                              --weight-group-size, default 128)\n"
    "                              (default bf16,int8; f32 always runs)\n"
    "  --eval-data FILE            int32 token windows (default:\n"
    "                              heldout_slice.i32 beside the model)\n"
    "  --eval-window N / --prompt-tokens N / --agreement-tokens N\n"
    "                              as for kv-quant below\n"
    "  --kv-cache-dtype D          every variant's cache (default f32)\n"
    "  --threads N                 one value (default: every core)\n"
    "\n"
    "usage: folio-bench --mode=kv-quant --model M.onnx --eval-data W.i32 "
    "[options]\n"
    "  kv-quant  per KV-cache dtype, against f32 in the same run: bytes per\n"
    "            token, resident sequences, held-out perplexity, greedy\n"
    "            agreement and long-context decode speed (one JSON object\n"
    "            keyed by dtype; docs/kv-cache-quantization.md)\n"
    "  --kv-cache-dtype L          comma-separated dtypes (default\n"
    "                              f32,bf16,fp8_e4m3,fp8_e5m2,int8,int4,\n"
    "                              int2)\n"
    "  --eval-data FILE            int32 token windows (e.g.\n"
    "                              models/bundled/heldout_slice.i32)\n"
    "  --eval-window N             tokens per window (default 256)\n"
    "  --prompt-tokens N           greedy prompts: each window's first N\n"
    "                              tokens (default 32)\n"
    "  --agreement-tokens N        greedy tokens compared, spread over the\n"
    "                              windows (default 1024; rounded up to a\n"
    "                              whole number per prompt)\n"
    "  --context N                 decode context (default 2048)\n"
    "  --decode-batch N            decode sequences (default 4)\n"
    "  --decode-tokens N           timed decode steps (default 16)\n"
    "  --repeats N                 timed runs, best kept (default 3)\n"
    "  --kv-cache-memory BYTES     budget for max_resident_seqs (default\n"
    "                              256 MiB)\n"
    "  --calibration-data FILE     fp8 scales from int32 token ids (.i32) or\n"
    "                              text (with --tokenizer); default: the\n"
    "                              compiler's uncalibrated scales\n"
    "                              (weight-quant: int8's outlier columns)\n"
    "  --tokenizer FILE            tokenizer.json for text calibration data\n"
    "  --threads N                 one value (default: every core)\n"
    "\n"
    "usage: folio-bench --model M --workload sharegpt-like [options]\n"
    "  serving   continuous batching vs static batching on one workload, the\n"
    "            same plan and kernels (docs/serving-bench.md)\n"
    "  --num-requests N            requests (default 64)\n"
    "  --seed S                    workload seed (default 0)\n"
    "  --max-model-len L           prompt + output limit (default: the\n"
    "                              model's max positions, else 2048; at\n"
    "                              most its proven mask context)\n"
    "  --request-rate R            Poisson arrivals per second (default 0:\n"
    "                              all at once)\n"
    "  --policy L                  continuous,static (default both)\n"
    "  --max-num-seqs N            (default 32)\n"
    "  --max-num-batched-tokens N  (default 512)\n"
    "  --kv-cache-memory BYTES     KV budget for either policy (default: 8\n"
    "                              max-model-len sequences)\n"
    "  --enable-prefix-caching\n"
    "  --json                      (JSON is the only output format)\n"
    "  --threads N                 as above, one value\n"
    "  --weight-dtype D            how the executor packs the plan's weights:\n"
    "                              f32 (default), bf16 or f16\n"
    "\n"
    "usage: folio-bench --mode=spec --model T (--speculative-model D |\n"
    "                   --speculative-method ngram) [options]\n"
    "  spec      greedy decoding with speculation against without, the same\n"
    "            prompts in the same run: per batch size, per fixed k and\n"
    "            adaptive; every window once, batch-size prompts at a time,\n"
    "            each group run by every configuration in turn\n"
    "            (docs/speculative-decoding.md)\n"
    "  --num-speculative-tokens L  comma-separated k (default 4)\n"
    "  --batch-sizes L             comma-separated (default 1,4,16)\n"
    "  --workload W                heldout (default): prompts are held-out\n"
    "                              windows' starts; edit: the same, then\n"
    "                              their first quarter again\n"
    "  --eval-data FILE            int32 token windows (default:\n"
    "                              heldout_slice.i32 next to --model)\n"
    "  --eval-window N             tokens per window (default 256)\n"
    "  --prompt-tokens N           prompt length before the edit workload's\n"
    "                              repeat (default 64, edit 128)\n"
    "  --new-tokens N              tokens generated per prompt (default 128,\n"
    "                              edit 64)\n"
    "  --repeats N                 interleaved runs of every configuration,\n"
    "                              the fastest of each kept (default 1)\n"
    "  --threads N                 one value (default: every core)\n"
    "  --weight-dtype D            f32 (default), bf16, f16, int8, fp8_e4m3\n"
    "                              or int4: an .onnx target and draft\n"
    "                              compile with their weights stored so,\n"
    "                              one copy for every engine\n"
    "  --temperature T             0 (default): greedy, outputs compared\n"
    "                              with the baseline's; else sampled, request\n"
    "                              i seeded with --seed + i\n"
    "  --profile                   each run's \"profile\": the target's\n"
    "                              microseconds per decode step by step kind\n"
    "                              (linear, paged_attention, ...), with\n"
    "                              speculation and in the baseline\n"
    "  --speculative-method, --speculative-model, --ngram-prompt-lookup-*,\n"
    "  --no-adaptive-speculation   as folio-generate takes them\n"
    "\n"
    "usage: folio-bench --mode=serve --url http://HOST:PORT --workload "
    "sharegpt-like\n"
    "                   [--model M.folio|M.onnx] [options]\n"
    "  serve     the serving workload sent to a running folio-serve over\n"
    "            HTTP (streamed, timed at the client); with --model, the\n"
    "            same workload through the in-process engine first, in the\n"
    "            same invocation, and their throughput ratio\n"
    "            (docs/serving-bench.md)\n"
    "  --url URL                   the server, http://HOST:PORT; it must\n"
    "                              answer GET /health\n"
    "  --model M                   the baseline: the server's model\n"
    "  --tokenizer FILE            without --model: the vocabulary of the\n"
    "                              prompt token ids\n"
    "  --max-concurrency N         requests in flight at most, in both\n"
    "                              runs (default: no limit)\n"
    "  --api-key K                 sent as 'Authorization: Bearer K'\n"
    "  --served-model-name NAME    the model requests name (default: the\n"
    "                              one /v1/models lists)\n"
    "  --num-requests, --seed, --request-rate  the workload, as above\n"
    "  --max-model-len L           default: the server's\n"
    "  Baseline engine (set them as the server was started):\n"
    "  --max-num-seqs N            (default 64, as folio-serve's)\n"
    "  --max-num-batched-tokens N  (default 512)\n"
    "  --kv-cache-memory BYTES     (default: the server's KV blocks, read\n"
    "                              from its /metrics)\n"
    "  --enable-prefix-caching / --no-enable-prefix-caching  (default on)\n"
    "  --threads N / --weight-dtype D  one value each; the server's threads\n"
    "                              are its own (FOLIO_NUM_THREADS)\n"
    "\n"
    "usage: folio-bench --mode=load --model M.folio [options]\n"
    "  load      the whole folio-run process on the plan (one new token)\n"
    "            against mapping the file and touching every page, both\n"
    "            interleaved in one run; medians, samples and their ratio\n"
    "            (docs/plan-and-executor.md)\n"
    "  --repeats N                 timed runs of each (default 7)\n"
    "  --threads N                 folio-run --threads (default 1)\n"
    "  --drop-caches               drop the page cache before each timed\n"
    "                              run (needs root): a cold start\n"
    "  --runner PATH               the folio-run to time (default: the one\n"
    "                              next to folio-bench)\n";

bool parseInt(const std::string &s, int64_t &out) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0)
    return false;
  out = v;
  return true;
}

std::vector<std::string> split(const std::string &s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t comma = s.find(',', start);
    out.push_back(s.substr(start, comma == std::string::npos ? std::string::npos
                                                             : comma - start));
    if (comma == std::string::npos)
      return out;
    start = comma + 1;
  }
}

struct Options {
  std::string mode, model;
  /// --device: every in-process mode runs on the executor it selects.
  device::DeviceKind device = device::DeviceKind::Cpu;
  int64_t blockSize = 0; ///< 0: the compiler's default
  std::vector<std::string> kvCacheDtypes;
  bench::KVQuantOptions kvQuant;
  bench::WeightQuantOptions weightQuant;
  bool repeatsGiven = false, decodeTokensGiven = false;
  std::vector<std::string> given; ///< every flag, for the per-mode check
  bench::RooflineOptions roofline;
  /// --weight-dtype as given: stored dtypes for roofline and weight-quant,
  /// the executor's weight type for the other modes.
  std::vector<std::string> weightDtypes;
  /// --weight-group-size: int4's group for roofline and weight-quant (0:
  /// folioc's default, 128).
  int64_t weightGroupSize = 0;
  // Serving mode.
  bench::WorkloadOptions workload;
  bench::ServingBenchOptions serving;
  bool maxModelLenGiven = false, kvMemoryGiven = false;
  bool threadsGiven = false, weightsGiven = false;
  bool runContinuous = true, runStatic = true;
  bool verifyWeights = true; ///< a .folio plan's weights against its hash
  bench::SpecBenchOptions spec;
  bench::LoadTimeOptions load;
  bool promptTokensGiven = false, evalWindowGiven = false;
  // Serve mode.
  std::string url, apiKey, servedModelName;
  bool prefixCachingGiven = false;
};

Status parse(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    size_t eq = arg.find('=');
    bool inlineValue = arg.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inlineValue) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    auto need = [&]() -> Status {
      if (inlineValue)
        return Status::ok();
      if (i + 1 >= argc)
        return Status::invalidArgument(arg + " needs a value");
      value = argv[++i];
      return Status::ok();
    };
    // A flag without a value must not be given one: --drop-caches=no
    // would otherwise drop the caches.
    auto noValue = [&]() -> Status {
      if (inlineValue)
        return Status::invalidArgument(arg + " takes no value (got '" + arg +
                                       "=" + value + "')");
      return Status::ok();
    };
    // A list naming an item twice would run it twice and print its key
    // twice.
    auto unique = [&](const std::vector<std::string> &items) -> Status {
      for (size_t a = 0; a < items.size(); ++a)
        for (size_t b = 0; b < a; ++b)
          if (items[a] == items[b])
            return Status::invalidArgument(arg + ": '" + items[a] +
                                           "' is listed twice");
      return Status::ok();
    };
    auto positive = [&](int64_t &out) -> Status {
      if (Status s = need(); !s)
        return s;
      if (!parseInt(value, out) || out < 1)
        return Status::invalidArgument(arg + ": '" + value +
                                       "' is not an integer >= 1");
      return Status::ok();
    };
    Status s;
    o.given.push_back(arg);
    if (tools::SpeculativeFlags::isFlag(arg)) {
      if (arg == "--no-adaptive-speculation")
        if (Status st = noValue(); !st)
          return st;
      bool consumed = false;
      const char *next = inlineValue    ? value.c_str()
                         : i + 1 < argc ? argv[i + 1]
                                        : nullptr;
      if (Status st = o.spec.speculative.parse(arg, next, consumed,
                                               /*allowList=*/true);
          !st)
        return st;
      if (consumed && !inlineValue)
        ++i;
      continue;
    }
    if (arg == "--batch-sizes") {
      if (!(s = need()))
        return s;
      o.spec.batchSizes.clear();
      if (!(s = unique(split(value))))
        return s;
      for (const std::string &t : split(value)) {
        int64_t n;
        if (!parseInt(t, n) || n < 1 || n > 1024)
          return Status::invalidArgument("--batch-sizes: '" + t +
                                         "' is not a batch size in [1, 1024]");
        o.spec.batchSizes.push_back(n);
      }
      continue;
    }
    if (arg == "--temperature") {
      if (!(s = need()))
        return s;
      char *end = nullptr;
      double t = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !(t >= 0 && t <= 100))
        return Status::invalidArgument("--temperature: '" + value +
                                       "' is not a number in [0, 100]");
      o.spec.temperature = float(t);
      continue;
    }
    if (arg == "--new-tokens") {
      if (!(s = positive(o.spec.newTokens)))
        return s;
      continue;
    }
    if (arg == "--mode") {
      s = need();
      o.mode = value;
    } else if (arg == "--model") {
      s = need();
      o.model = value;
    } else if (arg == "--threads") {
      if (!(s = need()))
        return s;
      o.roofline.threads.clear();
      o.threadsGiven = true;
      if (!(s = unique(split(value))))
        return s;
      for (const std::string &t : split(value)) {
        int64_t n;
        if (!parseInt(t, n) || n < 1 || n > 1024)
          return Status::invalidArgument("--threads: '" + t +
                                         "' is not a thread count");
        o.roofline.threads.push_back(n);
      }
    } else if (arg == "--weight-dtype") {
      if (!(s = need()))
        return s;
      o.weightsGiven = true;
      o.weightDtypes = split(value);
      s = unique(o.weightDtypes);
    } else if (arg == "--weight-group-size") {
      s = positive(o.weightGroupSize);
    } else if (arg == "--repeats") {
      s = positive(o.roofline.repeats);
      o.repeatsGiven = true;
    } else if (arg == "--prefill-tokens") {
      s = positive(o.roofline.prefillTokens);
    } else if (arg == "--decode-tokens") {
      s = positive(o.roofline.decodeTokens);
      o.decodeTokensGiven = true;
    } else if (arg == "--bandwidth-mib") {
      s = positive(o.roofline.bandwidthMiB);
    } else if (arg == "--gemm-sizes" || arg == "--gemm-size") {
      if (!(s = need()))
        return s;
      o.roofline.gemmSizes.clear();
      if (!(s = unique(split(value))))
        return s;
      for (const std::string &t : split(value)) {
        int64_t n;
        if (!parseInt(t, n) || n < 64 || n > 16384)
          return Status::invalidArgument(
              "--gemm-sizes: '" + t + "' is not a matrix size in [64, 16384]");
        o.roofline.gemmSizes.push_back(n);
      }
    } else if (arg == "--block-size") {
      s = positive(o.blockSize);
    } else if (arg == "--kv-cache-dtype") {
      if (!(s = need()))
        return s;
      o.kvCacheDtypes.clear();
      if (!(s = unique(split(value))))
        return s;
      for (const std::string &t : split(value)) {
        if (!parseKVCacheDType(t))
          return Status::invalidArgument("--kv-cache-dtype: '" + t +
                                         "' is not one of " +
                                         supportedKVCacheDTypes());
        o.kvCacheDtypes.push_back(t);
      }
    } else if (arg == "--eval-data" || arg == "--calibration-data" ||
               arg == "--tokenizer") {
      s = need();
      (arg == "--eval-data"          ? o.kvQuant.evalData
       : arg == "--calibration-data" ? o.kvQuant.calibrationData
                                     : o.kvQuant.tokenizer) = value;
    } else if (arg == "--eval-window") {
      s = positive(o.kvQuant.evalWindow);
      o.evalWindowGiven = true;
    } else if (arg == "--prompt-tokens") {
      s = positive(o.kvQuant.promptTokens);
      o.promptTokensGiven = true;
    } else if (arg == "--agreement-tokens") {
      s = positive(o.kvQuant.agreementTokens);
    } else if (arg == "--context") {
      s = positive(o.kvQuant.context);
    } else if (arg == "--decode-batch") {
      s = positive(o.kvQuant.decodeBatch);
    } else if (arg == "--workload") {
      s = need();
      o.workload.kind = value;
      if (o.mode.empty())
        o.mode = "serving";
    } else if (arg == "--num-requests") {
      int64_t n = 0;
      s = positive(n);
      o.workload.numRequests = size_t(n);
    } else if (arg == "--seed") {
      if (!(s = need()))
        return s;
      int64_t n = 0;
      if (!parseInt(value, n) || n < 0)
        return Status::invalidArgument("--seed: '" + value +
                                       "' is not an integer >= 0");
      o.workload.seed = uint64_t(n);
    } else if (arg == "--max-model-len") {
      int64_t n = 0;
      s = positive(n);
      o.serving.maxModelLen = size_t(n);
      o.maxModelLenGiven = true;
    } else if (arg == "--request-rate") {
      if (!(s = need()))
        return s;
      char *end = nullptr;
      double rate = std::strtod(value.c_str(), &end);
      // 0 sends everything at once; a rate under one request a day would
      // only sleep.
      if (value.empty() || *end != '\0' || !std::isfinite(rate) ||
          !(rate == 0 || (rate >= 1e-5 && rate <= 1e9)))
        return Status::invalidArgument(
            "--request-rate: '" + value +
            "' is not 0 or a rate from 1e-5 to 1e9 requests per second");
      o.workload.requestRate = rate;
    } else if (arg == "--policy") {
      if (!(s = need()))
        return s;
      o.runContinuous = o.runStatic = false;
      if (!(s = unique(split(value))))
        return s;
      for (const std::string &p : split(value)) {
        if (p == "continuous")
          o.runContinuous = true;
        else if (p == "static")
          o.runStatic = true;
        else
          return Status::invalidArgument("--policy: '" + p +
                                         "' is not a policy (continuous, "
                                         "static)");
      }
    } else if (arg == "--max-num-seqs") {
      int64_t n = 0;
      s = positive(n);
      o.serving.maxNumSeqs = size_t(n);
    } else if (arg == "--max-num-batched-tokens") {
      int64_t n = 0;
      s = positive(n);
      o.serving.maxNumBatchedTokens = size_t(n);
    } else if (arg == "--kv-cache-memory") {
      int64_t n = 0;
      s = positive(n);
      o.serving.kvCacheMemory = size_t(n);
      o.kvMemoryGiven = true;
    } else if (arg == "--enable-prefix-caching" ||
               arg == "--no-enable-prefix-caching") {
      s = noValue();
      o.serving.enablePrefixCaching = arg == "--enable-prefix-caching";
      o.prefixCachingGiven = true;
    } else if (arg == "--url" || arg == "--api-key" ||
               arg == "--served-model-name") {
      if (!(s = need()))
        return s;
      if (value.empty())
        return Status::invalidArgument(arg + " must not be empty");
      (arg == "--url"       ? o.url
       : arg == "--api-key" ? o.apiKey
                            : o.servedModelName) = value;
    } else if (arg == "--runner") {
      if (!(s = need()))
        return s;
      if (value.empty())
        return Status::invalidArgument("--runner must not be empty");
      o.load.runner = value;
    } else if (arg == "--drop-caches") {
      s = noValue();
      o.load.dropCaches = true;
    } else if (arg == "--profile") {
      s = noValue();
      o.spec.profile = true;
    } else if (arg == "--max-concurrency") {
      int64_t n = 0;
      s = positive(n);
      o.serving.maxConcurrency = size_t(n);
    } else if (arg == "--no-verify-weights") {
      s = noValue();
      o.verifyWeights = false;
    } else if (arg == "--device") {
      if (s = need(); s)
        s = tools::parseDeviceFlag(value, o.device);
    } else if (arg == "--json") {
      // JSON is what folio-bench prints; accepted for the usual spelling.
      s = noValue();
    } else {
      return Status::invalidArgument("unknown argument '" +
                                     std::string(argv[i]) + "'");
    }
    if (!s)
      return s;
  }
  if (o.mode != "roofline" && o.mode != "serving" && o.mode != "kv-quant" &&
      o.mode != "weight-quant" && o.mode != "spec" && o.mode != "serve" &&
      o.mode != "load")
    return Status::invalidArgument(
        o.mode.empty()
            ? "--mode is required (roofline, kv-quant, weight-quant, spec, "
              "serve, load), or --workload for serving"
            : "--mode: '" + o.mode +
                  "' is not a mode (roofline, serving, kv-quant, "
                  "weight-quant, spec, serve, load)");
  if (o.weightsGiven) {
    bool stored =
        o.mode == "roofline" || o.mode == "weight-quant" || o.mode == "spec";
    o.roofline.weights.clear();
    for (const std::string &t : o.weightDtypes) {
      if (stored) {
        auto d = mlir::folio::parseWeightDtype(t);
        if (!d)
          return Status::invalidArgument(llvm::toString(d.takeError()));
        if (!*d)
          return Status::invalidArgument(
              "--weight-dtype none: --mode=" + o.mode +
              " compares stored dtypes; supported: " +
              std::string(mlir::folio::kSupportedWeightDtypes));
        continue;
      }
      Expected<exec::WeightType> w = exec::parseWeightType(t);
      if (!w)
        return Status::invalidArgument("--weight-dtype: " +
                                       w.status().message());
      o.roofline.weights.push_back(*w);
    }
    if (o.mode == "roofline")
      o.roofline.weightDtypes = o.weightDtypes;
    if (o.mode == "weight-quant")
      o.weightQuant.dtypes = o.weightDtypes;
  }
  // A flag of another mode would be silently ignored: refuse it.
  static const std::vector<std::pair<std::string, std::string>> modesOf = {
      {"--repeats", "roofline,kv-quant,spec,load"},
      {"--runner", "load"},
      {"--drop-caches", "load"},
      {"--profile", "spec"},
      {"--prefill-tokens", "roofline"},
      {"--decode-tokens", "roofline,kv-quant"},
      {"--bandwidth-mib", "roofline"},
      {"--gemm-sizes", "roofline"},
      {"--gemm-size", "roofline"},
      {"--weight-dtype", "roofline,weight-quant,serving,spec,serve"},
      {"--weight-group-size", "roofline,weight-quant"},
      {"--workload", "serving,spec,serve"},
      {"--num-requests", "serving,serve"},
      {"--seed", "serving,spec,serve"},
      {"--temperature", "spec"},
      {"--max-model-len", "serving,serve"},
      {"--request-rate", "serving,serve"},
      {"--policy", "serving"},
      {"--max-num-seqs", "serving,serve"},
      {"--max-num-batched-tokens", "serving,serve"},
      {"--enable-prefix-caching", "serving,serve"},
      {"--no-enable-prefix-caching", "serve"},
      {"--kv-cache-memory", "serving,kv-quant,serve"},
      {"--url", "serve"},
      {"--api-key", "serve"},
      {"--served-model-name", "serve"},
      {"--max-concurrency", "serve"},
      {"--eval-data", "kv-quant,weight-quant,spec"},
      {"--calibration-data", "kv-quant,weight-quant"},
      {"--tokenizer", "kv-quant,serve,weight-quant"},
      {"--eval-window", "kv-quant,weight-quant,spec"},
      {"--prompt-tokens", "kv-quant,weight-quant,spec"},
      {"--agreement-tokens", "kv-quant,weight-quant"},
      {"--context", "kv-quant"},
      {"--decode-batch", "kv-quant"},
      {"--no-verify-weights", "roofline,serving,spec,serve"},
      {"--speculative-model", "spec"},
      {"--speculative-method", "spec"},
      {"--speculative-weight-dtype", "spec"},
      {"--num-speculative-tokens", "spec"},
      {"--ngram-prompt-lookup-min", "spec"},
      {"--ngram-prompt-lookup-max", "spec"},
      {"--no-adaptive-speculation", "spec"},
      {"--batch-sizes", "spec"},
      {"--new-tokens", "spec"},
      // --mode=load times folio-run on the plan as it was compiled.
      {"--block-size", "roofline,kv-quant,weight-quant,serving,spec,serve"},
      {"--kv-cache-dtype", "roofline,kv-quant,weight-quant,serving,spec,serve"},
  };
  for (const std::string &flag : o.given)
    for (const auto &[name, modes] : modesOf) {
      if (flag != name)
        continue;
      std::vector<std::string> allowed = split(modes);
      if (std::find(allowed.begin(), allowed.end(), o.mode) == allowed.end())
        return Status::invalidArgument(flag + " applies to --mode=" + modes +
                                       ", not " + o.mode);
    }
  if (o.weightGroupSize) {
    const std::vector<std::string> &listed = o.weightsGiven ? o.weightDtypes
                                             : o.mode == "roofline"
                                                 ? o.roofline.weightDtypes
                                                 : o.weightQuant.dtypes;
    if (std::find(listed.begin(), listed.end(), "int4") == listed.end())
      return Status::invalidArgument(
          "--weight-group-size sets int4's group, and int4 is not in "
          "--weight-dtype");
    if (llvm::Expected<int64_t> g = mlir::folio::resolveWeightGroupSize(
            ::folio::plan::ElemType::I4, o.weightGroupSize);
        !g)
      return Status::invalidArgument(llvm::toString(g.takeError()));
    if (o.model.size() < 5 ||
        o.model.compare(o.model.size() - 5, 5, ".onnx") != 0)
      return Status::invalidArgument(
          "--weight-group-size applies when compiling an .onnx; '" + o.model +
          "' keeps the group it was compiled with");
    o.weightQuant.int4GroupSize = o.weightGroupSize;
  }
  if (o.mode == "load") {
    if (o.threadsGiven)
      o.load.threads = int(o.roofline.threads[0]);
    if (o.repeatsGiven)
      o.load.repeats = int(o.roofline.repeats);
  }
  if (o.mode != "kv-quant") {
    if (o.kvCacheDtypes.size() > 1)
      return Status::invalidArgument(
          "--kv-cache-dtype takes one dtype outside --mode=kv-quant");
  } else {
    if (!o.kvCacheDtypes.empty())
      o.kvQuant.dtypes = o.kvCacheDtypes;
    o.kvQuant.blockSize = o.blockSize;
    if (o.repeatsGiven)
      o.kvQuant.repeats = o.roofline.repeats;
    if (o.decodeTokensGiven)
      o.kvQuant.decodeSteps = o.roofline.decodeTokens;
    if (o.kvMemoryGiven)
      o.kvQuant.kvCacheMemory = int64_t(o.serving.kvCacheMemory);
    if (o.threadsGiven) {
      if (o.roofline.threads.size() != 1)
        return Status::invalidArgument("kv-quant mode takes one --threads");
      o.kvQuant.threads = o.roofline.threads[0];
    }
  }
  if (o.mode == "weight-quant") {
    if (o.kvCacheDtypes.size() == 1)
      o.weightQuant.kvCacheDtype = o.kvCacheDtypes[0];
    o.weightQuant.blockSize = o.blockSize;
    o.weightQuant.evalData = o.kvQuant.evalData;
    o.weightQuant.calibrationData = o.kvQuant.calibrationData;
    o.weightQuant.tokenizer = o.kvQuant.tokenizer;
    if (o.evalWindowGiven)
      o.weightQuant.evalWindow = o.kvQuant.evalWindow;
    if (o.promptTokensGiven)
      o.weightQuant.promptTokens = o.kvQuant.promptTokens;
    o.weightQuant.agreementTokens = o.kvQuant.agreementTokens;
    if (o.threadsGiven) {
      if (o.roofline.threads.size() != 1)
        return Status::invalidArgument("weight-quant mode takes one --threads");
      o.weightQuant.threads = o.roofline.threads[0];
    }
  }
  if (o.mode == "spec") {
    if (Status st = o.spec.speculative.finish(); !st)
      return st;
    if (std::find(o.given.begin(), o.given.end(), "--workload") !=
        o.given.end())
      o.spec.workload = o.workload.kind;
    o.spec.evalData = o.kvQuant.evalData;
    if (o.evalWindowGiven)
      o.spec.evalWindow = o.kvQuant.evalWindow;
    bool edit = o.spec.workload == "edit";
    o.spec.promptTokens = o.promptTokensGiven ? o.kvQuant.promptTokens
                          : edit              ? 128
                                              : 64;
    if (o.spec.newTokens == 0)
      o.spec.newTokens = edit ? 64 : 128;
    if (o.repeatsGiven)
      o.spec.repeats = o.roofline.repeats;
    if (o.threadsGiven) {
      if (o.roofline.threads.size() != 1)
        return Status::invalidArgument("spec mode takes one --threads");
      o.spec.threads = o.roofline.threads[0];
    }
    o.spec.seed = o.workload.seed;
    // Greedy runs draw nothing: a seed would change nothing.
    if (o.spec.temperature == 0 &&
        std::find(o.given.begin(), o.given.end(), "--seed") != o.given.end())
      return Status::invalidArgument(
          "--seed seeds sampled runs; spec mode is greedy unless "
          "--temperature > 0");
    if (o.weightsGiven) {
      if (o.weightDtypes.size() != 1)
        return Status::invalidArgument("spec mode takes one --weight-dtype");
      o.spec.weightDtype = o.weightDtypes[0];
    }
  }
  if ((o.mode == "serving" || o.mode == "serve") &&
      ((o.threadsGiven && o.roofline.threads.size() > 1) ||
       (o.weightsGiven && o.roofline.weights.size() > 1)))
    return Status::invalidArgument(
        o.mode + " mode takes one --threads and one --weight-dtype value");
  if (o.mode == "serve") {
    if (o.url.empty())
      return Status::invalidArgument("--mode=serve needs --url "
                                     "http://HOST:PORT of a running server");
    // The baseline's engine and its executor are the server's only when
    // given the same flags; these flags mean nothing without it.
    if (o.model.empty())
      for (const char *flag :
           {"--max-num-seqs", "--max-num-batched-tokens", "--kv-cache-memory",
            "--enable-prefix-caching", "--no-enable-prefix-caching",
            "--threads", "--weight-dtype", "--no-verify-weights",
            "--block-size", "--kv-cache-dtype", "--device"})
        if (std::find(o.given.begin(), o.given.end(), flag) != o.given.end())
          return Status::invalidArgument(
              std::string(flag) +
              " sets up the in-process baseline, which --mode=serve runs "
              "only with --model");
    return Status::ok();
  }
  if (o.model.empty())
    return Status::invalidArgument("--model is required");
  return Status::ok();
}

mlir::folio::CompileToPlanOptions compileOptions(const Options &o) {
  mlir::folio::CompileToPlanOptions copts;
  copts.blockSize = o.blockSize;
  if (!o.kvCacheDtypes.empty())
    copts.kvCacheDtype = o.kvCacheDtypes[0];
  copts.verifyWeights = o.verifyWeights;
  return copts;
}

Expected<plan::Plan> loadModel(const Options &o) {
  Expected<plan::Plan> loaded =
      mlir::folio::loadOrCompilePlan(o.model, compileOptions(o));
  // --weight-dtype here chooses how the executor packs weights a plan
  // keeps as plain constants; weights folioc stored packed run as stored,
  // so the flag would change nothing for them.
  if (loaded && o.weightsGiven && !loaded->weights.empty())
    return Status::invalidArgument(
        "--weight-dtype: '" + o.model + "' stores its linear weights " +
        "compiled (folioc --weight-dtype " +
        plan::elemTypeName(loaded->weights.front().type) +
        "), which run as stored; drop --weight-dtype, or pass the .onnx "
        "model to benchmark another dtype");
  return loaded;
}

/// The serving comparison: one workload, both policies, one plan.
Expected<std::string> runServing(std::shared_ptr<const plan::Plan> plan,
                                 Options &o) {
  int64_t maxPositions = plan->configValue("max_positions", 0);
  if (!o.maxModelLenGiven) {
    o.serving.maxModelLen = maxPositions > 0 ? size_t(maxPositions) : 2048;
    // At most the length the attention masks were proven causal up to
    // (the serving engine refuses a longer max-model-len).
    if (int64_t maxContext = plan->configValue("max_context", 0))
      o.serving.maxModelLen =
          std::min(o.serving.maxModelLen, size_t(maxContext));
  }
  if (maxPositions > 0 && o.serving.maxModelLen > size_t(maxPositions))
    return Status::invalidArgument(
        "--max-model-len " + std::to_string(o.serving.maxModelLen) +
        " exceeds the model's " + std::to_string(maxPositions) + " positions");
  o.workload.maxModelLen = o.serving.maxModelLen;
  o.workload.vocabSize = size_t(plan->configValue("vocab", 0));
  exec::ExecutorOptions eopts;
  // Serving defaults: the process's threads, the model's f32 weights.
  if (o.threadsGiven)
    eopts.numThreads = unsigned(o.roofline.threads[0]);
  if (o.weightsGiven)
    eopts.weights = o.roofline.weights[0];
  bench::ExecutorFactory factory = [eopts] {
    return exec::createCPUExecutor(eopts);
  };
  if (!o.kvMemoryGiven) {
    // Eight max-length sequences' worth, the same for both policies.
    std::unique_ptr<exec::Executor> probe = factory();
    if (Status s = probe->load(plan); !s)
      return s;
    exec::KVCacheLayout layout = probe->kvCacheLayout();
    size_t blocks = (o.serving.maxModelLen + size_t(layout.blockSize) - 1) /
                    size_t(layout.blockSize);
    o.serving.kvCacheMemory = 8 * blocks * size_t(layout.bytesPerBlock);
  }
  Expected<std::vector<bench::BenchRequest>> work =
      bench::makeWorkload(o.workload);
  if (!work)
    return work.status();
  bench::PolicyMetrics continuous, batched;
  if (o.runContinuous) {
    std::cerr << "folio-bench: continuous batching, " << work->size()
              << " requests\n";
    Expected<bench::PolicyMetrics> m =
        bench::runContinuous(plan, factory, *work, o.serving);
    if (!m)
      return m.status();
    continuous = *m;
  }
  if (o.runStatic) {
    std::cerr << "folio-bench: static batching, " << work->size()
              << " requests\n";
    Expected<bench::PolicyMetrics> m =
        bench::runStatic(plan, factory, *work, o.serving);
    if (!m)
      return m.status();
    batched = *m;
  }
  return bench::toJson(o.runContinuous ? &continuous : nullptr,
                       o.runStatic ? &batched : nullptr) +
         "\n";
}

/// --mode=serve: the server is probed before the baseline model loads, so
/// a wrong URL fails at once.
int runServe(const Options &o) {
#ifndef FOLIO_BENCH_HTTP
  (void)o;
  std::cerr << "folio-bench: error: --mode=serve needs cpp-httplib and "
               "nlohmann-json, which this build was configured without "
               "(install libcpp-httplib-dev and nlohmann-json3-dev, then "
               "re-run cmake)\n";
  return 1;
#else
  auto fail = [](const Status &s) {
    std::cerr << "folio-bench: error: " << s.message() << "\n";
    return 1;
  };
  bench::ServeBenchOptions so;
  Expected<std::string> base = bench::parseServerUrl(o.url);
  if (!base)
    return fail(base.status());
  so.target.base = *base;
  so.target.apiKey = o.apiKey;
  so.target.modelName = o.servedModelName;
  Expected<bench::ServerInfo> server = bench::probeServer(so.target);
  if (!server)
    return fail(server.status());
  so.workload = o.workload;
  so.serving = o.serving;
  // Unset limits come from the server; the rest default to folio-serve's.
  if (!o.maxModelLenGiven)
    so.serving.maxModelLen = 0;
  if (!o.kvMemoryGiven)
    so.serving.kvCacheMemory = 0;
  if (std::find(o.given.begin(), o.given.end(), "--max-num-seqs") ==
      o.given.end())
    so.serving.maxNumSeqs = 64;
  if (!o.prefixCachingGiven)
    so.serving.enablePrefixCaching = true;
  so.tokenizer = o.kvQuant.tokenizer;
  if (o.threadsGiven)
    so.executor.numThreads = unsigned(o.roofline.threads[0]);
  if (o.weightsGiven)
    so.executor.weights = o.roofline.weights[0];
  std::shared_ptr<const plan::Plan> baseline;
  if (!o.model.empty()) {
    Expected<plan::Plan> loaded = loadModel(o);
    if (!loaded)
      return fail(loaded.status());
    baseline = std::make_shared<const plan::Plan>(std::move(*loaded));
  }
  size_t failed = 0;
  Expected<std::string> report =
      bench::runServeBench(so, *server, baseline, failed);
  if (!report)
    return fail(report.status());
  std::cout << *report;
  if (failed) {
    std::cerr << "folio-bench: error: " << failed << " of "
              << o.workload.numRequests
              << " requests failed over HTTP (each is under http.errors)\n";
    return 1;
  }
  return 0;
#endif
}

} // namespace

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::cout << kUsage;
      return 0;
    }
  Options o;
  if (Status s = parse(argc, argv, o); !s) {
    std::cerr << "folio-bench: error: " << s.message() << "\n" << kUsage;
    return 2;
  }
  // Before any model is compiled: `cuda` fails at once, naming what is
  // missing.
  Expected<device::DeviceChoice> dev = device::selectDevice(o.device, nullptr);
  if (!dev) {
    std::cerr << "folio-bench: error: " << dev.status().message() << "\n";
    return 1;
  }
  if (!dev->notice.empty())
    std::cerr << "folio-bench: note: " << dev->notice << "\n";
  if (o.mode == "kv-quant") {
    Expected<std::string> report = bench::runKVQuant(o.model, o.kvQuant);
    if (!report) {
      std::cerr << "folio-bench: error: " << report.status().message() << "\n";
      return 1;
    }
    std::cout << *report;
    return 0;
  }
  if (o.mode == "serve")
    return runServe(o);
  if (o.mode == "load") {
    Expected<std::string> report =
        o.threadsGiven && o.roofline.threads.size() > 1
            ? Expected<std::string>(Status::invalidArgument(
                  "--mode=load takes one --threads value (folio-run's)"))
            : bench::runLoadTime(o.model, o.load);
    if (!report) {
      std::cerr << "folio-bench: error: " << report.status().message() << "\n";
      return 1;
    }
    std::cout << *report;
    return 0;
  }
  if (o.mode == "weight-quant" || o.mode == "roofline") {
    // One plan per stored weight dtype: compiled from an .onnx, or the
    // .folio as given when it stores that dtype.
    // A plan without --weight-dtype: the dtype it stores (the defaults,
    // bf16 and f32, would each need a plan of its own).
    std::shared_ptr<const plan::Plan> given;
    if (o.mode == "roofline" && !o.weightsGiven && tools::isPlanPath(o.model)) {
      mlir::folio::CompileToPlanOptions c = compileOptions(o);
      c.weightDtype = "none";
      Expected<plan::Plan> p = mlir::folio::loadOrCompilePlan(o.model, c);
      if (!p) {
        std::cerr << "folio-bench: error: " << p.status().message() << "\n";
        return 1;
      }
      given = std::make_shared<const plan::Plan>(std::move(*p));
      o.roofline.weightDtypes = {mlir::folio::planWeightDType(*given)};
    }
    bench::PlanForDtype planFor = [&o, given](const std::string &dtype)
        -> Expected<std::shared_ptr<const plan::Plan>> {
      if (given)
        return given;
      mlir::folio::CompileToPlanOptions c = compileOptions(o);
      c.weightDtype = dtype;
      c.weightGroupSize = dtype == "int4" ? o.weightGroupSize : 0;
      Expected<plan::Plan> p = mlir::folio::loadOrCompilePlan(o.model, c);
      if (!p)
        return p.status();
      return std::make_shared<const plan::Plan>(std::move(*p));
    };
    Expected<std::string> report =
        o.mode == "roofline" ? bench::runRoofline(planFor, o.model, o.roofline)
                             : bench::runWeightQuant(o.model, o.weightQuant);
    if (!report) {
      std::cerr << "folio-bench: error: " << report.status().message() << "\n";
      return 1;
    }
    std::cout << *report;
    return 0;
  }
  // An .onnx model for the spec comparison compiles with its weights
  // stored as --weight-dtype says, so that every configuration's engine
  // reads the plan's one copy. Packed by each executor at load, the copies
  // competed for the cache: on an Intel Xeon each further engine in an
  // invocation slowed the others' verify steps (docs/speculative-decoding.md).
  mlir::folio::CompileToPlanOptions specCompile = compileOptions(o);
  specCompile.weightDtype = o.spec.weightDtype;
  Expected<plan::Plan> loaded =
      o.mode == "spec" && !tools::isPlanPath(o.model)
          ? mlir::folio::loadOrCompilePlan(o.model, specCompile)
          : loadModel(o);
  if (loaded && o.mode == "spec" && o.weightsGiven && loaded->weights.empty() &&
      !exec::parseWeightType(o.spec.weightDtype))
    loaded = Status::invalidArgument(
        "--weight-dtype " + o.spec.weightDtype + ": '" + o.model +
        "' keeps its weights as constants, which an executor packs only as "
        "f32, bf16 or f16; pass the .onnx model to store them " +
        o.spec.weightDtype);
  if (!loaded) {
    std::cerr << "folio-bench: error: " << loaded.status().message() << "\n";
    return 1;
  }
  auto plan = std::make_shared<const plan::Plan>(std::move(*loaded));
  Expected<std::string> report =
      o.mode == "serving"
          ? runServing(plan, o)
          : bench::runSpecBench(plan, o.model, compileOptions(o), o.spec);
  if (!report) {
    std::cerr << "folio-bench: error: " << report.status().message() << "\n";
    return 1;
  }
  std::cout << *report;
  return 0;
}
