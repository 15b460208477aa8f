//===- TestUtil.h - Helpers shared by the CPU kernel tests ------*- C++ -*-===//

#ifndef FOLIO_TEST_UNITTESTS_CPUKERNELS_TESTUTIL_H
#define FOLIO_TEST_UNITTESTS_CPUKERNELS_TESTUTIL_H

#include "codegen/CPU/CPUFeatures.h"
#include "codegen/CPU/DType.h"
#include "codegen/CPU/ThreadPool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace folio::cpu::test {

inline std::vector<float> randomVector(size_t n, uint32_t seed,
                                       float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

/// The values of `v` after a round trip through storage type t.
inline std::vector<float> roundTo(const std::vector<float> &v, DType t) {
  std::vector<float> r(v.size());
  std::vector<uint8_t> buf(v.size() * dtypeSize(t));
  for (size_t i = 0; i < v.size(); ++i) {
    storeFromFloat(buf.data(), t, i, v[i]);
    r[i] = loadAsFloat(buf.data(), t, i);
  }
  return r;
}

/// `v` encoded in storage type t.
inline std::vector<uint8_t> encode(const std::vector<float> &v, DType t) {
  std::vector<uint8_t> buf(v.size() * dtypeSize(t));
  for (size_t i = 0; i < v.size(); ++i)
    storeFromFloat(buf.data(), t, i, v[i]);
  return buf;
}

inline float maxAbsDiff(const std::vector<float> &a,
                        const std::vector<float> &b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    float d = std::fabs(a[i] - b[i]);
    if (!(d <= m)) // NaN counts as a failure
      m = std::isnan(d) ? INFINITY : d;
  }
  return m;
}

inline bool bitwiseEqual(const std::vector<float> &a,
                         const std::vector<float> &b) {
  return a.size() == b.size() &&
         (a.empty() ||
          std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

/// The instruction-set levels this host can run, lowest first.
inline std::vector<Isa> hostIsas() {
  std::vector<Isa> isas = {Isa::Scalar};
  if (hostFeatures().avx2)
    isas.push_back(Isa::Avx2);
  if (hostFeatures().avx512)
    isas.push_back(Isa::Avx512);
  return isas;
}

/// Restores the ISA limit at scope exit so tests stay independent.
class IsaScope {
public:
  explicit IsaScope(Isa isa) { setIsaLimit(isa); }
  ~IsaScope() { setIsaLimit(Isa::Avx512); }
};

/// An instruction-set level and, at Avx512, whether Folio's AMX kernels
/// may run (amxActive()) and, without them, the vdpbf16ps prefill GEMM
/// (bf16DotActive()).
struct KernelPath {
  Isa isa;
  bool amx = false;
  bool bf16Dot = false;
  /// The int4 decode GEMV with x quantized to int8 (int4X8Active()), for
  /// weights that allow it (WeightView::int8X).
  bool int4X8 = false;
  std::string name() const {
    return std::string(isaName(isa)) + (amx ? "+amx" : "") +
           (bf16Dot ? "+bf16dot" : "") + (int4X8 ? "+int4x8" : "");
  }
  /// Whether a prefill with `storage` weights rounds x to bf16 on this
  /// path (the AMX GEMM; the vdpbf16ps one for 8-bit codes).
  bool bf16Prefill(DType storage) const {
    return amx || (bf16Dot && storage != DType::I4);
  }
};

/// Every path this host can run: hostIsas() with neither AMX, the
/// vdpbf16ps GEMM nor the int8-x int4 GEMV, then AVX-512 with each where
/// the host has it.
inline std::vector<KernelPath> hostPaths() {
  std::vector<KernelPath> paths;
  for (Isa isa : hostIsas())
    paths.push_back({isa});
  if (hostFeatures().avx512 && hostFeatures().avx512bf16)
    paths.push_back({Isa::Avx512, false, true});
  if (hostFeatures().avx512 && amxSupported())
    paths.push_back({Isa::Avx512, true});
  // The int8-x int4 GEMV: the AVX2 kernel, and the VNNI one where the
  // host has it.
  if (hostFeatures().avx2)
    paths.push_back({Isa::Avx2, false, false, true});
  if (hostFeatures().avx512 && hostFeatures().avx512vnni)
    paths.push_back({Isa::Avx512, false, false, true});
  // And its AMX-INT8 GEMM for more rows.
  if (hostFeatures().avx512 && amxSupported() && hostFeatures().amxInt8)
    paths.push_back({Isa::Avx512, true, false, true});
  return paths;
}

/// Sets a path for the scope; restores the defaults (the host's best level,
/// AMX allowed, the vdpbf16ps GEMM off, the int8-x int4 GEMV on) at exit.
class PathScope {
public:
  explicit PathScope(KernelPath path) {
    setIsaLimit(path.isa);
    setAmxAllowed(path.amx);
    setBf16DotEnabled(path.bf16Dot);
    setInt4X8Enabled(path.int4X8);
  }
  ~PathScope() {
    setIsaLimit(Isa::Avx512);
    setAmxAllowed(true);
    setBf16DotEnabled(false);
    setInt4X8Enabled(true);
  }
};

/// Pools of one and of four threads: results must not depend on which.
inline ThreadPool &serialPool() {
  static ThreadPool pool(1);
  return pool;
}
inline ThreadPool &parallelPool() {
  static ThreadPool pool(4);
  return pool;
}

} // namespace folio::cpu::test

#endif // FOLIO_TEST_UNITTESTS_CPUKERNELS_TESTUTIL_H
