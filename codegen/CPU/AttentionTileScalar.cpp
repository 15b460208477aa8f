//===- AttentionTileScalar.cpp - Portable attention tile ------------------===//

#include "codegen/CPU/AttentionChunk.h"
#include "codegen/CPU/AttentionTile.h"

#include <cmath>
#include <utility>
#include <vector>

namespace folio::cpu::detail {

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

void qkScores(const float *const *q, int64_t nRows, const float *const *k,
              int64_t nKeys, int64_t hd, float *s, int64_t sStride,
              const RowPrefetch &pf) {
  for (int64_t j = 0; j < nKeys; ++j) {
    pf(j);
    for (int64_t r = 0; r < nRows; ++r)
      s[r * sStride + j] = dot(q[r], k[j], hd);
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

void pvAccumulate(float *const *acc, const float *corr, const float *p,
                  int64_t pStride, int64_t nRows, const float *const *v,
                  int64_t nKeys, int64_t hd, const RowPrefetch &pf) {
  for (int64_t j = 0; j < nKeys; ++j)
    pf(j);
  for (int64_t r = 0; r < nRows; ++r) {
    float *ar = acc[r];
    const float *pr = p + r * pStride;
    if (corr[r] != 1.0f)
      for (int64_t d = 0; d < hd; ++d)
        ar[d] *= corr[r];
    for (int64_t j = 0; j < nKeys; ++j)
      if (pr[j] != 0.0f)
        for (int64_t d = 0; d < hd; ++d)
          ar[d] += pr[j] * v[j][d];
  }
}

#include "codegen/CPU/AttentionTileImpl.inc"

} // namespace

void attendTileScalar(const AttentionTile &tile) { attendTileImpl(tile); }

} // namespace folio::cpu::detail
