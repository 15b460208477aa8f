//===- folio-serve.cpp - The OpenAI-compatible HTTP server ----------------===//
//
// folio-serve --model M.folio|M.onnx --tokenizer tokenizer.json
//             [--host 127.0.0.1] [--port 8000] [--api-key K]
//             [--served-model-name NAME] [engine and speculative flags]
//
// Loads (or compiles) the model, builds the continuous-batching engine,
// runs it on its own thread and serves /v1/completions,
// /v1/chat/completions, /v1/models, /health and /metrics until SIGTERM or
// SIGINT, which drain the requests in flight before the process exits.
// See docs/server.md.
//
//===----------------------------------------------------------------------===//

#include "compiler/Plan/LowerToPlan.h"
#include "compiler/Target/Target.h"
#include "runtime/Core/ServingEngine.h"
#include "runtime/Server/AsyncEngine.h"
#include "runtime/Server/ChatTemplate.h"
#include "runtime/Server/HttpServer.h"
#include "runtime/Tokenizer/Tokenizer.h"
#include "tools/common/SpeculativeFlags.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <thread>

#include <pthread.h>

using namespace folio;

namespace {

const char *const kUsage =
    "usage: folio-serve --model M.folio|M.onnx --tokenizer tokenizer.json "
    "[options]\n"
    "  --host H                    address to listen on (default 127.0.0.1; "
    "the server has no TLS)\n"
    "  --port P                    port (default 8000; 0: any free port, "
    "printed at start)\n"
    "  --api-key K                 /v1/* requests need 'Authorization: Bearer "
    "K'\n"
    "  --served-model-name NAME    the model name clients use (default: the "
    "model file's stem)\n"
    "  --max-model-len N           prompt plus completion at most (default: "
    "the model's limit)\n"
    "  --max-num-seqs N            running sequences at most (default 64)\n"
    "  --max-num-batched-tokens N  tokens per engine step (default 512)\n"
    "  --max-queued-requests N     sequences waiting beyond --max-num-seqs "
    "before requests get 429 (default 192)\n"
    "  --max-request-bytes N       larger request bodies get 413 (default "
    "1048576)\n"
    "  --num-blocks N              KV blocks (default: 4 max-model-len "
    "sequences)\n"
    "  --kv-cache-dtype D          KV-cache storage when compiling an .onnx: "
    "auto (default), f32, f16, bf16, fp8_e4m3, fp8_e5m2, int8, int4, int2; "
    "with a .folio plan it must be what the plan was compiled with\n"
    "  --enable-prefix-caching     share cached prompt blocks between "
    "requests (default)\n"
    "  --no-enable-prefix-caching  compute every prompt in full\n"
    "  --seed S                    seeds requests that bring none (default "
    "0)\n"
    "  --no-verify-weights         with a .folio plan: skip hashing the "
    "weights against the file's checksum\n"
    "Speculative decoding (off by default):\n";

struct Options {
  std::string model, tokenizer, kvCacheDtype = "auto";
  server::HttpServerOptions http;
  size_t maxModelLen = 0, maxNumSeqs = 64, maxNumBatchedTokens = 512;
  size_t maxQueuedRequests = 192, numBlocks = 0;
  bool prefixCaching = true, verifyWeights = true;
  uint64_t seed = 0;
  tools::SpeculativeFlags speculative;
};

Status parse(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--no-verify-weights") {
      o.verifyWeights = false;
      continue;
    }
    if (arg == "--enable-prefix-caching" ||
        arg == "--no-enable-prefix-caching") {
      o.prefixCaching = arg == "--enable-prefix-caching";
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
    auto count = [&](size_t &out, long long lo) {
      char *end = nullptr;
      errno = 0;
      long long v = std::strtoll(value.c_str(), &end, 10);
      if (value.empty() || *end || errno || v < lo)
        return Status::invalidArgument(
            arg + ": '" + value +
            "' is not an integer >= " + std::to_string(lo));
      out = size_t(v);
      return Status::ok();
    };
    Status s;
    if (arg == "--model") {
      o.model = value;
    } else if (arg == "--tokenizer") {
      o.tokenizer = value;
    } else if (arg == "--host") {
      o.http.host = value;
    } else if (arg == "--port") {
      size_t port = 0;
      s = count(port, 0);
      if (s && port > 65535)
        s = Status::invalidArgument("--port: " + value +
                                    " is not a port (0 to 65535)");
      o.http.port = int(port);
    } else if (arg == "--api-key") {
      if (value.empty())
        return Status::invalidArgument("--api-key must not be empty");
      o.http.apiKey = value;
    } else if (arg == "--served-model-name") {
      if (value.empty())
        return Status::invalidArgument("--served-model-name must not be empty");
      o.http.servedModelName = value;
    } else if (arg == "--kv-cache-dtype") {
      if (!parseKVCacheDType(value))
        return Status::invalidArgument("--kv-cache-dtype: '" + value +
                                       "' is not one of " +
                                       supportedKVCacheDTypes());
      o.kvCacheDtype = value;
    } else if (arg == "--max-model-len") {
      s = count(o.maxModelLen, 2);
    } else if (arg == "--max-num-seqs") {
      s = count(o.maxNumSeqs, 1);
    } else if (arg == "--max-num-batched-tokens") {
      s = count(o.maxNumBatchedTokens, 1);
    } else if (arg == "--max-queued-requests") {
      s = count(o.maxQueuedRequests, 0);
    } else if (arg == "--max-request-bytes") {
      s = count(o.http.maxRequestBytes, 1);
    } else if (arg == "--num-blocks") {
      s = count(o.numBlocks, 2);
    } else if (arg == "--seed") {
      size_t seed = 0;
      s = count(seed, 0);
      o.seed = seed;
    } else {
      return Status::invalidArgument("unknown argument '" + arg + "'");
    }
    if (!s)
      return s;
  }
  if (o.model.empty() || o.tokenizer.empty())
    return Status::invalidArgument("--model and --tokenizer are required");
  return o.speculative.finish();
}

