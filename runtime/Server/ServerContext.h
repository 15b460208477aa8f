//===- ServerContext.h - What the HTTP handlers share ----------*- C++ -*-===//
//
// Internal to runtime/Server's HTTP front end (it includes cpp-httplib).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SERVER_SERVERCONTEXT_H
#define FOLIO_RUNTIME_SERVER_SERVERCONTEXT_H

#include "runtime/Server/HttpServer.h"
#include "runtime/Server/OpenAIRequest.h"

#include <httplib.h>

#include <atomic>
#include <ctime>

namespace folio::server {

struct ServerContext {
  HttpServerOptions options;
  std::shared_ptr<AsyncEngine> engine;
  std::shared_ptr<const Tokenizer> tokenizer;
  std::shared_ptr<ServerMetrics> metrics;
  std::atomic<uint64_t> nextRequest{0};
  std::time_t started = std::time(nullptr);
};

/// Sets `response` to `error` in OpenAI's JSON error shape.
void sendError(httplib::Response &response, const ApiError &error);

/// POST /v1/completions and /v1/chat/completions.
void handleGenerate(ServerContext &context, Endpoint endpoint,
                    const httplib::Request &request,
                    httplib::Response &response);

} // namespace folio::server

#endif // FOLIO_RUNTIME_SERVER_SERVERCONTEXT_H
