//===- ConvertAvx512.cpp - Row conversions with AVX-512 -------------------===//

#include "codegen/CPU/Avx512Math.h"
#include "codegen/CPU/Convert.h"

namespace folio::cpu::detail {

using namespace folio::cpu::avx512;

FOLIO_AVX512 void storeRowAvx512(const float *src, void *dst, DType t,
                                 int64_t n) {
  if (t != DType::BF16 && t != DType::F16)
    rowTypeMisuse("storeRowAvx512", "bf16 and f16", t);
  uint16_t *d = static_cast<uint16_t *>(dst);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tailMask(n - i);
    __m512 v = _mm512_maskz_loadu_ps(m, src + i);
    __m256i h = t == DType::BF16 ? toBf16(v) : toF16(v);
    _mm256_mask_storeu_epi16(d + i, m, h);
  }
}

FOLIO_AVX512 void loadRowAvx512(const void *src, DType t, float *dst,
                                int64_t n) {
  if (t != DType::BF16 && t != DType::F16)
    rowTypeMisuse("loadRowAvx512", "bf16 and f16", t);
  const uint16_t *s = static_cast<const uint16_t *>(src);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tailMask(n - i);
    __m512 v = t == DType::BF16 ? loadBf16(s + i, m) : loadF16(s + i, m);
    _mm512_mask_storeu_ps(dst + i, m, v);
  }
}

} // namespace folio::cpu::detail
