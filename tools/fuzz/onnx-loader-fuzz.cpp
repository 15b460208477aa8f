//===- onnx-loader-fuzz.cpp - libFuzzer target for the ONNX loader --------===//
//
// Feeds arbitrary bytes to loadModelFromBuffer and, when a model loads, reads
// everything it exposes, so that a view that points past its buffer shows up
// under AddressSanitizer. External data resolves against a scratch directory
// holding one small weights file, so the path checks and range checks are
// fuzzed too; the loader only ever reads, so nothing outside that directory
// can change. Built and run by run-fuzz.sh (target `loader`).
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/ONNX/Loader.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>
#include <string>

using namespace folio::onnx;

namespace {

std::string scratchDir;

/// Touches every byte and calls every accessor of a loaded model.
uint64_t exercise(const Model &model) {
  uint64_t sum = model.getIrVersion() + model.getNumMappedFiles();
  auto touch = [&](const TensorData &tensor) {
    for (uint8_t byte : tensor.getBytes())
      sum += byte;
    if (llvm::Expected<std::vector<int64_t>> values = tensor.readIntegers())
      sum += values->size();
    else
      llvm::consumeError(values.takeError());
    sum += formatDims(tensor.getDims()).size();
  };
  const Graph &graph = model.getGraph();
  for (const TensorData &tensor : graph.getInitializers())
    touch(tensor);
  for (const ValueInfo &info : graph.getInputs())
    sum += formatShape(info.shape).size();
  for (const ValueInfo &info : graph.getOutputs())
    sum += graph.findProducer(info.name) != nullptr;
  for (const Node &node : graph.getNodes()) {
    sum += node.describe().size();
    for (const Attribute &attr : node.getAttributes()) {
      if (attr.getKind() == Attribute::Kind::Tensor)
        touch(attr.getTensor());
      // The typed getters must fail cleanly on a kind mismatch.
      if (llvm::Expected<int64_t> value = node.getInt(attr.getName(), 0))
        sum += *value;
      else
        llvm::consumeError(value.takeError());
    }
  }
  return sum;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  llvm::SmallString<128> dir;
  if (llvm::sys::fs::createUniqueDirectory("folio-onnx-fuzz", dir)) {
    llvm::errs() << "cannot create a scratch directory\n";
    std::abort();
  }
  scratchDir = dir.str().str();
  // libFuzzer has no teardown hook, but it leaves through exit().
  std::atexit([] { llvm::sys::fs::remove_directories(scratchDir); });
  // 4 KiB of a byte pattern: enough for the seed models' external tensors.
  std::string weights(4096, '\0');
  for (size_t i = 0; i < weights.size(); ++i)
    weights[i] = static_cast<char>(i * 7);
  std::error_code ec;
  llvm::raw_fd_ostream out(scratchDir + "/weights.bin", ec);
  if (ec) {
    llvm::errs() << "cannot write weights.bin: " << ec.message() << "\n";
    std::abort();
  }
  out << weights;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::MemoryBufferRef buffer(
      llvm::StringRef(reinterpret_cast<const char *>(data), size), "fuzz");
  llvm::Expected<std::unique_ptr<Model>> model =
      loadModelFromBuffer(buffer, scratchDir);
  // FOLIO_FUZZ_VERBOSE=1 prints each outcome: for replaying one input.
  static const bool verbose = std::getenv("FOLIO_FUZZ_VERBOSE") != nullptr;
  if (!model) {
    std::string message = llvm::toString(model.takeError());
    // Every failure must come with a message.
    if (message.empty())
      std::abort();
    if (verbose)
      llvm::errs() << "error: " << message << "\n";
    return 0;
  }
  if (verbose)
    llvm::errs() << "loaded: " << (*model)->getGraph().getNodes().size()
                 << " nodes, " << (*model)->getGraph().getInitializers().size()
                 << " initializers\n";
  volatile uint64_t sink = exercise(**model);
  (void)sink;
  return 0;
}
