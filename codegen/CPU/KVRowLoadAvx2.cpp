//===- KVRowLoadAvx2.cpp - Cache rows with AVX2 ---------------------------===//
//
// The row loads the attention tiles run once per chunk of keys: int8,
// int4, fp8, bf16 and f16. An int8 / int4 group is its codes widened to
// f32 and one FMA with the group's broadcast scale and min: q * scale is
// exact (an 8-bit code times an f16), so the FMA rounds as the scalar
// min + q * scale does and every row is bit-identical to dequantizeKvRow;
// fp8 widens exactly through f16 and takes its static scale in one
// multiply, as the scalar definition. int2 takes the portable loops
// (KVRowLoad.cpp).
//
// Stores (storeKvRowAvx2): int8 and int4 rows, the cache types CPU plans
// use, quantized as quantizeKvRow does, bit for bit: each group's range in
// vectors (its params from the scalar helper), then (x - min) / scale
// rounded to nearest even and clamped, eight codes at a time; a group
// that is not a multiple of 8 finishes in scalar code with the same
// operations. On the bundled target (int8, 4 kv heads of 32) this took a
// layer's kv_write from 9.5 to 3.0 us for a k = 4 verify step's 5 tokens
// and from 2.1 to 1.0 us for one decode token (an Intel Xeon limited to
// AVX2). fp8 rows are coded on their bit patterns eight at a time, as
// floatToFp8E4M3 / E5M2 do; bf16 and f16 rows go through storeRow
// (ConvertAvx2.cpp); int2 rows take the portable loops.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Avx2Math.h"
#include "codegen/CPU/Convert.h"
#include "codegen/CPU/DType.h"
#include "codegen/CPU/KVQuant.h"
#include "codegen/CPU/KVRowLoad.h"

#include <cmath>
#include <cstring>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx2;

/// One group's {scale, min} as a pair of broadcast vectors and scalars.
struct GroupParams {
  __m256 scale, mn;
  float s, m;
};

FOLIO_AVX2 inline GroupParams groupParams(const uint16_t *p) {
  int32_t pair;
  std::memcpy(&pair, p, 4);
  __m128 sm = _mm_cvtph_ps(_mm_cvtsi32_si128(pair));
  __m128 mh = _mm_movehdup_ps(sm);
  return {_mm256_broadcastss_ps(sm), _mm256_broadcastss_ps(mh),
          _mm_cvtss_f32(sm), _mm_cvtss_f32(mh)};
}

/// 8 int8 codes as min + q * scale.
FOLIO_AVX2 inline __m256 int8x8(const uint8_t *b, __m256 scale, __m256 mn) {
  __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(
      _mm_loadl_epi64(reinterpret_cast<const __m128i *>(b))));
  return _mm256_fmadd_ps(q, scale, mn);
}

FOLIO_AVX2 void loadInt8(const char *const *rows, const uint16_t *const *params,
                         int64_t n, int64_t hd, int64_t group, float *out) {
  for (int64_t j = 0; j < n; ++j, out += hd) {
    const uint8_t *b = reinterpret_cast<const uint8_t *>(rows[j]);
    const uint16_t *p = params[j];
    for (int64_t g = 0; g < hd; g += group, p += 2) {
      GroupParams gp = groupParams(p);
      int64_t i = g;
      for (; i + 8 <= g + group; i += 8)
        _mm256_storeu_ps(out + i, int8x8(b + i, gp.scale, gp.mn));
      // A group that is not a multiple of 8: the rest one by one, the
      // same single rounding.
      for (; i < g + group; ++i)
        out[i] = __builtin_fmaf(float(b[i]), gp.s, gp.m);
    }
  }
}

/// bf16 / f16 rows: exact widening, 8 at a time.
template <bool Bf16>
FOLIO_AVX2 void loadHalf(const char *const *rows, int64_t n, int64_t hd,
                         float *out) {
  for (int64_t j = 0; j < n; ++j, out += hd) {
    const uint16_t *h = reinterpret_cast<const uint16_t *>(rows[j]);
    int64_t i = 0;
    for (; i + 8 <= hd; i += 8) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(h + i));
      _mm256_storeu_ps(out + i, Bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(
                                           _mm256_cvtepu16_epi32(v), 16))
                                     : _mm256_cvtph_ps(v));
    }
    for (; i < hd; ++i)
      out[i] = Bf16 ? bf16ToFloat(h[i]) : f16ToFloat(h[i]);
  }
}

