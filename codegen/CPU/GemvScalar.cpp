//===- GemvScalar.cpp - Portable small-M kernel ---------------------------===//

#include "codegen/CPU/DType.h"
#include "codegen/CPU/Gemv.h"

namespace folio::cpu::detail {

namespace {

enum class W { F32, Bf16, F16 };

template <W T> inline float weightAt(const void *w, int64_t i) {
  if constexpr (T == W::Bf16)
    return bf16ToFloat(static_cast<const uint16_t *>(w)[i]);
  else if constexpr (T == W::F16)
    return f16ToFloat(static_cast<const uint16_t *>(w)[i]);
  else
    return static_cast<const float *>(w)[i];
}

/// Eight partial sums per output give the loop independent chains.
template <W T> void run(const GemvArgs &a, int64_t nBegin, int64_t nEnd) {
  for (int64_t n = nBegin; n < nEnd; ++n) {
    int64_t rowOff = n * a.k;
    for (int64_t m = 0; m < a.m; ++m) {
      const float *x = a.x + m * a.k;
      float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      int64_t i = 0;
      for (; i + 8 <= a.k; i += 8)
        for (int j = 0; j < 8; ++j)
          acc[j] += x[i + j] * weightAt<T>(a.w, rowOff + i + j);
      float s = 0;
      for (; i < a.k; ++i)
        s += x[i] * weightAt<T>(a.w, rowOff + i);
      for (int j = 0; j < 8; ++j)
        s += acc[j];
      a.y[m * a.n + n] = s + (a.bias ? a.bias[n] : 0.0f);
    }
  }
}

} // namespace

void splitPairs(const float *x, int64_t m, int64_t k, float *dst) {
  const int64_t kp = pairSplitLength(k);
  const int64_t half = kGemvPairBlock / 2;
  for (int64_t r = 0; r < m; ++r) {
    const float *src = x + r * k;
    float *out = dst + r * kp;
    for (int64_t i = 0; i < kp; ++i) {
      int64_t block = i / kGemvPairBlock * kGemvPairBlock;
      int64_t lane = i % kGemvPairBlock;
      int64_t from = block + (lane < half ? 2 * lane : 2 * (lane - half) + 1);
      out[i] = from < k ? src[from] : 0.0f;
    }
  }
}

void gemvScalar(const GemvArgs &a, int64_t nBegin, int64_t nEnd) {
  if (a.bf16)
    run<W::Bf16>(a, nBegin, nEnd);
  else if (a.f16)
    run<W::F16>(a, nBegin, nEnd);
  else
    run<W::F32>(a, nBegin, nEnd);
}

} // namespace folio::cpu::detail
