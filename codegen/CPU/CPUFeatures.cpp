//===- CPUFeatures.cpp - Runtime instruction-set dispatch -----------------===//

#include "codegen/CPU/CPUFeatures.h"

#include <atomic>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <cstdlib>
#include <cstring>

namespace folio::cpu {

namespace {

CPUFeatures detect() {
  CPUFeatures f;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  f.avx512 =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  f.avx512bf16 = f.avx512 && __builtin_cpu_supports("avx512bf16");
  // GCC 12 cannot query AMX through __builtin_cpu_supports; oneDNN detects
  // it by itself, so this flag is informational.
  unsigned a, b, c, d;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d))
    f.amx = (d >> 22) & 1; // AMX-BF16
#endif
  return f;
}

Isa initialLimit() {
  const char *env = std::getenv("FOLIO_CPU_ISA");
  if (env && std::strcmp(env, "scalar") == 0)
    return Isa::Scalar;
  return Isa::Avx512;
}

std::atomic<Isa> &limitSlot() {
  static std::atomic<Isa> limit{initialLimit()};
  return limit;
}

} // namespace

const CPUFeatures &hostFeatures() {
  static const CPUFeatures features = detect();
  return features;
}

Isa activeIsa() {
  Isa best = hostFeatures().avx512 ? Isa::Avx512 : Isa::Scalar;
  Isa limit = limitSlot().load(std::memory_order_relaxed);
  return static_cast<int>(limit) < static_cast<int>(best) ? limit : best;
}

void setIsaLimit(Isa limit) {
  limitSlot().store(limit, std::memory_order_relaxed);
}

const char *isaName(Isa isa) {
  return isa == Isa::Avx512 ? "avx512" : "scalar";
}

} // namespace folio::cpu