/// int4 rows: 8 codes (4 bytes, low nibble first) per step, the nibbles
/// interleaved back into element order, then as int8; groups that are not
/// a multiple of 8 finish element by element with the same rounding.
FOLIO_AVX2 void loadInt4(const char *const *rows, const uint16_t *const *params,
                         int64_t n, int64_t hd, int64_t group, float *out) {
  const __m128i low = _mm_set1_epi8(0x0f);
  for (int64_t j = 0; j < n; ++j, out += hd) {
    const uint8_t *b = reinterpret_cast<const uint8_t *>(rows[j]);
    const uint16_t *p = params[j];
    for (int64_t g = 0; g < hd; g += group, p += 2) {
      GroupParams gp = groupParams(p);
      int64_t i = g; // even: groups of int4 caches are even
      for (; i + 8 <= g + group; i += 8) {
        int32_t four;
        std::memcpy(&four, b + i / 2, 4);
        __m128i bytes = _mm_cvtsi32_si128(four);
        __m128i codes =
            _mm_unpacklo_epi8(_mm_and_si128(bytes, low),
                              _mm_and_si128(_mm_srli_epi16(bytes, 4), low));
        __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(codes));
        _mm256_storeu_ps(out + i, _mm256_fmadd_ps(q, gp.scale, gp.mn));
      }
      for (; i < g + group; ++i) {
        unsigned q = (b[i / 2] >> (4 * (i % 2))) & 0xfu;
        out[i] = __builtin_fmaf(float(q), gp.s, gp.m);
      }
    }
  }
}

/// 8 fp8 codes as f32 (times the static scale after), through f16 as the
/// AVX-512 loader: an e5m2 code is the high byte of an f16, an e4m3 code
/// shifted left by 7 is an f16 of 1/256 its value; NaN codes become the
/// quiet NaN of their sign, as the scalar conversions give them.
template <bool E4M3> FOLIO_AVX2 inline __m256 fp8x8(const uint8_t *c) {
  __m128i w =
      _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(c)));
  __m128i sign = _mm_slli_epi16(_mm_and_si128(w, _mm_set1_epi16(0x80)), 8);
  __m128i mag = _mm_and_si128(w, _mm_set1_epi16(0x7f));
  __m128i nanH = _mm_or_si128(sign, _mm_set1_epi16(0x7e00));
  if constexpr (E4M3) {
    __m128i h = _mm_or_si128(sign, _mm_slli_epi16(mag, 7));
    __m128i nan = _mm_cmpeq_epi16(mag, _mm_set1_epi16(0x7f));
    h = _mm_blendv_epi8(h, nanH, nan);
    // Exact: a power-of-two scaling of a value well inside f32's range.
    return _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(256.0f));
  } else {
    __m128i h = _mm_slli_epi16(w, 8);
    __m128i nan = _mm_cmpgt_epi16(mag, _mm_set1_epi16(0x7c));
    return _mm256_cvtph_ps(_mm_blendv_epi8(h, nanH, nan));
  }
}

template <bool E4M3>
FOLIO_AVX2 void loadFp8(const char *const *rows, int64_t n, int64_t hd,
                        float scale, float *out) {
  const __m256 s = _mm256_set1_ps(scale);
  for (int64_t j = 0; j < n; ++j, out += hd) {
    const uint8_t *b = reinterpret_cast<const uint8_t *>(rows[j]);
    int64_t i = 0;
    for (; i + 8 <= hd; i += 8)
      _mm256_storeu_ps(out + i, _mm256_mul_ps(fp8x8<E4M3>(b + i), s));
    for (; i < hd; ++i)
      out[i] = (E4M3 ? fp8E4M3ToFloat(b[i]) : fp8E5M2ToFloat(b[i])) * scale;
  }
}

