//===- CPUFeatures.cpp - Runtime instruction-set dispatch -----------------===//

#include "codegen/CPU/CPUFeatures.h"

#include <atomic>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <cstdlib>
#include <cstring>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace folio::cpu {

namespace {

#if defined(__x86_64__)
/// GCC 12's __builtin_cpu_supports has no "f16c": CPUID leaf 1, ECX bit 29.
bool f16c() {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && ((c >> 29) & 1);
}
#endif

CPUFeatures detect() {
  CPUFeatures f;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  f.avx2 =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c();
  f.avx512 =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  f.avx512bf16 = f.avx512 && __builtin_cpu_supports("avx512bf16");
  f.avx512vnni = f.avx512 && __builtin_cpu_supports("avx512vnni");
  f.avx512vbmi = f.avx512 && __builtin_cpu_supports("avx512vbmi");
  // GCC 12 cannot query AMX through __builtin_cpu_supports.
  unsigned a, b, c, d;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.amx = (d >> 22) & 1;     // AMX-BF16
    f.amxInt8 = (d >> 25) & 1; // AMX-INT8
  }
#endif
  return f;
}

Isa initialLimit() {
  const char *env = std::getenv("FOLIO_CPU_ISA");
  if (env && std::strcmp(env, "scalar") == 0)
    return Isa::Scalar;
  if (env && std::strcmp(env, "avx2") == 0)
    return Isa::Avx2;
  return Isa::Avx512;
}

std::atomic<Isa> &limitSlot() {
  static std::atomic<Isa> limit{initialLimit()};
  return limit;
}

/// Linux hands out the AMX register state only on request (once per
/// process; oneDNN makes the same request).
bool requestTileData() {
#if defined(__linux__) && defined(__x86_64__)
  constexpr long kReqXcompPerm = 0x1023; // ARCH_REQ_XCOMP_PERM
  constexpr long kXtileData = 18;        // XFEATURE_XTILEDATA
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
#else
  return false;
#endif
}

std::atomic<bool> &amxAllowedSlot() {
  static std::atomic<bool> allowed{[] {
    const char *env = std::getenv("FOLIO_CPU_AMX");
    return !(env && std::strcmp(env, "0") == 0);
  }()};
  return allowed;
}

std::atomic<bool> &bf16DotEnabledSlot() {
  static std::atomic<bool> enabled{[] {
    const char *env = std::getenv("FOLIO_CPU_BF16_DOT");
    return env && std::strcmp(env, "1") == 0;
  }()};
  return enabled;
}

std::atomic<bool> &int4X8EnabledSlot() {
  static std::atomic<bool> enabled{[] {
    const char *env = std::getenv("FOLIO_CPU_INT4_X8");
    return !(env && std::strcmp(env, "0") == 0);
  }()};
  return enabled;
}

} // namespace

const CPUFeatures &hostFeatures() {
  static const CPUFeatures features = detect();
  return features;
}

Isa activeIsa() {
  const CPUFeatures &f = hostFeatures();
  Isa best = f.avx512 ? Isa::Avx512 : f.avx2 ? Isa::Avx2 : Isa::Scalar;
  Isa limit = limitSlot().load(std::memory_order_relaxed);
  return static_cast<int>(limit) < static_cast<int>(best) ? limit : best;
}

void setIsaLimit(Isa limit) {
  limitSlot().store(limit, std::memory_order_relaxed);
}

const char *isaName(Isa isa) {
  switch (isa) {
  case Isa::Avx512:
    return "avx512";
  case Isa::Avx2:
    return "avx2";
  case Isa::Scalar:
    break;
  }
  return "scalar";
}

bool amxSupported() {
  const CPUFeatures &f = hostFeatures();
  if (!f.amx || !f.avx512bf16)
    return false;
  static const bool granted = requestTileData();
  return granted;
}

bool amxActive() {
  return activeIsa() == Isa::Avx512 &&
         amxAllowedSlot().load(std::memory_order_relaxed) && amxSupported();
}

bool amxInt8Active() { return amxActive() && hostFeatures().amxInt8; }

void setAmxAllowed(bool allowed) {
  amxAllowedSlot().store(allowed, std::memory_order_relaxed);
}

bool bf16DotActive() {
  return activeIsa() == Isa::Avx512 && hostFeatures().avx512bf16 &&
         bf16DotEnabledSlot().load(std::memory_order_relaxed) && !amxActive();
}

void setBf16DotEnabled(bool enabled) {
  bf16DotEnabledSlot().store(enabled, std::memory_order_relaxed);
}

bool int4X8Active() {
  return activeIsa() != Isa::Scalar &&
         int4X8EnabledSlot().load(std::memory_order_relaxed);
}

void setInt4X8Enabled(bool enabled) {
  int4X8EnabledSlot().store(enabled, std::memory_order_relaxed);
}

} // namespace folio::cpu
