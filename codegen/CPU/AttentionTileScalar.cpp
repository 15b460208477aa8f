//===- AttentionTileScalar.cpp - Portable attention tile ------------------===//
//
// The row-oriented tile (AttentionTileImpl.inc) in portable loops: f32
// caches are read in place, every other format is widened into scratch by
// the row loaders, bit-identical to the reference dequantization.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/AttentionChunk.h"
#include "codegen/CPU/AttentionTile.h"
#include "codegen/CPU/DType.h"

#include <cmath>
#include <utility>
#include <vector>

namespace folio::cpu::detail {

// The int8 folding (RowSrc::I8) of AttentionTileImpl.inc's contract,
// declared only: the portable tile widens int8 rows like every other
// quantized format (RowSrc::Scratch), bit-identical to the reference
// dequantization, so its int8 branches are never instantiated.
void rowParams(const uint16_t *const *params, int64_t n, float *scale,
               float *mn);
void foldKeyParams(float *s, int64_t n, const float *scale, const float *mn,
                   float qSum);
float foldValueParams(float *p, int64_t n, const float *scale, const float *mn);

namespace {

#define FOLIO_TILE_TARGET

float dot(const float *a, const float *b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j)
      acc[j] += a[i + j] * b[i + j];
  float s = 0;
  for (; i < n; ++i)
    s += a[i] * b[i];
  for (int j = 0; j < 8; ++j)
    s += acc[j];
  return s;
}

/// Scalar rows are f32 (in the cache or widened into scratch).
inline const float *floatRow(const char *row) {
  return reinterpret_cast<const float *>(row);
}

template <RowSrc S, int R>
void qkRows(const float *q, int64_t hd, const char *const *k, int64_t nKeys,
            float *s, const RowPrefetch &pf) {
  static_assert(S == RowSrc::F32 || S == RowSrc::Scratch);
  for (int64_t j = 0; j < nKeys; ++j) {
    pf(j);
    for (int64_t r = 0; r < R; ++r)
      s[r * kSStride + j] = dot(q + r * hd, floatRow(k[j]), hd);
  }
}

float maxOf(const float *x, int64_t n) {
  float m = -INFINITY;
  for (int64_t i = 0; i < n; ++i)
    m = x[i] > m ? x[i] : m;
  return m;
}

float expShiftSum(float *x, int64_t n, float m) {
  float s = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - m);
    s += x[i];
  }
  return s;
}

void softCapRow(float *x, int64_t n, float cap) {
  float inv = 1.0f / cap;
  for (int64_t i = 0; i < n; ++i)
    x[i] = std::tanh(x[i] * inv) * cap;
}

template <RowSrc S, int R>
void pvRows(float *acc, int64_t hd, const float *corr, const float *p,
            const char *const *v, int64_t nKeys, const RowPrefetch &pf) {
  static_assert(S == RowSrc::F32 || S == RowSrc::Scratch);
  for (int64_t j = 0; j < nKeys; ++j)
    pf(j);
  for (int64_t r = 0; r < R; ++r) {
    float *ar = acc + r * hd;
    const float *pr = p + r * kSStride;
    if (corr[r] != 1.0f)
      for (int64_t d = 0; d < hd; ++d)
        ar[d] *= corr[r];
    for (int64_t j = 0; j < nKeys; ++j)
      if (pr[j] != 0.0f)
        for (int64_t d = 0; d < hd; ++d)
          ar[d] += pr[j] * floatRow(v[j])[d];
  }
}

/// Rows per pass: four rows' accumulators fill the registers.
constexpr int64_t kPassRows = 4;
#include "codegen/CPU/AttentionTileImpl.inc"

} // namespace

void attendTileScalar(const AttentionTile &tile) {
  if (tile.dtype == DType::F32)
    return attendRows<RowSrc::F32>(tile);
  attendRows<RowSrc::Scratch>(tile);
}

} // namespace folio::cpu::detail