/// One int8 / int4 group's params as quantizeKvRow sets them; false (both
/// params the NaN marker) when the group holds a NaN or an infinity. Min
/// and max are exact in any order (zeros of either sign give the same
/// params: kvGroupParams).
FOLIO_AVX2 bool storeParams(const float *x, int64_t n, unsigned qmax,
                            uint16_t *params) {
  const __m256 absMask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 inf = _mm256_set1_ps(INFINITY);
  __m256 lo = inf, hi = _mm256_set1_ps(-INFINITY), bad = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    // NaN or +-inf: |v| not below inf (unordered counts).
    bad = _mm256_or_ps(
        bad, _mm256_cmp_ps(_mm256_and_ps(v, absMask), inf, _CMP_NLT_UQ));
    lo = _mm256_min_ps(lo, v);
    hi = _mm256_max_ps(hi, v);
  }
  float l[8], h[8];
  _mm256_storeu_ps(l, lo);
  _mm256_storeu_ps(h, hi);
  bool nonFinite = _mm256_movemask_ps(bad) != 0;
  float mn = l[0], mx = h[0];
  for (int j = 1; j < 8; ++j) {
    mn = l[j] < mn ? l[j] : mn;
    mx = h[j] > mx ? h[j] : mx;
  }
  for (; i < n; ++i) {
    nonFinite |= !std::isfinite(x[i]);
    mn = x[i] < mn ? x[i] : mn;
    mx = x[i] > mx ? x[i] : mx;
  }
  if (nonFinite) {
    params[0] = params[1] = kKvNanParam;
    return false;
  }
  kvGroupParams(mn, mx, qmax, params[0], params[1]);
  return true;
}

/// Codes of 8 values: (x - min) / scale rounded to nearest even, clamped
/// to [0, qmax], as 8 u16 lanes.
FOLIO_AVX2 inline __m128i codes8(const float *x, __m256 mn, __m256 scale,
                                 __m256 qmax) {
  __m256 t = _mm256_round_ps(
      _mm256_div_ps(_mm256_sub_ps(_mm256_loadu_ps(x), mn), scale),
      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  t = _mm256_min_ps(_mm256_max_ps(t, _mm256_setzero_ps()), qmax);
  __m256i c = _mm256_cvtps_epi32(t);
  return _mm_packus_epi32(_mm256_castsi256_si128(c),
                          _mm256_extracti128_si256(c, 1));
}

/// int8 (Int4 false) or int4 codes of a row and their groups' params; a
/// group with a NaN or an inf, or a constant one (scale 0), is all 0.
template <bool Int4>
FOLIO_AVX2 void storeCodes(const float *x, int64_t hd, int64_t group,
                           uint8_t *b, uint16_t *params) {
  constexpr unsigned kQmax = Int4 ? 15 : 255;
  for (int64_t g = 0; g < hd; g += group, params += 2) {
    bool finite = storeParams(x + g, group, kQmax, params);
    float s = f16ToFloat(params[0]), m = f16ToFloat(params[1]);
    if (!finite || s == 0.0f) {
      std::memset(b + (Int4 ? g / 2 : g), 0, size_t(Int4 ? group / 2 : group));
      continue;
    }
    const __m256 scale = _mm256_set1_ps(s), mn = _mm256_set1_ps(m),
                 qmax = _mm256_set1_ps(float(kQmax));
    int64_t i = g; // int4: even, as an int4 group is (validateKVCache)
    for (; i + 8 <= g + group; i += 8) {
      __m128i w = codes8(x + i, mn, scale, qmax);
      if constexpr (Int4) {
        // u16 lane j holds code j; lanes 2j and 2j + 1 become one byte
        // with the first in its low nibble.
        __m128i pairs = _mm_or_si128(_mm_srli_epi32(_mm_slli_epi32(w, 16), 16),
                                     _mm_slli_epi32(_mm_srli_epi32(w, 16), 4));
        __m128i bytes = _mm_packus_epi16(_mm_packus_epi32(pairs, pairs),
                                         _mm_setzero_si128());
        int32_t four = _mm_cvtsi128_si32(bytes);
        std::memcpy(b + i / 2, &four, 4);
      } else {
        _mm_storel_epi64(reinterpret_cast<__m128i *>(b + i),
                         _mm_packus_epi16(w, w));
      }
    }
    for (; i < g + group; i += Int4 ? 2 : 1)
      b[Int4 ? i / 2 : i] = Int4 ? uint8_t(kvCode(x[i], m, s, kQmax) |
                                           (kvCode(x[i + 1], m, s, kQmax) << 4))
                                 : uint8_t(kvCode(x[i], m, s, kQmax));
  }
}

/// Eight f32 as fp8 codes in i32 lanes (e4m3fn or e5m2), as the scalar
/// floatToFp8E4M3 / floatToFp8E5M2: the exponent rebias and nearest-even
/// rounding on the bit patterns, saturating at the largest finite code;
/// below the smallest normal the value in units of the smallest subnormal,
/// rounded to nearest even; NaN (and e4m3's inf) to the NaN code.
template <bool E4M3> FOLIO_AVX2 inline __m256i fp8Codes(__m256 x) {
  constexpr int man = E4M3 ? 3 : 2, bias = E4M3 ? 7 : 15;
  constexpr int emin = 1 - bias, shift = 23 - man;
  constexpr int maxCode = E4M3 ? 0x7e : 0x7b;
  __m256i u = _mm256_castps_si256(x);
  __m256i sign = _mm256_srli_epi32(
      _mm256_and_si256(u, _mm256_set1_epi32(int(0x80000000u))), 24);
  __m256i a = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  __m256i lsb =
      _mm256_and_si256(_mm256_srli_epi32(a, shift), _mm256_set1_epi32(1));
  __m256i r = _mm256_add_epi32(
      a, _mm256_add_epi32(lsb, _mm256_set1_epi32((1 << (shift - 1)) - 1)));
  __m256i code = _mm256_sub_epi32(_mm256_srli_epi32(r, shift),
                                  _mm256_set1_epi32((127 - bias) << man));
  code = _mm256_min_epu32(code, _mm256_set1_epi32(maxCode));
  __m256i sub = _mm256_cmpgt_epi32(_mm256_set1_epi32((127 + emin) << 23), a);
  __m256 units = _mm256_mul_ps(_mm256_castsi256_ps(a),
                               _mm256_set1_ps(float(1 << (man - emin))));
  __m256i subCode = _mm256_cvttps_epi32(
      _mm256_round_ps(units, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  code = _mm256_blendv_epi8(code, subCode, sub);
  __m256i nan = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7f800000));
  __m256i inf = _mm256_cmpeq_epi32(a, _mm256_set1_epi32(0x7f800000));
  if constexpr (E4M3) {
    code = _mm256_blendv_epi8(code, _mm256_set1_epi32(0x7f),
                              _mm256_or_si256(nan, inf));
  } else {
    code = _mm256_blendv_epi8(code, _mm256_set1_epi32(0x7e), nan);
    code = _mm256_blendv_epi8(code, _mm256_set1_epi32(0x7c), inf);
  }
  return _mm256_or_si256(code, sign);
}

/// An fp8 row: x / scale (the static scale) coded eight at a time; the
/// tail with the scalar definition.
template <bool E4M3>
FOLIO_AVX2 void storeFp8(const float *x, int64_t headDim, float scale,
                         uint8_t *b) {
  const __m256 s = _mm256_set1_ps(scale);
  int64_t i = 0;
  for (; i + 8 <= headDim; i += 8) {
    __m256i c = fp8Codes<E4M3>(_mm256_div_ps(_mm256_loadu_ps(x + i), s));
    __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(c),
                                 _mm256_extracti128_si256(c, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i *>(b + i),
                     _mm_packus_epi16(w, w));
  }
  for (; i < headDim; ++i)
    b[i] = E4M3 ? floatToFp8E4M3(x[i] / scale) : floatToFp8E5M2(x[i] / scale);
}

} // namespace

