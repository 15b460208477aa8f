//===- CPUFeatures.h - Runtime instruction-set dispatch ---------*- C++ -*-===//
//
// The library is compiled for baseline x86-64; AVX2 and AVX-512 code lives in
// its own translation units with per-function target attributes and is only
// called after these checks, so one binary runs on any x86-64 machine.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_CPUFEATURES_H
#define FOLIO_CODEGEN_CPU_CPUFEATURES_H

namespace folio::cpu {

/// Instruction-set levels the kernels are written for, lowest first.
/// Avx2 means AVX2 + FMA + F16C (every x86-64 CPU since Haswell and Zen 1):
/// the decode kernels' tier on CPUs without AVX-512.
enum class Isa { Scalar = 0, Avx2 = 1, Avx512 = 2 };

/// What the host supports, detected once.
struct CPUFeatures {
  bool avx2 = false;       ///< avx2 + fma + f16c: the Avx2 kernels.
  bool avx512 = false;     ///< avx512f + bw + vl + dq: the Avx512 kernels.
  bool avx512bf16 = false; ///< vcvtne2ps2bf16 / vdpbf16ps.
  bool avx512vnni = false; ///< vpdpbusd.
  bool avx512vbmi = false; ///< vpermi2b (the fp8 GEMV's byte lookups).
  bool amx = false;        ///< AMX-BF16 tiles.
  bool amxInt8 = false;    ///< AMX-INT8 tiles.
};

/// The host's features.
const CPUFeatures &hostFeatures();

/// The level kernels use: the best the host supports, lowered by the
/// environment variable FOLIO_CPU_ISA=scalar|avx2 or by setIsaLimit().
Isa activeIsa();

/// Caps the level kernels may use (tests compare the paths this way; a
/// deployment can rule out AVX-512 frequency effects). Not thread-safe with
/// kernels running concurrently.
void setIsaLimit(Isa limit);

const char *isaName(Isa isa);

/// Whether the host can run Folio's AMX kernels at all: AMX-BF16 and
/// AVX512-BF16, and Linux granted the tile state (asked once).
bool amxSupported();

/// Whether Folio's own AMX kernels (the attention tile, the quantized
/// weights' prefill GEMM) may run: the host has AMX-BF16 and AVX512-BF16,
/// the active level is Avx512, Linux granted the tile state, and neither
/// FOLIO_CPU_AMX=0 nor setAmxAllowed(false) ruled them out. oneDNN decides
/// on its own whether its kernels use AMX.
bool amxActive();

/// amxActive() on a host that also has AMX-INT8 (the int4 int8-x GEMM).
bool amxInt8Active();

/// Allows or rules out Folio's AMX kernels (tests compare both paths this
/// way). Not thread-safe with kernels running concurrently.
void setAmxAllowed(bool allowed);

/// Whether the 8-bit weights' prefill GEMM multiplies with AVX512-BF16 dot
/// products (vdpbf16ps) where the AMX kernels do not run: it was turned on
/// (FOLIO_CPU_BF16_DOT=1 or setBf16DotEnabled(true)), the host has
/// AVX512-BF16, the active level is Avx512 and amxActive() is false. Off
/// by default: on an Intel core with AMX ruled out it ran 0.75-0.9 of the
/// f32 panel; it is meant for Zen 4, where it is not yet measured.
bool bf16DotActive();

/// Turns the vdpbf16ps GEMM on or off (tests compare it with the f32 panel
/// this way). Not thread-safe with kernels running concurrently.
void setBf16DotEnabled(bool enabled);

/// Whether int4 weights' decode GEMV (up to kConvertTileRows rows of x)
/// multiplies the codes with x quantized to int8 per weight group, for
/// weights that allow it (WeightView::int8X): the active level is Avx512
/// (with AVX512-VNNI dot products where the host has them, else the AVX2
/// kernel) or Avx2, and neither FOLIO_CPU_INT4_X8=0 nor
/// setInt4X8Enabled(false) ruled it out. On by default; docs/cpu-kernels.md
/// gives its error bound and speed.
bool int4X8Active();

/// Allows or rules out the int8-x int4 GEMV (tests compare both paths this
/// way). Not thread-safe with kernels running concurrently.
void setInt4X8Enabled(bool enabled);

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_CPUFEATURES_H
