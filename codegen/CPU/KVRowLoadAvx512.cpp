//===- KVRowLoadAvx512.cpp - Cache rows with AVX-512 ----------------------===//
//
// fp8 widens in registers through f16 (an e5m2 code is the high byte of an
// f16; an e4m3 code shifted left by 7 is an f16 of 1/256 its value), int8 /
// int4 codes widen to f32 and meet their group's broadcast scale and min in
// one FMA (exact product, so the same single rounding as the scalar
// definition). Stores compute each group's params with the scalar helper.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Avx512Math.h"
#include "codegen/CPU/Convert.h"
#include "codegen/CPU/Fp8Avx512.h"
#include "codegen/CPU/KVQuant.h"
#include "codegen/CPU/KVRowLoad.h"

#include <cmath>
#include <cstring>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx512;

FOLIO_AVX512 inline __mmask16 maskOf(int64_t n) {
  return n >= 16 ? __mmask16(0xffff) : tailMask(n);
}

/// The group's {scale, min} as two broadcast vectors (vcvtph2ps gives what
/// f16ToFloat gives, NaNs included once an arithmetic op has quieted them).
FOLIO_AVX512 inline void groupScaleMin(const uint16_t *params, __m512 &scale,
                                       __m512 &mn) {
  int32_t pair;
  std::memcpy(&pair, params, 4);
  __m128 sm = _mm_cvtph_ps(_mm_cvtsi32_si128(pair));
  scale = _mm512_broadcastss_ps(sm);
  mn = _mm512_broadcastss_ps(_mm_movehdup_ps(sm));
}

/// Rows at rows[j] to out + j * hd. Full vectors when hd is a multiple of
/// 16 (the usual head sizes), masked tails otherwise.
template <DType T>
FOLIO_AVX512 void loadFp8(const char *const *rows, int64_t n, int64_t hd,
                          float scale, float *out) {
  __m512 s = _mm512_set1_ps(scale);
  for (int64_t j = 0; j < n; ++j, out += hd) {
    const uint8_t *b = reinterpret_cast<const uint8_t *>(rows[j]);
    for (int64_t i = 0; i < hd; i += 16) {
      __mmask16 m = maskOf(hd - i);
      _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(fp8x16<T>(b + i, m), s));
    }
  }
}

/// 16 int8 codes (m of them) as f32 min + q * scale.
FOLIO_AVX512 inline __m512 int8x16(const uint8_t *b, __mmask16 m, __m512 scale,
                                   __m512 mn) {
  __m512 q =
      _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, b)));
  // q * scale is exact, so the FMA rounds as the scalar min + q * scale.
  return _mm512_fmadd_ps(q, scale, mn);
}

FOLIO_AVX512 void loadInt8(const char *const *rows,
                           const uint16_t *const *params, int64_t n, int64_t hd,
                           int64_t group, float *out) {
  const bool full = group % 16 == 0;
  for (int64_t j = 0; j < n; ++j, out += hd) {
    const uint8_t *b = reinterpret_cast<const uint8_t *>(rows[j]);
    const uint16_t *p = params[j];
    for (int64_t g = 0; g < hd; g += group, p += 2) {
      __m512 scale, mn;
      groupScaleMin(p, scale, mn);
      if (full) {
        for (int64_t i = g; i < g + group; i += 16)
          _mm512_storeu_ps(out + i, int8x16(b + i, 0xffff, scale, mn));
        continue;
      }
      for (int64_t i = g; i < g + group; i += 16) {
        __mmask16 m = maskOf(g + group - i);
        _mm512_mask_storeu_ps(out + i, m, int8x16(b + i, m, scale, mn));
      }
    }
  }
}

