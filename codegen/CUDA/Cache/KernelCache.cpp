//===- KernelCache.cpp - Compiled kernels cached on disk ------------------===//

#include "codegen/CUDA/Cache/KernelCache.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace folio::cuda {

namespace {

constexpr char kMagic[8] = {'F', 'O', 'L', 'I', 'O', 'K', 'C', '\0'};

uint64_t fnv1a(const void *data, size_t n, uint64_t h) {
  const auto *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < n; ++i)
    h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ULL;

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(v));
  return buf;
}

void putU64(std::string &s, uint64_t v) {
  s.append(reinterpret_cast<const char *>(&v), 8);
}
void putStr(std::string &s, const std::string &v) {
  putU64(s, v.size());
  s += v;
}

/// Bounds-checked reads over an entry's payload.
struct Reader {
  const std::string &b;
  size_t pos = 0;
  bool failed = false;
  uint64_t u64() {
    uint64_t v = 0;
    if (failed || b.size() - pos < 8) {
      failed = true;
      return 0;
    }
    std::memcpy(&v, b.data() + pos, 8);
    pos += 8;
    return v;
  }
  std::string str() {
    uint64_t n = u64();
    if (failed || b.size() - pos < n) {
      failed = true;
      return {};
    }
    std::string s = b.substr(pos, n);
    pos += n;
    return s;
  }
};

std::string readWhole(const std::string &path, bool &exists) {
  exists = false;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return {};
  exists = true;
  std::string out;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    out.append(buf, size_t(n));
  }
  ::close(fd);
  return out;
}

/// An flock on the key's lock file for the lifetime of the object; a cache
/// whose lock cannot be taken still works (it may compile twice).
class KeyLock {
public:
  explicit KeyLock(const std::string &path) {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0)
      while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
      }
  }
  ~KeyLock() {
    if (fd >= 0)
      ::close(fd); // releases the lock
  }

private:
  int fd = -1;
};

} // namespace

std::string defaultKernelCacheDir() {
  if (const char *d = std::getenv("FOLIO_CACHE_DIR"); d && *d)
    return std::string(d) + "/kernels";
  if (const char *d = std::getenv("XDG_CACHE_HOME"); d && *d)
    return std::string(d) + "/folio/kernels";
  if (const char *d = std::getenv("HOME"); d && *d)
    return std::string(d) + "/.cache/folio/kernels";
  return {};
}

std::string kernelCacheKey(const std::string &specKey,
                           const std::string &source, const std::string &arch,
                           const std::string &nvrtcVersion,
                           const std::vector<std::string> &options) {
  std::string key = specKey + "|source=" +
                    hex64(fnv1a(source.data(), source.size(), kFnvBasis)) +
                    "|arch=" + arch + "|nvrtc=" + nvrtcVersion + "|options=";
  for (size_t i = 0; i < options.size(); ++i)
    key += (i ? " " : "") + options[i];
  return key + "|format=" + std::to_string(kKernelCacheFormat);
}

std::string kernelCacheFileStem(const std::string &key) {
  // Two bases: 128 bits make an accidental collision of file names
  // negligible, and the stored key turns one into a miss anyway.
  return hex64(fnv1a(key.data(), key.size(), kFnvBasis)) +
         hex64(fnv1a(key.data(), key.size(), 0x84222325cbf29ce4ULL));
}

std::string encodeCacheEntry(const std::string &key, const CompiledKernel &k) {
  std::string payload;
  putStr(payload, key);
  putStr(payload, k.name);
  putStr(payload, k.arch);
  putStr(payload, k.ptx);
  putStr(payload, std::string(k.cubin.begin(), k.cubin.end()));
  putStr(payload, k.log);
  for (int v : {k.registers, k.spillStoreBytes, k.spillLoadBytes,
                k.stackFrameBytes, k.sharedBytes})
    putU64(payload, uint64_t(int64_t(v)));
  std::string out(kMagic, 8);
  putU64(out, kKernelCacheFormat);
  putU64(out, payload.size());
  putU64(out, fnv1a(payload.data(), payload.size(), kFnvBasis));
  return out + payload;
}

