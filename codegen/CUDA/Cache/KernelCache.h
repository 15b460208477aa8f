//===- KernelCache.h - Compiled kernels cached on disk ----------*- C++ -*-===//
//
// NVRTC takes tenths of a second per kernel and arch; a cache keeps every
// compiled kernel (PTX, cubin, ptxas's log and figures) in one file per
// key. The key is a canonical string of everything the result depends on
// (kernelCacheKey), its file name a hash of it; the entry stores the whole
// key, so a hash collision is a miss, never a wrong kernel. Entries are
// written to a temporary file and renamed into place, so readers see a
// whole entry or none; each carries a checksum, so a truncated or
// corrupted one is detected, removed and recompiled. A lock file per key
// makes concurrent compilers of one kernel compile it once. Plain C++: no
// NVRTC here (the compile step is a callback).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CUDA_CACHE_KERNELCACHE_H
#define FOLIO_CODEGEN_CUDA_CACHE_KERNELCACHE_H

#include "codegen/CPU/Status.h"
#include "codegen/CUDA/NVRTC/Nvrtc.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace folio::cuda {

/// Bumped when the entry layout changes; part of every key, so entries of
/// another layout are never read.
inline constexpr uint32_t kKernelCacheFormat = 1;

/// The cache directory: $FOLIO_CACHE_DIR, else $XDG_CACHE_HOME/folio,
/// else $HOME/.cache/folio, each with "/kernels" appended; "" when none
/// of those variables is set.
std::string defaultKernelCacheDir();

/// Where compiled kernels are cached. `enabled` false compiles every time
/// and writes nothing.
struct KernelCacheOptions {
  bool enabled = true;
  /// Empty: defaultKernelCacheDir().
  std::string dir;
};

/// The canonical key of one compile: the kernel's spec key (every
/// specialization parameter, KernelSpec.h's canonicalKey), a hash of its
/// whole generated source (so any change of the emitter's glue or the
/// templates is a new key), the arch, the NVRTC version, the extra
/// options in order, and the cache format.
std::string kernelCacheKey(const std::string &specKey,
                           const std::string &source, const std::string &arch,
                           const std::string &nvrtcVersion,
                           const std::vector<std::string> &options);

/// 32 hex digits naming `key`'s entry (two 64-bit FNV-1a hashes).
std::string kernelCacheFileStem(const std::string &key);

/// An entry's serialized bytes, and back. decode returns false, with the
/// reason in `why`, for bytes that are truncated, fail their checksum or
/// belong to another key.
std::string encodeCacheEntry(const std::string &key, const CompiledKernel &k);
bool decodeCacheEntry(const std::string &bytes, const std::string &key,
                      CompiledKernel &out, std::string &why);

/// How a compileCached call was served.
enum class CacheOutcome {
  Disabled,  ///< compiled; the cache is off
  Hit,       ///< read from the cache
  Miss,      ///< compiled and stored
  Recovered, ///< a bad entry was found, recompiled and replaced
};

const char *cacheOutcomeName(CacheOutcome o);

class KernelCache {
public:
  explicit KernelCache(std::string dir) : dir(std::move(dir)) {}
  const std::string &directory() const { return dir; }
  std::string entryPath(const std::string &key) const;

  /// True on a hit. A present but bad entry is removed, with the reason
  /// in `why` (empty for a plain miss).
  bool lookup(const std::string &key, CompiledKernel &out, std::string &why);
  /// Writes the entry atomically (temporary file, then rename).
  cpu::Status store(const std::string &key, const CompiledKernel &k);

private:
  std::string dir;
};

/// Serves `key` from the cache or runs `compile` (and stores its result),
/// holding the key's lock file meanwhile so that concurrent callers
/// compile once. A cache that cannot be created or written is an error
/// naming the directory (disable the cache to compile without one).
cpu::Status
compileCached(const KernelCacheOptions &options, const std::string &key,
              const std::function<cpu::Status(CompiledKernel &)> &compile,
              CompiledKernel &out, CacheOutcome *outcome = nullptr);

/// A generated kernel through compileCached: its key from `specKey`,
/// `source`, `arch`, nvrtcVersion() and `options`, compiled by
/// compileWithNvrtc on a miss. In a build without CUDA it fails as
/// compileWithNvrtc does, without touching the cache.
cpu::Status
compileKernelCached(const std::string &kernelName, const std::string &specKey,
                    const std::string &source, const std::string &arch,
                    const KernelCacheOptions &cacheOptions, CompiledKernel &out,
                    CacheOutcome *outcome = nullptr,
                    const std::vector<std::string> &options = {});

} // namespace folio::cuda

#endif // FOLIO_CODEGEN_CUDA_CACHE_KERNELCACHE_H
