//===- AttentionTileLanes.h - Rows-in-lanes tile helpers --------*- C++ -*-===//
//
// Internal: shared by the transposed AVX-512 tile and the AMX tile, which
// keep query rows in vector lanes and scores in log2 units. Include only
// from translation units whose AVX-512 code runs after a runtime check;
// every function carries the target attribute itself.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_ATTENTIONTILELANES_H
#define FOLIO_CODEGEN_CPU_ATTENTIONTILELANES_H

#include "codegen/CPU/AttentionTile.h"
#include "codegen/CPU/Avx512Math.h"

#include <cstdint>
#include <vector>

namespace folio::cpu::detail::lanes {

using avx512::tailMask;

constexpr float kLog2e = 1.44269504088896341f;

/// 2^x with about 2.5e-7 relative error, 0 for x below -150, NaN for NaN.
/// Scores are kept in log2 units (log2 e folded into the query scale),
/// which spares exp's multiply and two-step range reduction.
FOLIO_AVX512 static inline __m512 exp2(__m512 x) {
  // The clamp keeps -inf out of the reduction; the bound is the first
  // operand so that a NaN score (maxps returns the second operand then)
  // stays NaN rather than becoming a weight of 0.
  x = _mm512_max_ps(_mm512_set1_ps(-160.0f), x);
  __m512 n =
      _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_sub_ps(x, n); // exact, in [-0.5, 0.5]
  // Minimax fit of 2^r on [-0.5, 0.5].
  __m512 p = _mm512_set1_ps(1.327646896e-03f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(9.675540961e-03f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.550713465e-02f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(2.402212024e-01f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(6.931469440e-01f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.000000119e+00f));
  return _mm512_scalef_ps(p, n);
}

/// Lanes whose query position sees key position `key`.
FOLIO_AVX512 static inline __mmask16 visibleLanes(__m512i lo, __m512i pos,
                                                  int64_t key) {
  __m512i kp = _mm512_set1_epi32(int32_t(key));
  return _mm512_mask_cmple_epi32_mask(_mm512_cmple_epi32_mask(lo, kp), kp, pos);
}

/// The first half of the online softmax over one 16-lane column of a score
/// chunk (n keys from `key0`, row stride `ld`): soft-caps each score in
/// place when `softCap` (tanh(s / cap) * cap, cap and invCap in log2
/// units) and folds it into `mx`, the running max of the lanes that see
/// the key (every lane unless `masked`).
FOLIO_AVX512 static inline __m512 capAndMax(float *s, int64_t n, int64_t ld,
                                            bool softCap, __m512 cap,
                                            __m512 invCap, bool masked,
                                            __m512i lo, __m512i pos,
                                            int64_t key0, __m512 mx) {
  for (int64_t j = 0; j < n; ++j, s += ld) {
    __m512 x = _mm512_load_ps(s);
    if (softCap) {
      x = _mm512_mul_ps(avx512::tanh(_mm512_mul_ps(x, invCap)), cap);
      _mm512_store_ps(s, x);
    }
    mx = _mm512_mask_max_ps(
        mx, masked ? visibleLanes(lo, pos, key0 + j) : __mmask16(0xffff), mx,
        x);
  }
  return mx;
}

using detail::queryRow;
using detail::threadScratch;

} // namespace folio::cpu::detail::lanes

#endif // FOLIO_CODEGEN_CPU_ATTENTIONTILELANES_H