bool storeKvRowAvx2(const KvRowFormat &f, const float *x, void *data,
                    uint16_t *params) {
  uint8_t *b = static_cast<uint8_t *>(data);
  switch (f.dtype) {
  case DType::I8:
    storeCodes<false>(x, f.headDim, f.group, b, params);
    return true;
  case DType::I4:
    storeCodes<true>(x, f.headDim, f.group, b, params);
    return true;
  case DType::FP8E4M3:
    storeFp8<true>(x, f.headDim, f.scale, b);
    return true;
  case DType::FP8E5M2:
    storeFp8<false>(x, f.headDim, f.scale, b);
    return true;
  default:
    return false;
  }
}

bool loadKvRowsAvx2(const KvRowFormat &f, const char *const *rows,
                    const uint16_t *const *params, int64_t n, float *out) {
  switch (f.dtype) {
  case DType::I8:
    loadInt8(rows, params, n, f.headDim, f.group, out);
    return true;
  case DType::BF16:
    loadHalf<true>(rows, n, f.headDim, out);
    return true;
  case DType::F16:
    loadHalf<false>(rows, n, f.headDim, out);
    return true;
  case DType::I4:
    loadInt4(rows, params, n, f.headDim, f.group, out);
    return true;
  case DType::FP8E4M3:
    loadFp8<true>(rows, n, f.headDim, f.scale, out);
    return true;
  case DType::FP8E5M2:
    loadFp8<false>(rows, n, f.headDim, f.scale, out);
    return true;
  default:
    return false;
  }
}

} // namespace folio::cpu::detail
