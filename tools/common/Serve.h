//===- Serve.h - The HTTP serving loop of the serving tools ----*- C++ -*-===//
//
// What folio-serve does once it has a model: its flags (address, key,
// limits and the engine's), the engine on its own thread, the HTTP server,
// and SIGTERM/SIGINT draining the requests in flight. Model binaries
// (folioc --emit=binary) run the same code on the model they carry.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_COMMON_SERVE_H
#define FOLIO_TOOLS_COMMON_SERVE_H

#include "runtime/Server/ChatTemplate.h"
#include "runtime/Server/HttpServer.h"
#include "runtime/Tokenizer/Tokenizer.h"
#include "tools/common/EngineFlags.h"

#include <csignal>
#include <memory>
#include <string>

namespace folio::tools {

struct ServeFlags {
  server::HttpServerOptions http;
  size_t maxQueuedRequests = 192;
  uint64_t seed = 0;
  EngineFlags engine;

  /// Parses argv[i] when it is a server or engine flag (then `handled`),
  /// advancing `i` past its value.
  Status parse(int argc, char **argv, int &i, bool &handled);
  /// The usage lines of these flags (--kv-cache-dtype described by
  /// `kvDtype`).
  std::string usage(const std::string &kvDtype) const;
};

/// The model a server serves.
struct ServedModel {
  std::shared_ptr<const plan::Plan> plan;
  std::shared_ptr<const plan::Plan> draftPlan; ///< null: no draft model
  std::shared_ptr<const Tokenizer> tokenizer;
  server::TokenizerConfig tokenizerConfig;
  /// The served name unless --served-model-name.
  std::string defaultName;
};

/// Blocks SIGTERM and SIGINT in the calling thread (and so in every thread
/// started later; call it first in main) and ignores SIGPIPE: runServer
/// takes the stop signals on one thread, and a client that vanishes must
/// fail a write, not kill the process. Returns the blocked set.
sigset_t blockStopSignals();

/// Serves `model` until SIGTERM or SIGINT (in `stopSignals`) has drained
/// the requests in flight; messages start with `tool`. The exit status.
int runServer(const std::string &tool, const ServeFlags &flags,
              ServedModel model, sigset_t stopSignals);

} // namespace folio::tools

#endif // FOLIO_TOOLS_COMMON_SERVE_H
