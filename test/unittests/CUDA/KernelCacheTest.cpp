//===- KernelCacheTest.cpp - The disk cache of compiled kernels -----------===//

#include "codegen/CUDA/Cache/KernelCache.h"
#include "codegen/CUDA/Emitter.h"
#include "test/unittests/CUDA/TestVariants.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace folio::cuda::test {
namespace {

namespace fs = std::filesystem;

/// A fresh cache directory per test, removed afterwards.
class KernelCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/folio-kernel-cache-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir = tmpl;
    options.dir = dir;
  }
  void TearDown() override { fs::remove_all(dir); }

  std::string dir;
  KernelCacheOptions options;
};

using Status = cpu::Status;

CompiledKernel fakeKernel(const std::string &name, char fill) {
  CompiledKernel k;
  k.name = name;
  k.arch = "sm_90a";
  k.ptx = ".entry " + name + " {}";
  k.cubin.assign(4096, fill);
  k.log = "ptxas info    : Used 40 registers";
  k.registers = 40;
  k.spillStoreBytes = 0;
  k.spillLoadBytes = 4;
  k.stackFrameBytes = 8;
  k.sharedBytes = 1024;
  return k;
}

std::string key(const std::string &spec = "kv_write:cache=int8") {
  return kernelCacheKey(spec, "source", "sm_90a", "13.0", {});
}

