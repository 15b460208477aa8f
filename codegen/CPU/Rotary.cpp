//===- Rotary.cpp - Rotary position embedding -----------------------------===//
//
// Each token's cos/sin row is computed once and applied to all its q and k
// heads; the rotation itself is a few multiplies per element, so the sincos
// evaluation is the cost and sharing it across heads is what matters.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Rotary.h"
#include "codegen/CPU/Validate.h"

#include <cmath>

namespace folio::cpu {

using namespace detail;

Status validateRotary(const RotaryParams &p) {
  const char *kernel = "applyRotary";
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "headDim", p.headDim));
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "rotaryDim", p.rotaryDim));
  if (p.rotaryDim > p.headDim || p.rotaryDim % 2 != 0)
    return Status::error(
        "applyRotary: rotaryDim " + std::to_string(p.rotaryDim) +
        " must be even and <= headDim " + std::to_string(p.headDim));
  if (!(p.base > 1.0f) || std::isinf(p.base))
    return Status::error("applyRotary: base must be finite and > 1");
  if (p.scaling != RopeScaling::None && !(p.factor > 0.0f))
    return Status::error("applyRotary: scaling factor must be > 0");
  if (p.scaling == RopeScaling::Llama3 &&
      (!(p.highFreqFactor > p.lowFreqFactor) || !(p.lowFreqFactor > 0.0f) ||
       p.originalMaxPositions <= 0))
    return Status::error("applyRotary: llama3 scaling needs 0 < "
                         "lowFreqFactor < highFreqFactor and "
                         "originalMaxPositions > 0");
  return Status::success();
}

std::vector<float> rotaryInverseFrequencies(const RotaryParams &p) {
  int64_t half = p.rotaryDim / 2;
  std::vector<float> inv(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i)
    inv[size_t(i)] = float(
        1.0 / std::pow(double(p.base), double(2 * i) / double(p.rotaryDim)));
  if (p.scaling == RopeScaling::Linear) {
    for (float &f : inv)
      f /= p.factor;
  } else if (p.scaling == RopeScaling::Llama3) {
    // transformers' _compute_llama3_parameters: long wavelengths are slowed
    // by `factor`, short ones kept, the band between interpolated.
    float oldLen = float(p.originalMaxPositions);
    float lowWavelen = oldLen / p.lowFreqFactor;
    float highWavelen = oldLen / p.highFreqFactor;
    for (float &f : inv) {
      float wavelen = 2.0f * float(M_PI) / f;
      if (wavelen > lowWavelen) {
        f /= p.factor;
      } else if (wavelen >= highWavelen) {
        float smooth = (oldLen / wavelen - p.lowFreqFactor) /
                       (p.highFreqFactor - p.lowFreqFactor);
        f = (1.0f - smooth) * f / p.factor + smooth * f;
      }
    }
  }
  return inv;
}

namespace {

void rotateHead(float *x, const float *cosv, const float *sinv, int64_t half,
                RotaryStyle style) {
  if (style == RotaryStyle::HalfSplit) {
    float *x2 = x + half;
    for (int64_t i = 0; i < half; ++i) {
      float a = x[i], b = x2[i];
      x[i] = a * cosv[i] - b * sinv[i];
      x2[i] = b * cosv[i] + a * sinv[i];
    }
    return;
  }
  for (int64_t i = 0; i < half; ++i) {
    float a = x[2 * i], b = x[2 * i + 1];
    x[2 * i] = a * cosv[i] - b * sinv[i];
    x[2 * i + 1] = b * cosv[i] + a * sinv[i];
  }
}

} // namespace

Status applyRotary(float *q, int64_t numQHeads, float *k, int64_t numKHeads,
                   const int32_t *positions, int64_t numTokens,
                   const RotaryParams &params, ThreadPool &pool) {
  const char *kernel = "applyRotary";
  FOLIO_RETURN_IF_ERROR(validateRotary(params));
  FOLIO_RETURN_IF_ERROR(checkNonNegative(kernel, "numTokens", numTokens));
  FOLIO_RETURN_IF_ERROR(checkNonNegative(kernel, "numQHeads", numQHeads));
  FOLIO_RETURN_IF_ERROR(checkNonNegative(kernel, "numKHeads", numKHeads));
  int64_t d = params.headDim;
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "q", q, numTokens * numQHeads));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "k", k, numTokens * numKHeads));
  FOLIO_RETURN_IF_ERROR(
      checkPointer(kernel, "positions", positions, numTokens));
  std::vector<float> inv = rotaryInverseFrequencies(params);
  int64_t half = params.rotaryDim / 2;
  int64_t work = (numQHeads + numKHeads) * d;
  pool.parallelFor(numTokens, rowGrain(work, 8192), [&](int64_t b, int64_t e) {
    std::vector<float> cs(size_t(2 * half));
    float *cosv = cs.data(), *sinv = cs.data() + half;
    for (int64_t t = b; t < e; ++t) {
      float pos = float(positions[t]);
      for (int64_t i = 0; i < half; ++i) {
        double angle = double(pos * inv[size_t(i)]); // f32 product, as HF
        cosv[i] = float(std::cos(angle));
        sinv[i] = float(std::sin(angle));
      }
      for (int64_t h = 0; h < numQHeads; ++h)
        rotateHead(q + (t * numQHeads + h) * d, cosv, sinv, half, params.style);
      for (int64_t h = 0; h < numKHeads; ++h)
        rotateHead(k + (t * numKHeads + h) * d, cosv, sinv, half, params.style);
    }
  });
  return Status::success();
}

} // namespace folio::cpu