FOLIO_AVX512 void loadInt4(const char *const *rows,
                           const uint16_t *const *params, int64_t n, int64_t hd,
                           int64_t group, float *out) {
  const __m128i low = _mm_set1_epi8(0x0f);
  for (int64_t j = 0; j < n; ++j, out += hd) {
    const uint8_t *b = reinterpret_cast<const uint8_t *>(rows[j]);
    const uint16_t *p = params[j];
    for (int64_t g = 0; g < hd; g += group, p += 2) {
      __m512 scale, mn;
      groupScaleMin(p, scale, mn);
      // 32 codes (16 bytes) per step: the nibbles interleaved back into
      // element order, low nibble first.
      for (int64_t i = g; i < g + group; i += 32) {
        int64_t left = g + group - i; // even
        __m128i bytes = _mm_maskz_loadu_epi8(
            left >= 32 ? __mmask16(0xffff) : tailMask(left / 2), b + i / 2);
        __m128i lo = _mm_and_si128(bytes, low);
        __m128i hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), low);
        __m512 q0 =
            _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi)));
        __m512 q1 =
            _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpackhi_epi8(lo, hi)));
        __m512 x0 = _mm512_fmadd_ps(q0, scale, mn);
        __m512 x1 = _mm512_fmadd_ps(q1, scale, mn);
        if (left >= 32) {
          _mm512_storeu_ps(out + i, x0);
          _mm512_storeu_ps(out + i + 16, x1);
        } else {
          _mm512_mask_storeu_ps(out + i, maskOf(left), x0);
          if (left > 16)
            _mm512_mask_storeu_ps(out + i + 16, maskOf(left - 16), x1);
        }
      }
    }
  }
}

/// 16 int2 codes from element i (a multiple of 4) of row b, m of them
/// real, as f32: element 4k + j is bits 2j..2j+1 of byte k, so lane l's
/// code is bits 2l..2l+1 of the little-endian word of the 4 bytes.
FOLIO_AVX512 inline __m512 int2x16(const uint8_t *b, int64_t i, __mmask16 m) {
  int64_t left = m == 0xffff ? 16 : __builtin_popcount(m);
  __m128i bytes = _mm_maskz_loadu_epi8(tailMask((left + 3) / 4), b + i / 4);
  __m512i word = _mm512_set1_epi32(_mm_cvtsi128_si32(bytes));
  const __m512i shifts = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18,
                                           20, 22, 24, 26, 28, 30);
  __m512i q =
      _mm512_and_si512(_mm512_srlv_epi32(word, shifts), _mm512_set1_epi32(3));
  return _mm512_cvtepi32_ps(q);
}

/// int2 rows (DType::I2): resident rows (null params) copied, keys with
/// their block's per-channel params, values with per-group params like
/// int4 (groups that are not a multiple of 16 go through the scalar
/// definition). Every product q * scale is exact, so the FMA rounds as the
/// scalar min + q * scale.
FOLIO_AVX512 void loadInt2(const KvRowFormat &f, const char *const *rows,
                           const uint16_t *const *params, int64_t n,
                           float *out) {
  const int64_t hd = f.headDim, group = f.group;
  for (int64_t j = 0; j < n; ++j, out += hd) {
    const uint8_t *b = reinterpret_cast<const uint8_t *>(rows[j]);
    const uint16_t *p = params[j];
    if (!p) {
      std::memcpy(out, b, size_t(hd) * sizeof(float));
      continue;
    }
    if (f.kiviKey) {
      for (int64_t i = 0; i < hd; i += 16) {
        __mmask16 m = maskOf(hd - i);
        // 16 {scale, min} pairs: scales in the low halves, mins high.
        __m512i pairs = _mm512_maskz_loadu_epi32(m, p + 2 * i);
        __m512 scale = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(pairs));
        __m512 mn = _mm512_cvtph_ps(
            _mm512_cvtepi32_epi16(_mm512_srli_epi32(pairs, 16)));
        _mm512_mask_storeu_ps(out + i, m,
                              _mm512_fmadd_ps(int2x16(b, i, m), scale, mn));
      }
      continue;
    }
    if (group % 16 != 0) {
      dequantizeKvRow(b, p, hd, DType::I2, group, 1.0f, out);
      continue;
    }
    for (int64_t g = 0; g < hd; g += group, p += 2) {
      __m512 scale, mn;
      groupScaleMin(p, scale, mn);
      for (int64_t i = g; i < g + group; i += 16)
        _mm512_storeu_ps(out + i,
                         _mm512_fmadd_ps(int2x16(b, i, 0xffff), scale, mn));
    }
  }
}