/// Serves `k` through the cache, counting compiles.
Status serve(const KernelCacheOptions &o, const std::string &k,
             const CompiledKernel &value, std::atomic<int> &compiles,
             CompiledKernel &out, CacheOutcome &outcome) {
  return compileCached(
      o, k,
      [&](CompiledKernel &c) {
        ++compiles;
        c = value;
        return cpu::Status::success();
      },
      out, &outcome);
}
TEST_F(KernelCacheTest, MissThenHit) {
  std::atomic<int> compiles{0};
  CompiledKernel a = fakeKernel("k", 'a'), out;
  CacheOutcome outcome;
  ASSERT_TRUE(serve(options, key(), a, compiles, out, outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::Miss);
  EXPECT_TRUE(fs::exists(KernelCache(dir).entryPath(key())));
  CompiledKernel again;
  ASSERT_TRUE(serve(options, key(), a, compiles, again, outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::Hit);
  EXPECT_EQ(compiles.load(), 1);
  EXPECT_EQ(again.cubin, a.cubin);
  EXPECT_EQ(again.ptx, a.ptx);
  EXPECT_EQ(again.log, a.log);
  EXPECT_EQ(again.registers, 40);
  EXPECT_EQ(again.spillLoadBytes, 4);
  EXPECT_EQ(again.stackFrameBytes, 8);
  EXPECT_EQ(again.sharedBytes, 1024);
}

TEST_F(KernelCacheTest, DisabledNeitherReadsNorWrites) {
  std::atomic<int> compiles{0};
  options.enabled = false;
  CompiledKernel out;
  CacheOutcome outcome;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(
        serve(options, key(), fakeKernel("k", 'a'), compiles, out, outcome)
            .ok());
    EXPECT_EQ(outcome, CacheOutcome::Disabled);
  }
  EXPECT_EQ(compiles.load(), 2);
  EXPECT_TRUE(fs::is_empty(dir));
}

// Every part of the key changes it, and so the entry's file.
TEST(KernelCacheKey, EveryParameterChangesTheKey) {
  std::string base = kernelCacheKey("spec", "src", "sm_90a", "13.0", {});
  std::vector<std::string> others = {
      kernelCacheKey("spec2", "src", "sm_90a", "13.0", {}),
      kernelCacheKey("spec", "src2", "sm_90a", "13.0", {}),
      kernelCacheKey("spec", "src", "sm_89", "13.0", {}),
      kernelCacheKey("spec", "src", "sm_90a", "12.8", {}),
      kernelCacheKey("spec", "src", "sm_90a", "13.0",
                     {"-DFOLIO_KERNEL_PORTABLE"}),
  };
  for (const std::string &o : others) {
    EXPECT_NE(o, base);
    EXPECT_NE(kernelCacheFileStem(o), kernelCacheFileStem(base)) << o;
  }
  EXPECT_EQ(kernelCacheFileStem(base).size(), 32u);
  EXPECT_NE(base.find("|format=" + std::to_string(kKernelCacheFormat)),
            std::string::npos);
}

// Each specialization parameter reaches the key through the spec's
// canonical key.
TEST(KernelCacheKey, EverySpecParameterChangesTheKey) {
  PagedDecodeSpec base = pagedDecodeVariants()[0];
  std::vector<PagedDecodeSpec> changed(8, base);
  changed[0].cacheType =
      base.cacheType == cpu::DType::F32 ? cpu::DType::BF16 : cpu::DType::F32;
  changed[1].headDim = base.headDim == 64 ? 128 : 64;
  changed[2].blockSize = base.blockSize * 2;
  changed[3].numKvHeads = base.numKvHeads + 1;
  changed[4].queriesPerKv = base.queriesPerKv + 1;
  changed[5].group = base.group + 32;
  changed[6].partition = base.partition * 2;
  changed[7].threads = base.threads * 2;
  GeneratedKernel m, c;
  ASSERT_TRUE(emitPagedDecode(base, m, c).ok());
  std::string baseKey = kernelCacheKey(m.key, m.source, "sm_80", "13.0", {});
  for (size_t i = 0; i < changed.size(); ++i) {
    std::string k =
        kernelCacheKey(canonicalKey(changed[i]), m.source, "sm_80", "13.0", {});
    EXPECT_NE(k, baseKey) << "parameter " << i;
  }
}

TEST_F(KernelCacheTest, CorruptedEntryIsRecompiled) {
  std::atomic<int> compiles{0};
  CompiledKernel out;
  CacheOutcome outcome;
  ASSERT_TRUE(
      serve(options, key(), fakeKernel("k", 'a'), compiles, out, outcome).ok());
  std::string path = KernelCache(dir).entryPath(key());
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(2000);
    f.put('\x5a'); // inside the cubin
  }
  std::string why;
  EXPECT_FALSE(KernelCache(dir).lookup(key(), out, why));
  EXPECT_EQ(why, "the entry fails its checksum (corrupted)");
  EXPECT_FALSE(fs::exists(path)); // the bad entry is gone
  ASSERT_TRUE(
      serve(options, key(), fakeKernel("k", 'a'), compiles, out, outcome).ok());
  // Removed by the lookup above: a plain miss now.
  EXPECT_EQ(outcome, CacheOutcome::Miss);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x5a');
  }
  ASSERT_TRUE(
      serve(options, key(), fakeKernel("k", 'a'), compiles, out, outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::Recovered);
  EXPECT_EQ(out.cubin, fakeKernel("k", 'a').cubin);
  ASSERT_TRUE(
      serve(options, key(), fakeKernel("k", 'a'), compiles, out, outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::Hit);
  EXPECT_EQ(compiles.load(), 3);
}

TEST_F(KernelCacheTest, TruncatedOrForeignEntriesAreMisses) {
  KernelCache cache(dir);
  CompiledKernel k = fakeKernel("k", 'b');
  std::string bytes = encodeCacheEntry(key(), k);
  CompiledKernel out;
  std::string why;
  ASSERT_TRUE(decodeCacheEntry(bytes, key(), out, why)) << why;
  EXPECT_FALSE(
      decodeCacheEntry(bytes.substr(0, bytes.size() - 10), key(), out, why));
  EXPECT_NE(why.find("(truncated)"), std::string::npos) << why;
  EXPECT_FALSE(decodeCacheEntry(bytes.substr(0, 12), key(), out, why));
  EXPECT_EQ(why, "not a kernel cache entry (no magic)");
  // The same bytes under another key (a file-name collision) never serve.
  EXPECT_FALSE(decodeCacheEntry(bytes, key("other"), out, why));
  EXPECT_NE(why.find("another key"), std::string::npos);
  // A truncated file on disk is a miss and is removed.
  ASSERT_TRUE(cache.store(key(), k).ok());
  fs::resize_file(cache.entryPath(key()), 100);
  EXPECT_FALSE(cache.lookup(key(), out, why));
  EXPECT_NE(why.find("(truncated)"), std::string::npos) << why;
  EXPECT_FALSE(fs::exists(cache.entryPath(key())));
}

// Threads and processes storing and reading one key at once: every read
// is a whole entry, the lock lets one compile, and no temporary is left.
TEST_F(KernelCacheTest, ConcurrentWriters) {
  std::atomic<int> compiles{0}, bad{0};
  // Two processes compile a second key at the same time (forked before
  // any thread starts); the lock file makes one of them compile.
  std::string sharedKey = key("shared");
  std::vector<pid_t> children;
  for (int p = 0; p < 2; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::atomic<int> mine{0};
      CompiledKernel out;
      CacheOutcome outcome;
      Status st = compileCached(
          options, sharedKey,
          [&](CompiledKernel &c) {
            ++mine;
            ::usleep(200 * 1000);
            c = fakeKernel("k", 's');
            return cpu::Status::success();
          },
          out, &outcome);
      ::_exit(st.ok() && out.cubin == fakeKernel("k", 's').cubin
                  ? (outcome == CacheOutcome::Hit ? 10 : 20)
                  : 1);
    }
    children.push_back(pid);
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        CompiledKernel out;
        CacheOutcome outcome;
        if (!serve(options, key(), fakeKernel("k", 'c'), compiles, out, outcome)
                 .ok() ||
            out.cubin != fakeKernel("k", 'c').cubin)
          ++bad;
        // Unlocked writers too: rename keeps readers whole.
        if (!KernelCache(dir)
                 .store(key("k" + std::to_string(t % 2)),
                        fakeKernel("k", char('d' + t % 2)))
                 .ok())
          ++bad;
        std::string why;
        if (KernelCache(dir).lookup(key("k" + std::to_string(t % 2)), out,
                                    why) &&
            out.cubin != fakeKernel("k", char('d' + t % 2)).cubin)
          ++bad;
        if (!why.empty())
          ++bad;
      }
    });
  for (std::thread &t : threads)
    t.join();
  int hits = 0, misses = 0;
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    hits += WEXITSTATUS(status) == 10;
    misses += WEXITSTATUS(status) == 20;
  }
  EXPECT_EQ(hits, 1);
  EXPECT_EQ(misses, 1);
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(compiles.load(), 1);
  for (const fs::directory_entry &e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos)
        << e.path();
}

