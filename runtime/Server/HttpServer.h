//===- HttpServer.h - The OpenAI-compatible HTTP front end -----*- C++ -*-===//
//
// /v1/completions, /v1/chat/completions (server-sent events or one JSON
// body), /v1/models, /health and /metrics over cpp-httplib. Each HTTP
// request runs on a pool thread, which parses and checks the body,
// tokenizes, submits to the AsyncEngine and then turns the request's
// token stream into text (TextStream) and OpenAI JSON. See docs/server.md.
//
// This header keeps cpp-httplib and nlohmann-json out of its users.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SERVER_HTTPSERVER_H
#define FOLIO_RUNTIME_SERVER_HTTPSERVER_H

#include "runtime/Server/AsyncEngine.h"
#include "runtime/Server/ChatTemplate.h"
#include "runtime/Server/ServerMetrics.h"
#include "runtime/Support/Status.h"
#include "runtime/Tokenizer/Tokenizer.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace folio::server {

struct HttpServerOptions {
  /// Loopback unless told otherwise: the server has no TLS.
  std::string host = "127.0.0.1";
  /// 0 binds any free port (bind() says which).
  int port = 8000;
  /// When set, /v1/* requests need "Authorization: Bearer <apiKey>".
  std::string apiKey;
  /// The name /v1/models lists and requests must use.
  std::string servedModelName;
  /// Larger request bodies get 413.
  size_t maxRequestBytes = 1 << 20;
  /// Prompt plus output at most (the engine's max-model-len).
  size_t maxModelLen = 0;
  /// HTTP worker threads; each open stream holds one.
  size_t numThreads = 64;
  /// A stream's writes are at least this far apart; tokens generated in
  /// between go out in one write. Every write wakes the stream's thread and
  /// the client's: with many streams and steps faster than this, those
  /// wake-ups cost more CPU than they are worth (docs/serving-bench.md).
  /// Steps slower than this are streamed as they come; 0 writes each
  /// step's tokens at once.
  std::chrono::milliseconds minStreamInterval{10};
  /// Ends generation (and is left out of the text) unless ignore_eos.
  std::optional<TokenId> eosTokenId;
  /// The model's chat template; chat requests use the default format
  /// (renderDefaultChat) when null.
  std::shared_ptr<const ChatTemplate> chatTemplate;
  /// Why the model's chat template could not be parsed (chat requests are
  /// refused with it), or empty.
  std::string chatTemplateError;
};

class HttpServer {
public:
  HttpServer(HttpServerOptions options, std::shared_ptr<AsyncEngine> engine,
             std::shared_ptr<const Tokenizer> tokenizer,
             std::shared_ptr<ServerMetrics> metrics);
  ~HttpServer();

  /// Binds the listening socket; returns the port.
  Expected<int> bind();
  /// Serves until stop(); returns once the worker threads finished.
  Status listen();
  /// Stops accepting connections; requests in flight finish first.
  void stop();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace folio::server

#endif // FOLIO_RUNTIME_SERVER_HTTPSERVER_H
