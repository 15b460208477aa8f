//===- RowKernelsAvx512.cpp - AVX-512 row loops ---------------------------===//
//
// Entered only when activeIsa() is Avx512. Tails use masked loads and stores
// so rows of any length need no scalar epilogue.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Avx512Math.h"
#include "codegen/CPU/RowKernels.h"

#include <cmath>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx512;

FOLIO_AVX512 float sumSquares(const float *x, int64_t n, float center) {
  __m512 c = _mm512_set1_ps(center);
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(x + i), c);
    __m512 d1 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 16), c);
    a0 = _mm512_fmadd_ps(d0, d0, a0);
    a1 = _mm512_fmadd_ps(d1, d1, a1);
  }
  for (; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tailMask(n - i);
    __m512 d = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, x + i), c);
    a0 = _mm512_fmadd_ps(d, d, a0);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

FOLIO_AVX512 float sum(const float *x, int64_t n) {
  __m512 a = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tailMask(n - i);
    a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(m, x + i));
  }
  return _mm512_reduce_add_ps(a);
}

FOLIO_AVX512 void rmsNorm(const float *x, const float *w, float weightOffset,
                          float eps, float *y, int64_t n) {
  float inv = 1.0f / std::sqrt(sumSquares(x, n, 0.0f) / float(n) + eps);
  __m512 vinv = _mm512_set1_ps(inv), off = _mm512_set1_ps(weightOffset);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tailMask(n - i);
    __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vinv);
    __m512 g = w ? _mm512_add_ps(off, _mm512_maskz_loadu_ps(m, w + i)) : off;
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(v, g));
  }
}

FOLIO_AVX512 void layerNorm(const float *x, const float *w, const float *b,
                            float eps, float *y, int64_t n) {
  float mean = sum(x, n) / float(n);
  float inv = 1.0f / std::sqrt(sumSquares(x, n, mean) / float(n) + eps);
  __m512 vmean = _mm512_set1_ps(mean), vinv = _mm512_set1_ps(inv);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tailMask(n - i);
    __m512 v = _mm512_mul_ps(
        _mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vmean), vinv);
    if (w)
      v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, w + i));
    if (b)
      v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, b + i));
    _mm512_mask_storeu_ps(y + i, m, v);
  }
}

FOLIO_AVX512 inline __m512 act16(__m512 x, Activation act) {
  __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f);
  switch (act) {
  case Activation::Silu: {
    __m512 e = avx512::exp(_mm512_sub_ps(_mm512_setzero_ps(), x));
    return _mm512_div_ps(x, _mm512_add_ps(one, e));
  }
  case Activation::GeluErf: {
    __m512 e =
        avx512::erf(_mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752f)));
    return _mm512_mul_ps(_mm512_mul_ps(half, x), _mm512_add_ps(one, e));
  }
  case Activation::GeluTanh: {
    __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
    __m512 inner =
        _mm512_mul_ps(_mm512_set1_ps(0.7978845608028654f),
                      _mm512_fmadd_ps(x3, _mm512_set1_ps(0.044715f), x));
    return _mm512_mul_ps(_mm512_mul_ps(half, x),
                         _mm512_add_ps(one, avx512::tanh(inner)));
  }
  }
  return x;
}

FOLIO_AVX512 void activation(const float *x, float *y, int64_t n,
                             Activation act) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tailMask(n - i);
    _mm512_mask_storeu_ps(y + i, m,
                          act16(_mm512_maskz_loadu_ps(m, x + i), act));
  }
}

FOLIO_AVX512 void gated(const float *gate, const float *up, float *y, int64_t n,
                        Activation act) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tailMask(n - i);
    __m512 g = act16(_mm512_maskz_loadu_ps(m, gate + i), act);
    _mm512_mask_storeu_ps(y + i, m,
                          _mm512_mul_ps(g, _mm512_maskz_loadu_ps(m, up + i)));
  }
}

FOLIO_AVX512 void add(const float *a, const float *b, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tailMask(n - i);
    _mm512_mask_storeu_ps(y + i, m,
                          _mm512_add_ps(_mm512_maskz_loadu_ps(m, a + i),
                                        _mm512_maskz_loadu_ps(m, b + i)));
  }
}