int fail(const Status &s) {
  std::cerr << "folio-serve: error: " << s.message() << "\n";
  return 1;
}

/// "models/bundled/target.onnx" -> "target".
std::string stem(const std::string &path) {
  size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t dot = name.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 2 &&
      (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::cout << kUsage << tools::SpeculativeFlags::usage();
    return 0;
  }
  Options o;
  if (Status s = parse(argc, argv, o); !s) {
    std::cerr << "folio-serve: error: " << s.message() << "\n"
              << kUsage << tools::SpeculativeFlags::usage();
    return 2;
  }
  // SIGTERM and SIGINT are taken by one thread (below), so every thread
  // started from here on must have them blocked; a client that vanishes
  // must fail a write, not kill the process.
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGTERM);
  sigaddset(&stopSignals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  Expected<Tokenizer> tokenizer = Tokenizer::fromFile(o.tokenizer);
  if (!tokenizer)
    return fail(tokenizer.status());
  Expected<server::TokenizerConfig> tokenizerConfig =
      server::readTokenizerConfig(o.tokenizer);
  if (!tokenizerConfig)
    return fail(tokenizerConfig.status());
  Expected<std::optional<TokenId>> eos =
      server::findEosToken(*tokenizer, *tokenizerConfig);
  if (!eos)
    return fail(eos.status());

  mlir::folio::CompileToPlanOptions copts;
  copts.kvCacheDtype = o.kvCacheDtype;
  copts.verifyWeights = o.verifyWeights;
  Expected<plan::Plan> loaded = mlir::folio::loadOrCompilePlan(o.model, copts);
  if (!loaded)
    return fail(loaded.status());
  auto plan = std::make_shared<const plan::Plan>(std::move(*loaded));
  int64_t maxPositions = plan->configValue("max_positions", 0);
  size_t modelLimit = maxPositions > 0 ? size_t(maxPositions) : 2048;
  if (int64_t maxContext = plan->configValue("max_context", 0))
    modelLimit = std::min(modelLimit, size_t(maxContext));
  // A larger --max-model-len is refused by the engine, naming the limit.
  size_t maxModelLen = o.maxModelLen ? o.maxModelLen : modelLimit;

  SchedulerConfig config;
  config.maxModelLen = maxModelLen;
  config.maxNumSeqs = o.maxNumSeqs;
  config.maxNumBatchedTokens = o.maxNumBatchedTokens;
  config.vocabSize = size_t(plan->configValue("vocab", 0));
  config.eosTokenId = *eos;
  config.seed = o.seed;
  KVCacheConfig kv;
  kv.blockSize = size_t(plan->configValue("block_size", 16));
  kv.enablePrefixCaching = o.prefixCaching;
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

  auto metrics = std::make_shared<server::ServerMetrics>();
  server::AsyncEngineOptions engineOptions;
  engineOptions.maxQueuedRequests = o.maxQueuedRequests;
  auto asyncEngine = std::make_shared<server::AsyncEngine>(
      std::move(*engine), metrics, engineOptions);

  server::HttpServerOptions http = o.http;
  if (http.servedModelName.empty())
    http.servedModelName = stem(o.model);
  http.maxModelLen = maxModelLen;
  // Every sequence the engine may hold can have its stream open.
  http.numThreads = o.maxNumSeqs + o.maxQueuedRequests + 4;
  http.eosTokenId = *eos;
  if (tokenizerConfig->hasChatTemplate()) {
    // A template Folio cannot parse leaves completions working; chat
    // requests are refused with the reason, which is also printed here.
    Expected<std::shared_ptr<const server::ChatTemplate>> chat =
        server::ChatTemplate::create(*tokenizerConfig);
    if (chat)
      http.chatTemplate = std::move(*chat);
    else
      http.chatTemplateError = chat.status().message();
  }
  server::HttpServer httpServer(
      http, asyncEngine,
      std::make_shared<const Tokenizer>(std::move(*tokenizer)), metrics);
  Expected<int> port = httpServer.bind();
  if (!port)
    return fail(port.status());

  std::thread signalThread([&] {
    int signal = 0;
    sigwait(&stopSignals, &signal);
    std::cout << "folio-serve: " << (signal == SIGTERM ? "SIGTERM" : "SIGINT")
              << ": finishing " << asyncEngine->numInFlight()
              << " sequences in flight, admitting no new requests" << std::endl;
    asyncEngine->drainAndStop();
    httpServer.stop();
  });

  std::cout << "folio-serve: serving '" << http.servedModelName
            << "' on http://" << http.host << ":" << *port << " (max-model-len "
            << maxModelLen << ", " << kv.numBlocks - 1 << " KV blocks of "
            << kv.blockSize << " tokens, prefix caching "
            << (o.prefixCaching ? "on" : "off") << ", EOS "
            << (*eos ? "token " + std::to_string(**eos) : std::string("none"))
            << (http.chatTemplate
                    ? ", chat template " + http.chatTemplate->path()
                : !http.chatTemplateError.empty()
                    ? ", chat disabled: " + http.chatTemplateError
                    : std::string(", default chat format"))
            << ")" << std::endl;
  Status served = httpServer.listen();
  if (!served) {
    pthread_kill(signalThread.native_handle(), SIGTERM);
    signalThread.join();
    return fail(served);
  }
  signalThread.join();
  std::cout << "folio-serve: stopped" << std::endl;
  return 0;
}
