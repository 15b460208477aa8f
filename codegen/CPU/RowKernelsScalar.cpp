//===- RowKernelsScalar.cpp - Portable row loops --------------------------===//
//
// The fallback for machines without AVX-512. Sums use eight partial sums so
// the loops keep some instruction-level parallelism without -ffast-math.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/RowKernels.h"

#include <algorithm>
#include <cmath>

namespace folio::cpu::detail {

namespace {

float sum(const float *x, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j)
      acc[j] += x[i + j];
  float s = 0;
  for (; i < n; ++i)
    s += x[i];
  for (int j = 0; j < 8; ++j)
    s += acc[j];
  return s;
}

float sumSquares(const float *x, int64_t n, float center) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) {
      float d = x[i + j] - center;
      acc[j] += d * d;
    }
  float s = 0;
  for (; i < n; ++i)
    s += (x[i] - center) * (x[i] - center);
  for (int j = 0; j < 8; ++j)
    s += acc[j];
  return s;
}

void rmsNorm(const float *x, const float *w, float weightOffset, float eps,
             float *y, int64_t n) {
  float inv = 1.0f / std::sqrt(sumSquares(x, n, 0.0f) / float(n) + eps);
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[i] * inv * (weightOffset + (w ? w[i] : 0.0f));
}

void layerNorm(const float *x, const float *w, const float *b, float eps,
               float *y, int64_t n) {
  float mean = sum(x, n) / float(n);
  float inv = 1.0f / std::sqrt(sumSquares(x, n, mean) / float(n) + eps);
  for (int64_t i = 0; i < n; ++i)
    y[i] = (x[i] - mean) * inv * (w ? w[i] : 1.0f) + (b ? b[i] : 0.0f);
}

inline float act1(float x, Activation act) {
  switch (act) {
  case Activation::Silu:
    return x / (1.0f + std::exp(-x));
  case Activation::GeluErf:
    return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
  case Activation::GeluTanh: {
    float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + std::tanh(inner));
  }
  }
  return x;
}

void activation(const float *x, float *y, int64_t n, Activation act) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = act1(x[i], act);
}

void gated(const float *gate, const float *up, float *y, int64_t n,
           Activation act) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = act1(gate[i], act) * up[i];
}

void add(const float *a, const float *b, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = a[i] + b[i];
}

void softmax(const float *x, float *y, int64_t n) {
  float m = -INFINITY;
  for (int64_t i = 0; i < n; ++i)
    m = std::max(m, x[i]);
  if (m == -INFINITY) { // every entry masked: define the row as zeros
    std::fill(y, y + n, 0.0f);
    return;
  }
  float s = 0;
  for (int64_t i = 0; i < n; ++i) {
    y[i] = std::exp(x[i] - m);
    s += y[i];
  }
  float inv = 1.0f / s;
  for (int64_t i = 0; i < n; ++i)
    y[i] *= inv;
}

void softCap(const float *x, float *y, int64_t n, float cap) {
  float inv = 1.0f / cap;
  for (int64_t i = 0; i < n; ++i)
    y[i] = std::tanh(x[i] * inv) * cap;
}

void rotary(const float *x, float *y, const float *cs, int64_t half, int64_t n,
            bool interleaved) {
  const float *c = cs, *s = cs + half;
  // Pair (lo, hi) of element i: the two it rotates.
  int64_t loStep = interleaved ? 2 : 1, hiOff = interleaved ? 1 : half;
  for (int64_t i = 0; i < half; ++i) {
    int64_t lo = i * loStep, hi = lo + hiOff;
    float a = x[lo], b = x[hi];
    y[lo] = a * c[i] - b * s[i];
    y[hi] = b * c[i] + a * s[i];
  }
  if (y != x)
    std::copy(x + 2 * half, x + n, y + 2 * half);
}

} // namespace

const RowKernels &scalarRowKernels() {
  static const RowKernels table = {rmsNorm, layerNorm, activation, gated,
                                   add,     softmax,   softCap,    rotary};
  return table;
}

} // namespace folio::cpu::detail