bool decodeCacheEntry(const std::string &bytes, const std::string &key,
                      CompiledKernel &out, std::string &why) {
  constexpr size_t kFixed = 32;
  if (bytes.size() < kFixed || std::memcmp(bytes.data(), kMagic, 8) != 0) {
    why = "not a kernel cache entry (no magic)";
    return false;
  }
  uint64_t format, size, hash;
  std::memcpy(&format, bytes.data() + 8, 8);
  std::memcpy(&size, bytes.data() + 16, 8);
  std::memcpy(&hash, bytes.data() + 24, 8);
  if (format != kKernelCacheFormat) {
    why = "entry format " + std::to_string(format) + ", this build writes " +
          std::to_string(kKernelCacheFormat);
    return false;
  }
  if (bytes.size() - kFixed != size) {
    why = "the entry is " + std::to_string(bytes.size() - kFixed) +
          " payload bytes but says " + std::to_string(size) +
          (bytes.size() - kFixed < size ? " (truncated)" : "");
    return false;
  }
  std::string payload = bytes.substr(kFixed);
  if (fnv1a(payload.data(), payload.size(), kFnvBasis) != hash) {
    why = "the entry fails its checksum (corrupted)";
    return false;
  }
  Reader r{payload};
  std::string storedKey = r.str();
  CompiledKernel k;
  k.name = r.str();
  k.arch = r.str();
  k.ptx = r.str();
  std::string cubin = r.str();
  k.cubin.assign(cubin.begin(), cubin.end());
  k.log = r.str();
  for (int *v : {&k.registers, &k.spillStoreBytes, &k.spillLoadBytes,
                 &k.stackFrameBytes, &k.sharedBytes})
    *v = int(int64_t(r.u64()));
  if (r.failed || r.pos != payload.size()) {
    why = "the entry's records do not match its size";
    return false;
  }
  if (storedKey != key) {
    why = "the entry holds another key (a file-name hash collision)";
    return false;
  }
  out = std::move(k);
  return true;
}

const char *cacheOutcomeName(CacheOutcome o) {
  switch (o) {
  case CacheOutcome::Disabled:
    return "disabled";
  case CacheOutcome::Hit:
    return "hit";
  case CacheOutcome::Miss:
    return "miss";
  case CacheOutcome::Recovered:
    return "recovered";
  }
  return "?";
}

std::string KernelCache::entryPath(const std::string &key) const {
  return dir + "/" + kernelCacheFileStem(key) + ".kernel";
}

bool KernelCache::lookup(const std::string &key, CompiledKernel &out,
                         std::string &why) {
  why.clear();
  std::string path = entryPath(key);
  bool exists = false;
  std::string bytes = readWhole(path, exists);
  if (!exists)
    return false;
  if (decodeCacheEntry(bytes, key, out, why))
    return true;
  // A bad entry is replaced by the caller's store; removing it now keeps
  // a failed compile from leaving it to the next reader.
  ::unlink(path.c_str());
  return false;
}

cpu::Status KernelCache::store(const std::string &key,
                               const CompiledKernel &k) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return cpu::Status::error("kernel cache: cannot create directory '" + dir +
                              "': " + ec.message() +
                              " (set FOLIO_CACHE_DIR, or disable the cache)");
  static std::atomic<uint64_t> counter{0};
  std::string path = entryPath(key);
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                    std::to_string(counter++);
  std::string bytes = encodeCacheEntry(key, k);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return cpu::Status::error("kernel cache: cannot write '" + tmp +
                              "': " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      std::string err = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return cpu::Status::error("kernel cache: cannot write '" + tmp +
                                "': " + err);
    }
    done += size_t(n);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = std::strerror(errno);
    ::unlink(tmp.c_str());
    return cpu::Status::error("kernel cache: cannot rename '" + tmp + "' to '" +
                              path + "': " + err);
  }
  return cpu::Status::success();
}

cpu::Status
compileCached(const KernelCacheOptions &options, const std::string &key,
              const std::function<cpu::Status(CompiledKernel &)> &compile,
              CompiledKernel &out, CacheOutcome *outcome) {
  auto set = [&](CacheOutcome o) {
    if (outcome)
      *outcome = o;
  };
  if (!options.enabled) {
    set(CacheOutcome::Disabled);
    return compile(out);
  }
  std::string dir = options.dir.empty() ? defaultKernelCacheDir() : options.dir;
  if (dir.empty())
    return cpu::Status::error(
        "kernel cache: no directory: none of FOLIO_CACHE_DIR, XDG_CACHE_HOME "
        "and HOME is set (set one, or disable the cache)");
  KernelCache cache(dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return cpu::Status::error("kernel cache: cannot create directory '" + dir +
                              "': " + ec.message() +
                              " (set FOLIO_CACHE_DIR, or disable the cache)");
  KeyLock lock(dir + "/" + kernelCacheFileStem(key) + ".lock");
  std::string why;
  if (cache.lookup(key, out, why)) {
    set(CacheOutcome::Hit);
    return cpu::Status::success();
  }
  if (cpu::Status st = compile(out); !st.ok())
    return st;
  set(why.empty() ? CacheOutcome::Miss : CacheOutcome::Recovered);
  return cache.store(key, out);
}

} // namespace folio::cuda