TEST(KernelCacheDir, EnvironmentOrder) {
  auto with = [](const char *cache, const char *xdg, const char *home) {
    auto set = [](const char *name, const char *v) {
      if (v)
        ::setenv(name, v, 1);
      else
        ::unsetenv(name);
    };
    std::string saved[3];
    const char *names[3] = {"FOLIO_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
    bool had[3];
    for (int i = 0; i < 3; ++i)
      if ((had[i] = std::getenv(names[i]) != nullptr))
        saved[i] = std::getenv(names[i]);
    set(names[0], cache);
    set(names[1], xdg);
    set(names[2], home);
    std::string dir = defaultKernelCacheDir();
    for (int i = 0; i < 3; ++i)
      set(names[i], had[i] ? saved[i].c_str() : nullptr);
    return dir;
  };
  EXPECT_EQ(with("/c", "/x", "/h"), "/c/kernels");
  EXPECT_EQ(with(nullptr, "/x", "/h"), "/x/folio/kernels");
  EXPECT_EQ(with("", "", "/h"), "/h/.cache/folio/kernels");
  EXPECT_EQ(with(nullptr, nullptr, nullptr), "");
}

TEST_F(KernelCacheTest, UnwritableDirectoryIsAnErrorNamingIt) {
  options.dir = "/proc/folio-no-such-dir/cache";
  std::atomic<int> compiles{0};
  CompiledKernel out;
  CacheOutcome outcome;
  Status st =
      serve(options, key(), fakeKernel("k", 'a'), compiles, out, outcome);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("kernel cache: cannot create directory "
                              "'/proc/folio-no-such-dir/cache'"),
            std::string::npos)
      << st.message();
}

// With NVRTC: the second compile of a generated kernel comes from the
// cache, byte for byte.
TEST_F(KernelCacheTest, NvrtcKernelIsServedFromTheCache) {
  if (!nvrtcAvailable())
    GTEST_SKIP() << "this build has no CUDA toolkit (FOLIO_ENABLE_CUDA=OFF)";
  GeneratedKernel k;
  ASSERT_TRUE(emitKVWrite(kvWriteVariants()[0], k).ok());
  CompiledKernel first, second;
  CacheOutcome a, b;
  ASSERT_TRUE(
      compileKernelCached(k.name, k.key, k.source, "sm_86", options, first, &a)
          .ok());
  ASSERT_TRUE(
      compileKernelCached(k.name, k.key, k.source, "sm_86", options, second, &b)
          .ok());
  EXPECT_EQ(a, CacheOutcome::Miss);
  EXPECT_EQ(b, CacheOutcome::Hit);
  EXPECT_EQ(first.cubin, second.cubin);
  EXPECT_EQ(first.ptx, second.ptx);
  EXPECT_GT(second.registers, 0);
}

} // namespace
} // namespace folio::cuda::test
