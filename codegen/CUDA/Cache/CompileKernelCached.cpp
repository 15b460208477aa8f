//===- CompileKernelCached.cpp - NVRTC behind the kernel cache ------------===//

#include "codegen/CUDA/Cache/KernelCache.h"

namespace folio::cuda {

cpu::Status compileKernelCached(const std::string &kernelName,
                                const std::string &specKey,
                                const std::string &source,
                                const std::string &arch,
                                const KernelCacheOptions &cacheOptions,
                                CompiledKernel &out, CacheOutcome *outcome,
                                const std::vector<std::string> &options) {
  auto compile = [&](CompiledKernel &k) {
    return compileWithNvrtc(kernelName, source, arch, k, options);
  };
  // Without NVRTC there is nothing to cache, and a key naming version
  // "none" must never be served.
  if (!nvrtcAvailable())
    return compile(out);
  std::string key =
      kernelCacheKey(specKey, source, arch, nvrtcVersion(), options);
  return compileCached(cacheOptions, key, compile, out, outcome);
}

} // namespace folio::cuda