/// f32 to fp8 codes, bit-exact with floatToFp8E4M3 / floatToFp8E5M2:
/// normal results by integer rounding of the f32 bits, subnormal ones by
/// scaling to units of the smallest subnormal (exact) and rounding to an
/// integer, both to nearest even.
template <DType T> FOLIO_AVX512 inline __m128i toFp8(__m512 x) {
  constexpr int man = T == DType::FP8E4M3 ? 3 : 2;
  constexpr int bias = T == DType::FP8E4M3 ? 7 : 15;
  constexpr int emin = 1 - bias;
  constexpr int maxCode = T == DType::FP8E4M3 ? 0x7e : 0x7b;
  constexpr int shift = 23 - man;
  __m512i u = _mm512_castps_si512(x);
  __m512i sign = _mm512_srli_epi32(
      _mm512_and_si512(u, _mm512_set1_epi32(int(0x80000000u))), 24);
  __m512i a = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
  __m512i lsb =
      _mm512_and_si512(_mm512_srli_epi32(a, shift), _mm512_set1_epi32(1));
  __m512i r = _mm512_add_epi32(
      a, _mm512_add_epi32(lsb, _mm512_set1_epi32((1 << (shift - 1)) - 1)));
  __m512i code = _mm512_sub_epi32(_mm512_srli_epi32(r, shift),
                                  _mm512_set1_epi32((127 - bias) << man));
  code = _mm512_min_epu32(code, _mm512_set1_epi32(maxCode));
  // Below the smallest normal: |x| / 2^(emin - man), rounded.
  __mmask16 sub =
      _mm512_cmplt_epi32_mask(a, _mm512_set1_epi32((127 + emin) << 23));
  __m512 units = _mm512_mul_ps(_mm512_castsi512_ps(a),
                               _mm512_set1_ps(float(1 << (man - emin))));
  __m512i subCode = _mm512_cvtps_epi32(_mm512_roundscale_ps(
      units, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  code = _mm512_mask_mov_epi32(code, sub, subCode);
  // NaN, and inf (e4m3fn has none: NaN too).
  __mmask16 nan = _mm512_cmpgt_epi32_mask(a, _mm512_set1_epi32(0x7f800000));
  __mmask16 inf = _mm512_cmpeq_epi32_mask(a, _mm512_set1_epi32(0x7f800000));
  if constexpr (T == DType::FP8E4M3) {
    code = _mm512_mask_mov_epi32(code, nan | inf, _mm512_set1_epi32(0x7f));
  } else {
    code = _mm512_mask_mov_epi32(code, nan, _mm512_set1_epi32(0x7e));
    code = _mm512_mask_mov_epi32(code, inf, _mm512_set1_epi32(0x7c));
  }
  return _mm512_cvtepi32_epi8(_mm512_or_si512(code, sign));
}

template <DType T>
FOLIO_AVX512 void storeFp8(const float *x, int64_t hd, float scale,
                           uint8_t *b) {
  __m512 s = _mm512_set1_ps(scale);
  for (int64_t i = 0; i < hd; i += 16) {
    __mmask16 m = maskOf(hd - i);
    __m512 v = _mm512_div_ps(_mm512_maskz_loadu_ps(m, x + i), s);
    _mm_mask_storeu_epi8(b + i, m, toFp8<T>(v));
  }
}

/// Codes of 16 values (n of them real) of a group with the given params,
/// as quantizeKvRow computes them.
FOLIO_AVX512 inline __m512i codes16(__m512 x, __m512 mn, __m512 scale,
                                    __m512 qmax) {
  __m512 t =
      _mm512_roundscale_ps(_mm512_div_ps(_mm512_sub_ps(x, mn), scale),
                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  t = _mm512_min_ps(_mm512_max_ps(t, _mm512_setzero_ps()), qmax);
  return _mm512_cvtps_epi32(t);
}

/// One int8 / int4 group's params; false when it holds a NaN or an inf.
FOLIO_AVX512 bool groupParams(const float *x, int64_t n, unsigned qmax,
                              uint16_t *params) {
  __m512 lo = _mm512_set1_ps(INFINITY), hi = _mm512_set1_ps(-INFINITY);
  __mmask16 bad = 0;
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = maskOf(n - i);
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    bad |= _mm512_mask_fpclass_ps_mask(m, v, 0x99); // NaN or +-inf
    lo = _mm512_mask_min_ps(lo, m, lo, v);
    hi = _mm512_mask_max_ps(hi, m, hi, v);
  }
  if (bad) {
    params[0] = params[1] = kKvNanParam;
    return false;
  }
  kvGroupParams(_mm512_reduce_min_ps(lo), _mm512_reduce_max_ps(hi), qmax,
                params[0], params[1]);
  return true;
}

FOLIO_AVX512 void storeInt8(const float *x, int64_t hd, int64_t group,
                            uint8_t *b, uint16_t *params) {
  for (int64_t g = 0; g < hd; g += group, params += 2) {
    bool finite = groupParams(x + g, group, 255, params);
    float s = f16ToFloat(params[0]);
    __m512 scale = _mm512_set1_ps(s),
           mn = _mm512_set1_ps(f16ToFloat(params[1]));
    for (int64_t i = g; i < g + group; i += 16) {
      __mmask16 m = maskOf(g + group - i);
      __m128i q = _mm_setzero_si128();
      if (finite && s != 0.0f)
        q = _mm512_cvtepi32_epi8(codes16(_mm512_maskz_loadu_ps(m, x + i), mn,
                                         scale, _mm512_set1_ps(255.0f)));
      _mm_mask_storeu_epi8(b + i, m, q);
    }
  }
}

FOLIO_AVX512 void storeInt4(const float *x, int64_t hd, int64_t group,
                            uint8_t *b, uint16_t *params) {
  for (int64_t g = 0; g < hd; g += group, params += 2) {
    bool finite = groupParams(x + g, group, 15, params);
    float s = f16ToFloat(params[0]);
    __m512 scale = _mm512_set1_ps(s),
           mn = _mm512_set1_ps(f16ToFloat(params[1]));
    for (int64_t i = g; i < g + group; i += 16) {
      int64_t n = g + group - i < 16 ? g + group - i : 16; // even
      __m128i packed = _mm_setzero_si128();
      if (finite && s != 0.0f) {
        __m128i q = _mm512_cvtepi32_epi8(
            codes16(_mm512_maskz_loadu_ps(maskOf(n), x + i), mn, scale,
                    _mm512_set1_ps(15.0f)));
        // Each 16-bit lane holds codes 2j (low byte) and 2j + 1: one byte
        // with the first in its low nibble.
        __m128i pairs = _mm_or_si128(
            _mm_and_si128(q, _mm_set1_epi16(0x000f)),
            _mm_and_si128(_mm_srli_epi16(q, 4), _mm_set1_epi16(0x00f0)));
        packed = _mm_cvtepi16_epi8(pairs);
      }
      _mm_mask_storeu_epi8(b + i / 2, tailMask(n / 2), packed);
    }
  }
}

} // namespace

FOLIO_AVX512 void loadKvRowsAvx512(const KvRowFormat &f,
                                   const char *const *rows,
                                   const uint16_t *const *params, int64_t n,
                                   float *out) {
  const int64_t hd = f.headDim;
  switch (f.dtype) {
  case DType::F32:
  case DType::BF16:
  case DType::F16:
    for (int64_t j = 0; j < n; ++j)
      f.dtype == DType::F32 ? loadRow(rows[j], f.dtype, out + j * hd, hd)
                            : loadRowAvx512(rows[j], f.dtype, out + j * hd, hd);
    return;
  case DType::FP8E4M3:
    return loadFp8<DType::FP8E4M3>(rows, n, hd, f.scale, out);
  case DType::FP8E5M2:
    return loadFp8<DType::FP8E5M2>(rows, n, hd, f.scale, out);
  case DType::I8:
    return loadInt8(rows, params, n, hd, f.group, out);
  case DType::I4:
    return loadInt4(rows, params, n, hd, f.group, out);
  case DType::I2:
    return loadInt2(f, rows, params, n, out);
  }
}

FOLIO_AVX512 void loadKvRowAvx512(const KvRowFormat &f, const void *data,
                                  const uint16_t *params, float *out) {
  const char *row = static_cast<const char *>(data);
  loadKvRowsAvx512(f, &row, &params, 1, out);
}

FOLIO_AVX512 void storeKvRowAvx512(const KvRowFormat &f, const float *x,
                                   void *data, uint16_t *params) {
  uint8_t *b = static_cast<uint8_t *>(data);
  switch (f.dtype) {
  case DType::F32:
  case DType::BF16:
  case DType::F16:
    return f.dtype == DType::F32 ? storeRow(x, data, f.dtype, f.headDim)
                                 : storeRowAvx512(x, data, f.dtype, f.headDim);
  case DType::FP8E4M3:
    return storeFp8<DType::FP8E4M3>(x, f.headDim, f.scale, b);
  case DType::FP8E5M2:
    return storeFp8<DType::FP8E5M2>(x, f.headDim, f.scale, b);
  case DType::I8:
    return storeInt8(x, f.headDim, f.group, b, params);
  case DType::I4:
    return storeInt4(x, f.headDim, f.group, b, params);
  case DType::I2: // int2 values are quantized per block, off the hot path
    return quantizeKvRow(x, f.headDim, f.dtype, f.group, f.scale, data, params);
  }
}

} // namespace folio::cpu::detail
