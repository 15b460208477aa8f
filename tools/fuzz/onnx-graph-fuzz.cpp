//===- onnx-graph-fuzz.cpp - ONNX graphs through the whole compiler -------===//
//
// libFuzzer target: each input is an ONNX model, compiled as folioc and
// folio-run compile it (compileONNXToPlan: load, import, raise, page-kv,
// quantize-kv, lower, speculative, fuse, lower to a plan), with a KV-cache
// dtype picked from the input's bytes. The compiler must either refuse the
// model with a message or produce a plan that validates, survives a
// write/read round trip and loads into the CPU executor and runs one step
// or is refused there (RunPlan.h). The custom mutator mutates at the graph
// level (GraphMutator.h); a few mutations stay byte-level, so the loader's
// refusals keep their coverage. Built and run by run-fuzz.sh.
//
//===----------------------------------------------------------------------===//

#include "tools/fuzz/GraphMutator.h"
#include "tools/fuzz/RunPlan.h"

#include "compiler/Plan/LowerToPlan.h"
#include "runtime/Plan/PlanIO.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace {

std::string scratchDir;
std::string modelPath;
bool verbose = false;

/// The KV-cache dtypes the compile is asked for, one per input (by a hash
/// of its bytes, so that a crash replays the same way).
constexpr const char *kDTypes[] = {"auto", "f32",  "bf16",    "int8",
                                   "int4", "int2", "fp8_e4m3"};

uint64_t hashBytes(const uint8_t *data, size_t size) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < size; i += 1 + size / 4096)
    h = (h ^ data[i]) * 1099511628211ULL;
  return h ^ size;
}

[[noreturn]] void finding(const std::string &what) {
  std::fprintf(stderr, "onnx-graph-fuzz: %s\n", what.c_str());
  std::abort();
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  llvm::SmallString<128> dir;
  if (llvm::sys::fs::createUniqueDirectory("folio-onnx-graph-fuzz", dir))
    finding("cannot create a scratch directory");
  scratchDir = dir.str().str();
  modelPath = scratchDir + "/model.onnx";
  std::atexit([] { llvm::sys::fs::remove_directories(scratchDir); });
  // External data the seeds name: the zoo's external-weights llama, and
  // the loader seeds' weights.bin.
  llvm::sys::fs::copy_file(FOLIO_SOURCE_DIR
                           "/models/zoo/llama/cached_external.onnx.data",
                           scratchDir + "/cached_external.onnx.data");
  std::string weights(4096, '\0');
  for (size_t i = 0; i < weights.size(); ++i)
    weights[i] = static_cast<char>(i * 7);
  std::error_code ec;
  llvm::raw_fd_ostream out(scratchDir + "/weights.bin", ec);
  out << weights;
  verbose = std::getenv("FOLIO_FUZZ_VERBOSE") != nullptr;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(modelPath, ec);
    if (ec)
      finding("cannot write " + modelPath + ": " + ec.message());
    out.write(reinterpret_cast<const char *>(data), size);
  }
  mlir::folio::CompileToPlanOptions options;
  options.kvCacheDtype =
      kDTypes[hashBytes(data, size) % (sizeof(kDTypes) / sizeof(*kDTypes))];
  options.onWarning = [](const std::string &) {};
  llvm::Expected<folio::plan::Plan> plan =
      mlir::folio::compileONNXToPlan(modelPath, options);
  if (!plan) {
    std::string message = llvm::toString(plan.takeError());
    if (message.empty())
      finding("the compiler failed without a message");
    if (verbose)
      llvm::errs() << "refused (" << options.kvCacheDtype << "): " << message
                   << "\n";
    return 0;
  }
  // What the compiler writes, the runtime must read back as it was.
  if (folio::Status s = folio::plan::validatePlan(*plan); !s)
    finding("the compiler wrote a plan that fails validation: " + s.message());
  folio::Expected<folio::plan::Plan> reread =
      folio::plan::parsePlan(folio::plan::serializePlan(*plan));
  if (!reread)
    finding("a compiled plan does not read back: " + reread.status().message());
  folio::Status ran = folio::fuzz::runPlanOnce(
      std::make_shared<const folio::plan::Plan>(std::move(*reread)));
  if (verbose)
    llvm::errs() << "compiled (" << options.kvCacheDtype << "), "
                 << (ran ? std::string("ran") : "run refused: " + ran.message())
                 << "\n";
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  std::mt19937_64 rng(seed);
  folio_onnx::ModelProto model;
  // A twentieth of the time, and for whatever does not parse: bytes.
  if (rng() % 20 == 0 || !model.ParseFromArray(data, int(size)))
    return LLVMFuzzerMutate(data, size, maxSize);
  for (uint64_t n = 1 + rng() % 3; n > 0; --n)
    folio::fuzz::mutateGraph(model, rng);
  std::string bytes;
  if (!model.SerializeToString(&bytes) || bytes.size() > maxSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}

extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t *data1, size_t size1,
                                            const uint8_t *data2, size_t size2,
                                            uint8_t *out, size_t maxOutSize,
                                            unsigned seed) {
  std::mt19937_64 rng(seed);
  folio_onnx::ModelProto first, second;
  if (!first.ParseFromArray(data1, int(size1)) ||
      !second.ParseFromArray(data2, int(size2)))
    return 0;
  folio::fuzz::crossOverGraphs(first, second, rng);
  std::string bytes;
  if (!first.SerializeToString(&bytes) || bytes.size() > maxOutSize)
    return 0;
  std::memcpy(out, bytes.data(), bytes.size());
  return bytes.size();
}
