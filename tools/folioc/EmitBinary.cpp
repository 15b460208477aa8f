//===- EmitBinary.cpp - folioc --emit=binary ------------------------------===//

#include "tools/folioc/EmitBinary.h"

#include "runtime/Plan/PlanIO.h"
#include "runtime/Tokenizer/Tokenizer.h"
#include "tools/common/ModelBinary.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

namespace folio::tools {
namespace {

Expected<std::string> readFile(const std::string &path, const char *what) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer)
    return Status::notFound(std::string(what) + ": cannot read '" + path +
                            "': " + buffer.getError().message());
  return (*buffer)->getBuffer().str();
}

/// folio-model-stub in the directory of the running folioc.
Expected<std::string> defaultStub(const std::string &argv0) {
  static int anchor;
  std::string self = llvm::sys::fs::getMainExecutable(argv0.c_str(), &anchor);
  if (self.empty())
    return Status::notFound("--emit=binary: cannot tell where folioc runs "
                            "from to find folio-model-stub; pass "
                            "--runtime-stub PATH");
  llvm::SmallString<256> stub(llvm::sys::path::parent_path(self));
  llvm::sys::path::append(stub, "folio-model-stub");
  if (!llvm::sys::fs::exists(stub))
    return Status::notFound(
        "--emit=binary: the serving runtime '" + std::string(stub) +
        "' is missing (it is built with folio-serve, which needs "
        "cpp-httplib and nlohmann-json); build it or pass --runtime-stub "
        "PATH");
  return std::string(stub);
}

} // namespace

Status emitModelBinary(const plan::Plan &plan,
                       const EmitBinaryOptions &options) {
  Expected<std::string> tokenizerJson =
      readFile(options.tokenizerPath, "--tokenizer");
  if (!tokenizerJson)
    return tokenizerJson.status();
  Expected<Tokenizer> tokenizer = Tokenizer::fromJson(*tokenizerJson);
  if (!tokenizer)
    return Status::invalidArgument("--tokenizer " + options.tokenizerPath +
                                   ": " + tokenizer.status().message());
  int64_t vocab = plan.configValue("vocab", 0);
  if (vocab > 0 && tokenizer->vocabSize() > size_t(vocab))
    return Status::invalidArgument(
        "--tokenizer " + options.tokenizerPath + " has " +
        std::to_string(tokenizer->vocabSize()) +
        " tokens but the model's logits cover " + std::to_string(vocab) +
        "; it is not this model's tokenizer");

  ModelBinaryContents contents;
  contents.tokenizerJson = std::move(*tokenizerJson);
  // The chat template and the special tokens' names live beside
  // tokenizer.json, as folio-serve reads them (runtime/Server/ChatTemplate.h).
  for (auto [name, out] :
       {std::pair{"tokenizer_config.json", &contents.tokenizerConfigJson},
        std::pair{"chat_template.jinja", &contents.chatTemplateJinja}}) {
    llvm::SmallString<256> path(
        llvm::sys::path::parent_path(options.tokenizerPath));
    llvm::sys::path::append(path, name);
    if (!llvm::sys::fs::exists(path))
      continue;
    Expected<std::string> text = readFile(std::string(path), "--tokenizer");
    if (!text)
      return text.status();
    *out = std::move(*text);
  }
  contents.planBytes = plan::serializePlan(plan);
  contents.manifest.name = llvm::sys::path::stem(options.outputPath).str();
  contents.manifest.source = llvm::sys::path::filename(options.modelPath).str();
  contents.manifest.target = options.target;
  if (contents.manifest.name.empty())
    return Status::invalidArgument("-o '" + options.outputPath +
                                   "' names no file for the binary");

  std::string stub = options.stubPath;
  if (stub.empty()) {
    Expected<std::string> found = defaultStub(options.argv0);
    if (!found)
      return found.status();
    stub = *found;
  }
  return writeModelBinary(stub, contents, options.outputPath);
}

} // namespace folio::tools
