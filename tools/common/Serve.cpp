//===- Serve.cpp - The HTTP serving loop of the serving tools -------------===//

#include "tools/common/Serve.h"

#include "runtime/Server/AsyncEngine.h"

#include <iostream>
#include <thread>

#include <pthread.h>

namespace folio::tools {

namespace {

/// ", speculative decoding: ..." for the startup line; empty when off.
std::string speculationSummary(const SpeculativeFlags &f) {
  if (!f.enabled() || f.numTokens.empty())
    return "";
  std::string k = std::to_string(f.numTokens.front());
  std::string what = f.method == "draft"
                         ? "draft model " + f.model
                         : "n-gram lookup (" + std::to_string(f.ngramMin) +
                               " to " + std::to_string(f.ngramMax) + ")";
  return ", speculative decoding: " + what + ", " +
         (f.adaptive ? "up to " + k + " drafts chosen per step"
                     : k + " drafts per step");
}

} // namespace

Status ServeFlags::parse(int argc, char **argv, int &i, bool &handled) {
  if (Status s = engine.parse(argc, argv, i, handled); !s || handled)
    return s;
  std::string arg = argv[i];
  handled = arg == "--host" || arg == "--port" || arg == "--api-key" ||
            arg == "--served-model-name" || arg == "--max-queued-requests" ||
            arg == "--max-request-bytes" || arg == "--seed" ||
            arg == "--stream-interval-ms";
  if (!handled)
    return Status::ok();
  if (i + 1 >= argc)
    return Status::invalidArgument(arg + " needs a value");
  std::string value = argv[++i];
  if (arg == "--host") {
    http.host = value;
  } else if (arg == "--port") {
    size_t port = 0;
    if (Status s = parseCount(arg, value, 0, port); !s)
      return s;
    if (port > 65535)
      return Status::invalidArgument("--port: " + value +
                                     " is not a port (0 to 65535)");
    http.port = int(port);
  } else if (arg == "--api-key") {
    if (value.empty())
      return Status::invalidArgument("--api-key must not be empty");
    // HTTP trims a header value's surrounding blanks, so a key with them
    // could never be sent; and a control character cannot be sent at all.
    for (char ch : value)
      if (static_cast<unsigned char>(ch) <= ' ' || ch == 0x7f)
        return Status::invalidArgument(
            "--api-key: a key sent in an Authorization header cannot hold "
            "spaces or control characters");
    http.apiKey = value;
  } else if (arg == "--served-model-name") {
    if (value.empty())
      return Status::invalidArgument("--served-model-name must not be empty");
    http.servedModelName = value;
  } else if (arg == "--max-queued-requests") {
    return parseCount(arg, value, 0, maxQueuedRequests);
  } else if (arg == "--max-request-bytes") {
    return parseCount(arg, value, 1, http.maxRequestBytes);
  } else if (arg == "--stream-interval-ms") {
    size_t ms = 0;
    if (Status s = parseCount(arg, value, 0, ms); !s)
      return s;
    if (ms > 1000)
      return Status::invalidArgument(
          "--stream-interval-ms: " + value +
          " is more than 1000; tokens would reach clients in bursts a "
          "second or more apart");
    http.minStreamInterval = std::chrono::milliseconds(ms);
  } else {
    size_t s = 0;
    Status st = parseCount(arg, value, 0, s);
    seed = s;
    return st;
  }
  return Status::ok();
}

std::string ServeFlags::usage(const std::string &kvDtype) const {
  return "  --host H                    address to listen on (default "
         "127.0.0.1; the server has no TLS)\n"
         "  --port P                    port (default 8000; 0: any free "
         "port, printed at start)\n"
         "  --api-key K                 /v1/* requests need 'Authorization: "
         "Bearer K'\n"
         "  --served-model-name NAME    the model name clients use (default: "
         "the model file's stem)\n"
         "  --max-queued-requests N     sequences waiting beyond "
         "--max-num-seqs before requests get 429 (default 192)\n"
         "  --max-request-bytes N       larger request bodies get 413 "
         "(default 1048576)\n"
         "  --seed S                    seeds requests that bring none "
         "(default 0)\n"
         "  --stream-interval-ms T      a stream's tokens gather for up to T "
         "ms per write\n"
         "                              (default 10; 0: each engine step's "
         "tokens at once)\n" +
         engine.usage(kvDtype);
}

sigset_t blockStopSignals() {
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGTERM);
  sigaddset(&stopSignals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  return stopSignals;
}

int runServer(const std::string &tool, const ServeFlags &flags,
              ServedModel model, sigset_t stopSignals) {
  auto fail = [&](const Status &s) {
    std::cerr << tool << ": error: " << s.message() << "\n";
    return 1;
  };
  Expected<std::optional<TokenId>> eos =
      server::findEosToken(*model.tokenizer, model.tokenizerConfig);
  if (!eos)
    return fail(eos.status());
  Expected<EngineSetup> setup = buildEngine(
      model.plan, flags.engine, *eos, flags.seed, std::move(model.draftPlan));
  if (!setup)
    return fail(setup.status());

  auto metrics = std::make_shared<server::ServerMetrics>();
  server::AsyncEngineOptions engineOptions;
  engineOptions.maxQueuedRequests = flags.maxQueuedRequests;
  auto asyncEngine = std::make_shared<server::AsyncEngine>(
      std::move(setup->engine), metrics, engineOptions);

  server::HttpServerOptions http = flags.http;
  if (http.servedModelName.empty())
    http.servedModelName = model.defaultName;
  http.maxModelLen = setup->maxModelLen;
  // Every sequence the engine may hold can have its stream open.
  http.numThreads = flags.engine.maxNumSeqs + flags.maxQueuedRequests + 4;
  http.eosTokenId = *eos;
  if (model.tokenizerConfig.hasChatTemplate()) {
    // A template Folio cannot parse leaves completions working; chat
    // requests are refused with the reason, which is also printed here.
    Expected<std::shared_ptr<const server::ChatTemplate>> chat =
        server::ChatTemplate::create(model.tokenizerConfig);
    if (chat)
      http.chatTemplate = std::move(*chat);
    else
      http.chatTemplateError = chat.status().message();
  }
  server::HttpServer httpServer(http, asyncEngine, model.tokenizer, metrics);
  Expected<int> port = httpServer.bind();
  if (!port)
    return fail(port.status());

  std::thread signalThread([&] {
    int signal = 0;
    sigwait(&stopSignals, &signal);
    std::cout << tool << ": " << (signal == SIGTERM ? "SIGTERM" : "SIGINT")
              << ": finishing " << asyncEngine->numInFlight()
              << " sequences in flight, admitting no new requests" << std::endl;
    asyncEngine->drainAndStop();
    httpServer.stop();
  });

  const KVCacheConfig &kv = setup->kv;
  std::cout << tool << ": serving '" << http.servedModelName << "' on http://"
            << http.host << ":" << *port << " (max-model-len "
            << setup->maxModelLen << ", " << kv.numBlocks - 1
            << " KV blocks of " << kv.blockSize << " tokens, prefix caching "
            << (flags.engine.prefixCaching ? "on" : "off") << ", EOS "
            << (*eos ? "token " + std::to_string(**eos) : std::string("none"))
            << (http.chatTemplate
                    ? ", chat template " + http.chatTemplate->path()
                : !http.chatTemplateError.empty()
                    ? ", chat disabled: " + http.chatTemplateError
                    : std::string(", default chat format"))
            << speculationSummary(flags.engine.speculative) << ")" << std::endl;
  Status served = httpServer.listen();
  if (!served) {
    pthread_kill(signalThread.native_handle(), SIGTERM);
    signalThread.join();
    return fail(served);
  }
  signalThread.join();
  std::cout << tool << ": stopped" << std::endl;
  return 0;
}

} // namespace folio::tools
