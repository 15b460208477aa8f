//===- AmxTiles.h - What Folio's AMX kernels share --------------*- C++ -*-===//
//
// Included only by the files compiled with -mamx-tile and -mamx-bf16 or
// -mamx-int8 (the attention tile, the quantized-weight GEMMs); their
// functions carry FOLIO_AMX (or, for the integer tiles, FOLIO_AMX_INT8) so that
// GCC emits AVX-512 BF16 and AMX there and nowhere else, and callers check
// amxActive() or amxInt8Active() (CPUFeatures.h) first. The GEMM's
// FOLIO_BF16_AVX512 functions use no tiles; its vdpbf16ps path runs them
// after bf16DotActive() instead.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_AMXTILES_H
#define FOLIO_CODEGEN_CPU_AMXTILES_H

#include <cstdint>
#include <immintrin.h>

#define FOLIO_AMX                                                              \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c,"         \
                        "avx512bf16,amx-tile,amx-bf16")))

/// The integer tiles (AMX-INT8): the int4 int8-x GEMM and the int8 tiles.
#define FOLIO_AMX_INT8                                                         \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c,"         \
                        "amx-tile,amx-int8")))

/// AVX-512 with AVX512-BF16 and no tiles: code shared by the AMX GEMM and
/// its vdpbf16ps twin, which also runs on CPUs without AMX (Zen 4).
#define FOLIO_BF16_AVX512                                                      \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c,"         \
                        "avx512bf16")))

namespace folio::cpu::amx {

// GCC's tile intrinsics are asm statements without a memory clobber, so
// the compiler does not know they read or write memory: a barrier before
// every tile load and after every tile store keeps plain stores and loads
// of the same buffers in order.
inline void compilerBarrier() { __asm__ __volatile__("" ::: "memory"); }

/// Palette 1, every tile 16 rows of 64 bytes: C tiles 0-3 (16 x 16 f32),
/// A in tiles 4, 5 and B in tiles 6, 7 (16 x 32 bf16). Tile numbers in the
/// intrinsics must be literals. Tile state is per thread: a kernel loads
/// this at its start and releases the tiles at its end, so a thread that
/// also runs oneDNN's AMX kernels (their own configurations) stays correct.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t startRow = 0;
  uint8_t reserved[14] = {};
  uint16_t colBytes[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};

} // namespace folio::cpu::amx

#define TLOAD(t, p, stride)                                                    \
  do {                                                                         \
    ::folio::cpu::amx::compilerBarrier();                                      \
    _tile_loadd(t, p, stride);                                                 \
  } while (0)
#define TSTORE(t, p, stride)                                                   \
  do {                                                                         \
    _tile_stored(t, p, stride);                                                \
    ::folio::cpu::amx::compilerBarrier();                                      \
  } while (0)

#endif // FOLIO_CODEGEN_CPU_AMXTILES_H
