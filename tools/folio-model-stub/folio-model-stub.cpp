//===- folio-model-stub.cpp - The serving runtime of a model binary -------===//
//
// NAME [--host 127.0.0.1] [--port 8000] [--api-key K] [...]
//
// folioc --emit=binary copies this executable and appends a compiled model
// to it: plan, tokenizer and manifest (tools/common/ModelBinary.h). At start
// it reads that payload from its own file, maps the plan's weights in place
// and serves it as folio-serve does (tools/common/Serve.h), with
// folio-serve's flags but --model and --tokenizer, which the binary carries.
// Run as built, with no model appended, it says so and exits.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/PlanKVCache.h"
#include "runtime/Plan/PlanIO.h"
#include "tools/common/ModelBinary.h"
#include "tools/common/Serve.h"
#include "tools/folio-model-stub/ModelInfo.h"

#include <iostream>

#include <unistd.h>

using namespace folio;

namespace {

/// The running executable's path, which messages (and the SIGBUS guard)
/// name; /proc/self/exe itself when the file was deleted or renamed over
/// since it started, which still reads the file that runs.
std::string selfPath() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0)
    return "/proc/self/exe";
  std::string path(buf, size_t(n));
  if (path.size() >= 10 &&
      path.compare(path.size() - 10, 10, " (deleted)") == 0)
    return "/proc/self/exe";
  return path;
}

std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

const char *const kKVDtype =
    "the binary's KV-cache dtype is fixed when it is built (see above); a "
    "value given must be that one";

std::string usage(const std::string &tool, const tools::ServeFlags &flags) {
  return "usage: " + tool +
         " [options]\n"
         "  (the model and its tokenizer are embedded in this file; "
         "--model and --tokenizer are refused)\n" +
         flags.usage(kKVDtype);
}

/// The draft of --speculative-model: a .folio plan only, since a model
/// binary carries no compiler.
Expected<std::shared_ptr<const plan::Plan>>
loadDraft(const tools::EngineFlags &flags) {
  const tools::SpeculativeFlags &spec = flags.speculative;
  if (spec.method != "draft")
    return std::shared_ptr<const plan::Plan>();
  const std::string &path = spec.model;
  if (path.size() < 6 || path.compare(path.size() - 6, 6, ".folio") != 0)
    return Status::invalidArgument(
        "--speculative-model " + path +
        ": a model binary carries no compiler, so the draft must be a "
        "compiled .folio plan (folioc " +
        path + " -o draft.folio)");
  Expected<plan::Plan> loaded =
      plan::readPlan(path, plan::ReadPlanOptions{flags.verifyWeights});
  if (!loaded)
    return Status::invalidArgument("--speculative-model " + path + ": " +
                                   loaded.status().message());
  return std::make_shared<const plan::Plan>(std::move(*loaded));
}

} // namespace

int main(int argc, char **argv) {
  std::string tool = baseName(argc > 0 ? argv[0] : "folio-model-stub");
  auto fail = [&](const Status &s, int code = 1) {
    std::cerr << tool << ": error: " << s.message() << "\n";
    return code;
  };
  tools::ServeFlags flags;
  flags.engine.compiledDraftsOnly = true;
  const std::string self = selfPath();
  Expected<tools::EmbeddedModel> embedded = tools::readEmbeddedModel(self);
  if (!embedded)
    return fail(embedded.status());
  const tools::ModelManifest &manifest = embedded->manifest;
  std::string about = "Folio model binary serving '" + manifest.name +
                      "' (compiled from " + manifest.source + " for " +
                      manifest.target + ")";

  // --help as any argument of the command line (before one that fails).
  auto printHelp = [&]() -> int {
    // The metadata's checksum only: hashing the weights is for serving.
    Expected<plan::Plan> plan =
        tools::loadEmbeddedPlan(self, *embedded, plan::ReadPlanOptions{false});
    if (!plan)
      return fail(plan.status());
    std::cout << tool << ": " << about << "\n"
              << tools::describeModelConfig(*plan) << "  tokenizer        "
              << embedded->tokenizerJson.size() << " bytes"
              << (embedded->tokenizerConfigJson.empty()
                      ? ""
                      : ", with its tokenizer_config.json")
              << (embedded->chatTemplateJinja.empty()
                      ? ""
                      : ", with its chat_template.jinja")
              << "\n"
              << "The served name is '" << manifest.name
              << "' unless --served-model-name.\n"
              << usage(tool, flags);
    return 0;
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h")
      return printHelp();
    if (arg == "--model" || arg == "--tokenizer")
      return fail(Status::invalidArgument(
                      arg + ": this binary serves the model embedded in it ('" +
                      manifest.name +
                      "'); serve another model with folio-serve, or build its "
                      "own binary with folioc --emit=binary"),
                  2);
    bool handled = false;
    Status s = flags.parse(argc, argv, i, handled);
    if (s && !handled)
      s = Status::invalidArgument("unknown argument '" + arg + "'");
    if (!s) {
      std::cerr << tool << ": error: " << s.message() << "\n"
                << usage(tool, flags);
      return 2;
    }
  }
  if (Status s = flags.engine.finish(); !s) {
    std::cerr << tool << ": error: " << s.message() << "\n"
              << usage(tool, flags);
    return 2;
  }
  // Before any thread starts (the engine's).
  sigset_t stopSignals = tools::blockStopSignals();

  tools::ServedModel model;
  std::string where = "the tokenizer embedded in " + tool;
  Expected<Tokenizer> tokenizer = Tokenizer::fromJson(embedded->tokenizerJson);
  if (!tokenizer)
    return fail(
        Status::invalidArgument(where + ": " + tokenizer.status().message()));
  model.tokenizer = std::make_shared<const Tokenizer>(std::move(*tokenizer));
  auto text = [](const std::string &section) {
    return section.empty() ? std::nullopt : std::optional<std::string>(section);
  };
  Expected<server::TokenizerConfig> config = server::parseTokenizerConfig(
      text(embedded->tokenizerConfigJson),
      "the tokenizer_config.json embedded in " + tool,
      text(embedded->chatTemplateJinja),
      "the chat_template.jinja embedded in " + tool);
  if (!config)
    return fail(config.status());
  model.tokenizerConfig = std::move(*config);
  Expected<plan::Plan> plan = tools::loadEmbeddedPlan(
      self, *embedded, plan::ReadPlanOptions{flags.engine.verifyWeights});
  if (!plan)
    return fail(plan.status());
  std::string dtype = planKVCacheDType(*plan);
  if (flags.engine.kvCacheDtype != "auto" && flags.engine.kvCacheDtype != dtype)
    return fail(Status::invalidArgument(
        "--kv-cache-dtype " + flags.engine.kvCacheDtype + ": this binary's " +
        "model was compiled with " + dtype +
        " KV caches (rebuild it with folioc --kv-cache-dtype=" +
        flags.engine.kvCacheDtype + " --emit=binary)"));
  model.plan = std::make_shared<const plan::Plan>(std::move(*plan));
  Expected<std::shared_ptr<const plan::Plan>> draft = loadDraft(flags.engine);
  if (!draft)
    return fail(draft.status());
  model.draftPlan = std::move(*draft);
  model.defaultName = manifest.name;
  return tools::runServer(tool, flags, std::move(model), stopSignals);
}
