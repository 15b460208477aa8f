//===- ReferenceElementwise.cpp - Naive norms, activations, rotary --------===//

#include "codegen/CPU/Reference/Reference.h"

#include <cmath>
#include <vector>

namespace folio::cpu::ref {

void rmsNorm(const float *x, const float *w, float *y, int64_t rows,
             int64_t dim, float eps, float weightOffset) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * dim;
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i)
      ss += double(xr[i]) * xr[i];
    double inv = 1.0 / std::sqrt(ss / double(dim) + eps);
    for (int64_t i = 0; i < dim; ++i)
      y[r * dim + i] =
          float(xr[i] * inv * (weightOffset + (w ? double(w[i]) : 0.0)));
  }
}

void layerNorm(const float *x, const float *w, const float *b, float *y,
               int64_t rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * dim;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < dim; ++i)
      mean += xr[i];
    mean /= double(dim);
    for (int64_t i = 0; i < dim; ++i)
      var += (xr[i] - mean) * (xr[i] - mean);
    double inv = 1.0 / std::sqrt(var / double(dim) + eps);
    for (int64_t i = 0; i < dim; ++i)
      y[r * dim + i] =
          float((xr[i] - mean) * inv * (w ? w[i] : 1.0) + (b ? b[i] : 0.0));
  }
}

float activation(float xf, Activation act) {
  double x = xf;
  switch (act) {
  case Activation::Silu:
    return float(x / (1.0 + std::exp(-x)));
  case Activation::GeluErf:
    return float(0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))));
  case Activation::GeluTanh:
    return float(
        0.5 * x *
        (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))));
  }
  return xf;
}

void softmax(const float *x, float *y, int64_t rows, int64_t dim) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * dim;
    double m = -INFINITY;
    for (int64_t i = 0; i < dim; ++i)
      m = std::fmax(m, xr[i]);
    double s = 0;
    for (int64_t i = 0; i < dim; ++i)
      s += m == -INFINITY ? 0.0 : std::exp(xr[i] - m);
    for (int64_t i = 0; i < dim; ++i)
      y[r * dim + i] = s == 0 ? 0.0f : float(std::exp(xr[i] - m) / s);
  }
}

float softCap(float x, float cap) {
  return float(std::tanh(double(x) / cap) * cap);
}

void embedding(const int32_t *ids, int64_t numTokens, const void *table,
               DType tableType, int64_t dim, float scale, float *out) {
  for (int64_t t = 0; t < numTokens; ++t)
    for (int64_t i = 0; i < dim; ++i)
      out[t * dim + i] =
          loadAsFloat(table, tableType, size_t(ids[t] * dim + i)) * scale;
}

namespace {

/// Inverse frequencies, written out from the HF formulas independently of
/// the kernel's rotaryInverseFrequencies. HF evaluates the scaling in f32
/// tensors; positions up to 1e5 amplify any rounding difference in a
/// frequency, so this follows that f32 arithmetic step by step.
std::vector<double> inverseFrequencies(const RotaryParams &p) {
  std::vector<double> inv;
  for (int64_t i = 0; i < p.rotaryDim / 2; ++i) {
    float f = float(
        1.0 / std::pow(double(p.base), double(2 * i) / double(p.rotaryDim)));
    if (p.scaling == RopeScaling::Linear)
      f = f / p.factor;
    if (p.scaling == RopeScaling::Llama3) {
      float oldLen = float(p.originalMaxPositions);
      float wavelen = 2.0f * float(M_PI) / f;
      float scaled = wavelen > oldLen / p.lowFreqFactor ? f / p.factor : f;
      bool medium = !(wavelen < oldLen / p.highFreqFactor) &&
                    !(wavelen > oldLen / p.lowFreqFactor);
      float smooth = (oldLen / wavelen - p.lowFreqFactor) /
                     (p.highFreqFactor - p.lowFreqFactor);
      if (medium)
        scaled = (1.0f - smooth) * scaled / p.factor + smooth * scaled;
      f = scaled;
    }
    inv.push_back(double(f));
  }
  return inv;
}

} // namespace

void rotary(float *x, int64_t numTokens, int64_t numHeads,
            const int32_t *positions, const RotaryParams &p) {
  std::vector<double> inv = inverseFrequencies(p);
  int64_t half = p.rotaryDim / 2;
  for (int64_t t = 0; t < numTokens; ++t)
    for (int64_t h = 0; h < numHeads; ++h) {
      float *v = x + (t * numHeads + h) * p.headDim;
      for (int64_t i = 0; i < half; ++i) {
        double angle = float(float(positions[t]) * float(inv[size_t(i)]));
        double c = std::cos(angle), s = std::sin(angle);
        int64_t a = p.style == RotaryStyle::HalfSplit ? i : 2 * i;
        int64_t b = p.style == RotaryStyle::HalfSplit ? i + half : 2 * i + 1;
        double va = v[a], vb = v[b];
        v[a] = float(va * c - vb * s);
        v[b] = float(vb * c + va * s);
      }
    }
}

} // namespace folio::cpu::ref