FOLIO_AVX512 void softmax(const float *x, float *y, int64_t n) {
  __m512 vmax = _mm512_set1_ps(-INFINITY);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tailMask(n - i);
    vmax = _mm512_mask_max_ps(vmax, m, vmax, _mm512_maskz_loadu_ps(m, x + i));
  }
  float mx = _mm512_reduce_max_ps(vmax);
  if (mx == -INFINITY) { // every entry masked: define the row as zeros
    for (int64_t i = 0; i < n; ++i)
      y[i] = 0.0f;
    return;
  }
  __m512 vm = _mm512_set1_ps(mx), vs = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tailMask(n - i);
    __m512 e = avx512::exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vm));
    vs = _mm512_mask_add_ps(vs, m, vs, e);
    _mm512_mask_storeu_ps(y + i, m, e);
  }
  __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vs));
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tailMask(n - i);
    _mm512_mask_storeu_ps(y + i, m,
                          _mm512_mul_ps(_mm512_maskz_loadu_ps(m, y + i), inv));
  }
}

FOLIO_AVX512 void softCap(const float *x, float *y, int64_t n, float cap) {
  __m512 vcap = _mm512_set1_ps(cap), inv = _mm512_set1_ps(1.0f / cap);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tailMask(n - i);
    __m512 t =
        avx512::tanh(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), inv));
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(t, vcap));
  }
}

FOLIO_AVX512 void rotary(const float *x, float *y, const float *cs,
                         int64_t half, int64_t n, bool interleaved) {
  const float *cp = cs, *sp = cs + half;
  if (!interleaved) {
    for (int64_t i = 0; i < half; i += 16) {
      __mmask16 m = half - i >= 16 ? __mmask16(0xffff) : tailMask(half - i);
      __m512 a = _mm512_maskz_loadu_ps(m, x + i);
      __m512 b = _mm512_maskz_loadu_ps(m, x + half + i);
      __m512 c = _mm512_maskz_loadu_ps(m, cp + i);
      __m512 s = _mm512_maskz_loadu_ps(m, sp + i);
      _mm512_mask_storeu_ps(
          y + i, m, _mm512_sub_ps(_mm512_mul_ps(a, c), _mm512_mul_ps(b, s)));
      _mm512_mask_storeu_ps(
          y + half + i, m,
          _mm512_add_ps(_mm512_mul_ps(b, c), _mm512_mul_ps(a, s)));
    }
  } else {
    // Eight pairs per vector: cosines and sines each spread to both lanes
    // of their pair, the sines negated on the even lanes, so that
    // y = x * c + swap(x) * s gives (a c - b s, b c + a s) per pair.
    const __m512i spread =
        _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    const __m512 sign =
        _mm512_set_ps(1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1);
    for (int64_t i = 0; i < half; i += 8) {
      int64_t pairs = half - i >= 8 ? 8 : half - i;
      __mmask16 half8 = tailMask(pairs);
      __mmask16 m = pairs == 8 ? __mmask16(0xffff) : tailMask(2 * pairs);
      __m512 v = _mm512_maskz_loadu_ps(m, x + 2 * i);
      __m512 c =
          _mm512_permutexvar_ps(spread, _mm512_maskz_loadu_ps(half8, cp + i));
      __m512 s = _mm512_mul_ps(
          _mm512_permutexvar_ps(spread, _mm512_maskz_loadu_ps(half8, sp + i)),
          sign);
      __m512 swapped = _mm512_permute_ps(v, 0xB1);
      _mm512_mask_storeu_ps(
          y + 2 * i, m,
          _mm512_add_ps(_mm512_mul_ps(v, c), _mm512_mul_ps(swapped, s)));
    }
  }
  for (int64_t i = 2 * half; y != x && i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tailMask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_maskz_loadu_ps(m, x + i));
  }
}

} // namespace

const RowKernels &avx512RowKernels() {
  static const RowKernels table = {rmsNorm, layerNorm, activation, gated,
                                   add,     softmax,   softCap,    rotary};
  return table;
}

} // namespace folio::cpu::detail
