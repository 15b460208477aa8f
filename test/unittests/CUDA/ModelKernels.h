//===- ModelKernels.h - Every CUDA kernel the zoo models make ---*- C++ -*-===//
//
// The bundled model and one export of every zoo and zoo-hf architecture
// (the cached one: every kernel kind appears in it; every other export
// too for sm_90a), compiled to plans as
// folioc compiles them for a GPU target (bf16 weights, a model's own
// quantized weights kept), plus the bundled model with every other weight
// dtype and with f32, bf16 and int4 caches, and the CUDA kernels collected
// from those plans: what the NVRTC
// and emulation tests of the models' kernels cover.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TEST_UNITTESTS_CUDA_MODELKERNELS_H
#define FOLIO_TEST_UNITTESTS_CUDA_MODELKERNELS_H

#include "compiler/Plan/CudaKernels.h"
#include "compiler/Plan/LowerToPlan.h"

#include "llvm/Support/Error.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace folio::cuda::test {

/// The architecture directories of the zoo and the zoo-hf, each in path
/// order; `root` is the source tree.
inline std::vector<std::string> archDirs(const std::string &root) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const char *zoo : {"/models/zoo", "/models/zoo-hf"}) {
    size_t first = out.size();
    for (const fs::directory_entry &e : fs::directory_iterator(root + zoo))
      if (e.is_directory())
        out.push_back(e.path().string());
    std::sort(out.begin() + long(first), out.end());
  }
  return out;
}

/// The models, the bundled one first, then one export per architecture.
inline std::vector<std::string> modelPaths(const std::string &root) {
  std::vector<std::string> out = {root + "/models/bundled/target.onnx"};
  for (const std::string &dir : archDirs(root))
    for (const char *form :
         {"/cached.onnx", "/sdpa_cached.onnx", "/optimum.onnx"})
      if (std::filesystem::exists(dir + form)) {
        out.push_back(dir + form);
        break;
      }
  return out;
}

/// A model whose lm_head is its embedding table (Qwen2 from transformers).
inline std::string tiedModelPath(const std::string &root) {
  return root + "/models/zoo-hf/qwen2/eager_cached.onnx";
}

/// Every export of every zoo and zoo-hf architecture (eager, Optimum,
/// torch.export, ONNX Runtime's builder, ...), in path order: their
/// kernels differ from the cached form's in the row programs the exporters'
/// op orders make and in stored weight dtypes.
inline std::vector<std::string> allExportPaths(const std::string &root) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const std::string &dir : archDirs(root))
    for (const fs::directory_entry &e : fs::directory_iterator(dir))
      if (e.is_regular_file() && e.path().extension() == ".onnx")
        out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

/// Cache dtypes the bundled model is also compiled with (f32 weights),
/// besides each target's default.
inline constexpr const char *kBundledCacheDtypes[] = {"f32", "bf16", "int4"};

/// Every distinct kernel (by name) of the models' plans for `target`;
/// failures to compile or collect, and plan kernels no CUDA generator
/// covers, are appended to `errors`.
inline std::map<std::string, compiler::PlannedCudaKernel>
modelKernels(const std::string &root, const std::string &target,
             std::vector<std::string> &errors) {
  struct Compile {
    std::string path, weights, cache;
  };
  std::vector<Compile> compiles;
  const std::vector<std::string> paths = modelPaths(root);
  for (const std::string &path : paths)
    compiles.push_back({path, "", "auto"});
  // The other exports once, for the fp8 target: the architecture's shapes
  // are the same in every export, so the int8 target's attention kernels
  // differ from the cached form's in nothing.
  if (target == "sm_90a")
    for (const std::string &path : allExportPaths(root))
      if (std::find(paths.begin(), paths.end(), path) == paths.end())
        // folioc keeps an f16 export's weights in f16 by default.
        compiles.push_back({path,
                            path.find("fp16") != std::string::npos ? "f16" : "",
                            "auto"});
  for (const char *dtype : {"f32", "f16", "int8", "fp8_e4m3", "int4"})
    compiles.push_back({paths.front(), dtype, "auto"});
  // A tied table read from its lm_head's int8, fp8 or int4 packing (f32:
  // the widened table the CUDA executor's test compares it with).
  for (const char *dtype : {"f32", "int8", "fp8_e4m3", "int4"})
    compiles.push_back({tiedModelPath(root), dtype, "auto"});
  // The other cache dtypes, for the CUDA executor's whole forwards; an f32
  // cache also under narrower weights, whose prefill attention runs on
  // tensor cores.
  for (const char *cache : kBundledCacheDtypes)
    compiles.push_back({paths.front(), "f32", cache});
  compiles.push_back({paths.front(), "bf16", "f32"});
  std::map<std::string, compiler::PlannedCudaKernel> kernels;
  for (const auto &[path, dtype, cache] : compiles) {
    std::string what = path + " for " + target + (dtype.empty() ? "" : " ") +
                       dtype + " (" + cache + " cache): ";
    mlir::folio::CompileToPlanOptions options;
    options.target = target;
    options.weightDtype = dtype.empty() ? "bf16" : dtype;
    options.kvCacheDtype = cache;
    options.keepSourceQuantization = dtype.empty();
    auto p = mlir::folio::compileONNXToPlan(path, options);
    if (!p) {
      errors.push_back(what + llvm::toString(p.takeError()));
      continue;
    }
    std::vector<compiler::PlannedCudaKernel> planned;
    std::vector<std::string> missing;
    if (Status st = compiler::collectAllCudaKernels(*p, planned, missing);
        !st) {
      errors.push_back(what + st.message());
      continue;
    }
    // What the generators do not cover is a failure too: every kernel of
    // these plans is generated.
    for (const std::string &kind : missing)
      errors.push_back(what + "no CUDA generator for its " + kind + " kernels");
    for (const compiler::PlannedCudaKernel &k : planned)
      kernels.emplace(k.kernel.name, k);
  }
  return kernels;
}

} // namespace folio::cuda::test

#endif // FOLIO_TEST_UNITTESTS_CUDA_MODELKERNELS_H
