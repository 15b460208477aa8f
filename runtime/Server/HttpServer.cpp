//===- HttpServer.cpp - The OpenAI-compatible HTTP front end --------------===//

#include "runtime/Server/HttpServer.h"
#include "runtime/Server/ServerContext.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <mutex>
#include <thread>

#include <sys/socket.h>

using namespace folio;
using namespace folio::server;
using Json = nlohmann::json;

namespace {

/// Compares without an early exit, so timing does not reveal the key.
bool sameSecret(const std::string &a, const std::string &b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i)
    diff |=
        static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0 && !b.empty();
}

/// Metric labels: the known endpoints, everything else as one label.
std::string endpointLabel(const std::string &path) {
  for (const char *known : {"/v1/completions", "/v1/chat/completions",
                            "/v1/models", "/health", "/metrics"})
    if (path == known)
      return path;
  return "other";
}

} // namespace

void folio::server::sendError(httplib::Response &response,
                              const ApiError &error) {
  response.status = error.status;
  response.set_content(errorBody(error), "application/json");
}

struct HttpServer::Impl {
  ServerContext context;
  httplib::Server server;
  std::mutex mutex;
  bool stopRequested = false;
  bool listening = false;
  /// The listening socket, once httplib created it.
  std::atomic<socket_t> listenSocket{INVALID_SOCKET};
};

HttpServer::HttpServer(HttpServerOptions options,
                       std::shared_ptr<AsyncEngine> engine,
                       std::shared_ptr<const Tokenizer> tokenizer,
                       std::shared_ptr<ServerMetrics> metrics)
    : impl_(std::make_unique<Impl>()) {
  ServerContext &c = impl_->context;
  c.options = std::move(options);
  c.engine = std::move(engine);
  c.tokenizer = std::move(tokenizer);
  c.metrics = std::move(metrics);
  httplib::Server &s = impl_->server;

  size_t threads = std::max<size_t>(c.options.numThreads, 2);
  s.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s.set_payload_max_length(c.options.maxRequestBytes);
  s.set_tcp_nodelay(true); // Stream tokens as they come.
  // Debian's compiled cpp-httplib listens with a backlog of 5: a burst of
  // clients connecting at once (64 streams opened together) overflows it,
  // and the kernel drops their handshakes, which clients resend a second
  // later or give up on. bind() raises the backlog of the socket seen here.
  Impl *impl = impl_.get();
  s.set_socket_options([impl](socket_t sock) {
    httplib::default_socket_options(sock);
    impl->listenSocket = sock;
  });

  s.set_pre_routing_handler(
      [&c](const httplib::Request &req, httplib::Response &res) {
        if (c.options.apiKey.empty() || req.path.rfind("/v1/", 0) != 0)
          return httplib::Server::HandlerResponse::Unhandled;
        std::string auth = req.get_header_value("Authorization");
        if (sameSecret(auth, "Bearer " + c.options.apiKey))
          return httplib::Server::HandlerResponse::Unhandled;
        ApiError e;
        e.status = 401;
        e.code = "invalid_api_key";
        e.message = auth.empty() ? "this server needs an API key: send "
                                   "\"Authorization: Bearer <key>\""
                                 : "the API key in the Authorization header is "
                                   "not this server's";
        sendError(res, e);
        return httplib::Server::HandlerResponse::Handled;
      });

  // httplib's own refusals (no route, body too large) get OpenAI's shape
  // too; handlers' errors already have a body.
  s.set_error_handler([&c](const httplib::Request &req,
                           httplib::Response &res) {
    if (!res.body.empty())
      return;
    ApiError e;
    e.status = res.status;
    // A form body within --max-request-bytes was refused for being
    // a form; one over it for its size.
    bool form = req.get_header_value("Content-Type")
                        .rfind("application/x-www-form-urlencoded", 0) == 0 &&
                std::strtoull(req.get_header_value("Content-Length").c_str(),
                              nullptr, 10) <= c.options.maxRequestBytes;
    if (res.status == 413 && form)
      // cpp-httplib reads form bodies only up to 8 KiB, whatever the
      // payload limit: curl -d sends this type unless told otherwise.
      e.message = "the request body is sent as "
                  "application/x-www-form-urlencoded (curl -d's "
                  "default), which is read only up to 8192 bytes; send "
                  "\"Content-Type: application/json\"";
    else if (res.status == 413)
      e.message = "the request body is larger than " +
                  std::to_string(c.options.maxRequestBytes) +
                  " bytes (--max-request-bytes)";
    else if (res.status == 404)
      e.message = "no endpoint " + req.method + " " + req.path +
                  "; endpoints: POST /v1/completions, POST "
                  "/v1/chat/completions, GET /v1/models, GET "
                  "/v1/models/{model}, GET /health, GET /metrics";
    else if (res.status == 400)
      e.message = "the HTTP request could not be read (a malformed "
                  "request line or header, a body without Content-Length "
                  "or chunked encoding, or a Content-Encoding)";
    else
      e.message = "HTTP error " + std::to_string(res.status);
    res.set_content(errorBody(e), "application/json");
  });

  s.set_logger([&c](const httplib::Request &req, const httplib::Response &res) {
    c.metrics->recordHttpResponse(endpointLabel(req.path), res.status);
  });

  s.Get("/health", [&c](const httplib::Request &, httplib::Response &res) {
    if (c.engine->isDraining()) {
      ApiError e;
      e.status = 503;
      e.message = "the server is shutting down";
      sendError(res, e);
      return;
    }
    res.set_content("{\"status\":\"ok\"}", "application/json");
  });

  s.Get("/metrics", [&c](const httplib::Request &, httplib::Response &res) {
    res.set_content(c.metrics->render(), "text/plain; version=0.0.4");
  });

  auto modelObject = [&c] {
    return Json{{"id", c.options.servedModelName},
                {"object", "model"},
                {"created", int64_t(c.started)},
                {"owned_by", "folio"},
                {"max_model_len", c.options.maxModelLen}};
  };
  s.Get("/v1/models", [modelObject](const httplib::Request &,
                                    httplib::Response &res) {
    Json body = {{"object", "list"}, {"data", Json::array({modelObject()})}};
    res.set_content(body.dump(), "application/json");
  });
  // One model, as OpenAI's retrieve-model endpoint gives it.
  s.Get(R"(/v1/models/(.+))",
        [&c, modelObject](const httplib::Request &req, httplib::Response &res) {
          std::string id = req.matches[1];
          if (id != c.options.servedModelName) {
            ApiError e;
            e.status = 404;
            e.code = "model_not_found";
            e.message = "the model '" + id +
                        "' does not exist; this server serves '" +
                        c.options.servedModelName + "'";
            return sendError(res, e);
          }
          res.set_content(modelObject().dump(), "application/json");
        });

  s.Post("/v1/completions",
         [&c](const httplib::Request &req, httplib::Response &res) {
           handleGenerate(c, Endpoint::Completions, req, res);
         });
  s.Post("/v1/chat/completions",
         [&c](const httplib::Request &req, httplib::Response &res) {
           handleGenerate(c, Endpoint::ChatCompletions, req, res);
         });
  // The generating endpoints exist, for POST: 405, not "no endpoint".
  for (const char *path : {"/v1/completions", "/v1/chat/completions"})
    s.Get(path, [](const httplib::Request &req, httplib::Response &res) {
      ApiError e;
      e.status = 405;
      e.message = req.path + " takes POST with a JSON body, not GET";
      res.set_header("Allow", "POST");
      sendError(res, e);
    });
}

