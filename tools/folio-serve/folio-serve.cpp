//===- folio-serve.cpp - The OpenAI-compatible HTTP server ----------------===//
//
// folio-serve --model M.folio|M.onnx --tokenizer tokenizer.json
//             [--host 127.0.0.1] [--port 8000] [--api-key K]
//             [--served-model-name NAME] [engine and speculative flags]
//
// Loads (or compiles) the model, builds the continuous-batching engine,
// runs it on its own thread and serves /v1/completions,
// /v1/chat/completions, /v1/models, /health and /metrics until SIGTERM or
// SIGINT, which drain the requests in flight before the process exits
// (tools/common/Serve.h). See docs/server.md.
//
//===----------------------------------------------------------------------===//

#include "tools/common/LoadModel.h"
#include "tools/common/Serve.h"

#include <iostream>

using namespace folio;

namespace {

const char *const kUsage =
    "usage: folio-serve --model M.folio|M.onnx --tokenizer tokenizer.json "
    "[options]\n";
const char *const kKVDtype =
    "KV-cache storage when compiling an .onnx: auto (default), f32, f16, "
    "bf16, fp8_e4m3, fp8_e5m2, int8, int4, int2; with a .folio plan it must "
    "be what the plan was compiled with";

struct Options {
  std::string model, tokenizer;
  tools::ServeFlags serve;
  bool help = false;
};

Status parse(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      o.help = true;
      return Status::ok();
    }
    bool handled = false;
    if (Status s = o.serve.parse(argc, argv, i, handled); !s)
      return s;
    if (handled)
      continue;
    if (arg != "--model" && arg != "--tokenizer")
      return Status::invalidArgument("unknown argument '" + arg + "'");
    if (i + 1 >= argc)
      return Status::invalidArgument(arg + " needs a value");
    (arg == "--model" ? o.model : o.tokenizer) = argv[++i];
  }
  if (o.model.empty() || o.tokenizer.empty())
    return Status::invalidArgument("--model and --tokenizer are required");
  return o.serve.engine.finish();
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
  Options o;
  Status parsed = parse(argc, argv, o);
  if (o.help) {
    std::cout << kUsage << o.serve.usage(kKVDtype);
    return 0;
  }
  if (Status s = parsed; !s) {
    std::cerr << "folio-serve: error: " << s.message() << "\n"
              << kUsage << o.serve.usage(kKVDtype);
    return 2;
  }
  // Before any thread starts (the compiler's and the engine's).
  sigset_t stopSignals = tools::blockStopSignals();

  tools::ServedModel model;
  Expected<Tokenizer> tokenizer = Tokenizer::fromFile(o.tokenizer);
  if (!tokenizer)
    return fail(tokenizer.status());
  model.tokenizer = std::make_shared<const Tokenizer>(std::move(*tokenizer));
  Expected<server::TokenizerConfig> tokenizerConfig =
      server::readTokenizerConfig(o.tokenizer);
  if (!tokenizerConfig)
    return fail(tokenizerConfig.status());
  model.tokenizerConfig = std::move(*tokenizerConfig);

  Expected<std::shared_ptr<const plan::Plan>> plan =
      tools::loadModelPlan(o.model, o.serve.engine);
  if (!plan)
    return fail(plan.status());
  model.plan = std::move(*plan);
  Expected<std::shared_ptr<const plan::Plan>> draftPlan = tools::loadDraftPlan(
      o.serve.engine.speculative, tools::modelLoadOptions(o.serve.engine));
  if (!draftPlan)
    return fail(draftPlan.status());
  model.draftPlan = std::move(*draftPlan);
  model.defaultName = stem(o.model);
  return tools::runServer("folio-serve", o.serve, std::move(model),
                          stopSignals);
}