HttpServer::~HttpServer() { stop(); }

Expected<int> HttpServer::bind() {
  const HttpServerOptions &o = impl_->context.options;
  int port = 0;
  if (o.port == 0)
    port = impl_->server.bind_to_any_port(o.host);
  else if (impl_->server.bind_to_port(o.host, o.port))
    port = o.port;
  if (port > 0) {
    // listen() again on a listening socket only changes its backlog.
    socket_t sock = impl_->listenSocket;
    if (sock != INVALID_SOCKET && ::listen(sock, SOMAXCONN) != 0)
      return Status::internal("cannot raise the listen backlog of " + o.host +
                              ":" + std::to_string(port));
    return port;
  }
  return Status::invalidArgument("cannot listen on " + o.host + ":" +
                                 std::to_string(o.port) +
                                 " (address in use, or not an address of "
                                 "this machine)");
}

Status HttpServer::listen() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (impl_->stopRequested)
      return Status::ok();
    impl_->listening = true;
  }
  bool ok = impl_->server.listen_after_bind();
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->listening = false;
  }
  if (!ok)
    return Status::internal("the HTTP server stopped with an error");
  return Status::ok();
}

void HttpServer::stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stopRequested = true;
  }
  // httplib's stop() does nothing until its loop runs, so a stop that
  // comes while listen() is starting waits for the loop to run (or fail).
  for (;;) {
    if (impl_->server.is_running()) {
      impl_->server.stop();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(impl_->mutex);
      if (!impl_->listening)
        return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}
