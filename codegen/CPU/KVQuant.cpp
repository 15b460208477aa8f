//===- KVQuant.cpp - Reference KV-cache row formats -----------------------===//

#include "codegen/CPU/KVQuant.h"

#include <cmath>
#include <vector>

namespace folio::cpu {

namespace {

constexpr uint16_t kF16Max = 0x7bff;    // 65504
constexpr uint16_t kF16Lowest = 0xfbff; // -65504

/// The largest finite f16 <= x (x finite), -65504 at the least.
uint16_t f16RoundDown(float x) {
  uint16_t h = floatToF16(x);
  if (f16ToFloat(h) > x) // one step towards -inf
    h = h == 0x0000 ? 0x8001 : (h & 0x8000) ? uint16_t(h + 1) : uint16_t(h - 1);
  if ((h & 0x7fff) >= 0x7c00) // beyond the finite range
    h = (h & 0x8000) ? kF16Lowest : kF16Max;
  return h;
}

/// The smallest f16 >= x (x >= 0, finite), 65504 at the most.
uint16_t f16RoundUp(float x) {
  uint16_t h = floatToF16(x);
  if (f16ToFloat(h) < x)
    h = uint16_t(h + 1);
  return h >= 0x7c00 ? kF16Max : h;
}

/// The smallest f32 >= the double d.
float floatRoundUp(double d) {
  float f = float(d);
  return double(f) < d ? std::nextafter(f, INFINITY) : f;
}

bool allFinite(const float *x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i]))
      return false;
  return true;
}

/// Codes of one int8 / int4 group with the stored params.
template <typename Emit>
void quantizeGroup(const float *x, int64_t n, unsigned qmax, uint16_t *params,
                   Emit emit) {
  if (!allFinite(x, n)) {
    params[0] = params[1] = detail::kKvNanParam;
    for (int64_t i = 0; i < n; ++i)
      emit(i, 0u);
    return;
  }
  float lo = x[0], hi = x[0];
  for (int64_t i = 1; i < n; ++i) {
    lo = x[i] < lo ? x[i] : lo;
    hi = x[i] > hi ? x[i] : hi;
  }
  detail::kvGroupParams(lo, hi, qmax, params[0], params[1]);
  float scale = f16ToFloat(params[0]), mn = f16ToFloat(params[1]);
  for (int64_t i = 0; i < n; ++i) {
    if (scale == 0.0f) {
      emit(i, 0u);
      continue;
    }
    emit(i, detail::kvCode(x[i], mn, scale, qmax));
  }
}

/// Stores 2-bit code q as element i (the first element of a byte assigns
/// it, the others OR into it: callers go in increasing order).
inline void putCode2(uint8_t *b, int64_t i, unsigned q) {
  uint8_t &byte = b[i / 4];
  byte = i % 4 == 0 ? uint8_t(q) : uint8_t(byte | (q << (2 * (i % 4))));
}

} // namespace

void kiviQuantizeKeys(const float *rows, int64_t n, int64_t headDim,
                      uint8_t *codes, uint16_t *params) {
  if (n <= 0)
    return;
  const int64_t rowBytes = headDim / 4;
  std::vector<float> col(static_cast<size_t>(n));
  for (int64_t c = 0; c < headDim; ++c) {
    for (int64_t r = 0; r < n; ++r)
      col[size_t(r)] = rows[r * headDim + c];
    quantizeGroup(col.data(), n, 3, params + 2 * c, [&](int64_t r, unsigned q) {
      putCode2(codes + r * rowBytes, c, q);
    });
  }
}

void kiviDequantizeKey(const uint8_t *code, const uint16_t *params,
                       int64_t headDim, float *out) {
  for (int64_t c = 0; c < headDim; ++c) {
    unsigned q = (code[c / 4] >> (2 * (c % 4))) & 0x3u;
    // Exact product (2 + 11 significant bits): one rounding, as the FMA.
    out[c] =
        f16ToFloat(params[2 * c + 1]) + float(q) * f16ToFloat(params[2 * c]);
  }
}

void detail::kvGroupParams(float lo, float hi, unsigned qmax, uint16_t &scaleH,
                           uint16_t &minH) {
  // +0 for a zero of either sign, so that every quantizer stores the same
  // bits whatever order it met the zeros in.
  minH = lo == 0.0f ? 0 : f16RoundDown(lo);
  float mn = f16ToFloat(minH);
  if (!(hi > mn)) { // constant and exact in f16 (or below the f16 range)
    scaleH = 0;
    return;
  }
  scaleH = f16RoundUp(floatRoundUp((double(hi) - double(mn)) / qmax));
}

void quantizeKvRow(const float *x, int64_t headDim, DType dtype, int64_t group,
                   float staticScale, void *dataOut, uint16_t *paramsOut) {
  uint8_t *b = static_cast<uint8_t *>(dataOut);
  switch (dtype) {
  case DType::F32:
  case DType::BF16:
  case DType::F16:
    for (int64_t i = 0; i < headDim; ++i)
      storeFromFloat(dataOut, dtype, size_t(i), x[i]);
    return;
  case DType::FP8E4M3:
    for (int64_t i = 0; i < headDim; ++i)
      b[i] = floatToFp8E4M3(x[i] / staticScale);
    return;
  case DType::FP8E5M2:
    for (int64_t i = 0; i < headDim; ++i)
      b[i] = floatToFp8E5M2(x[i] / staticScale);
    return;
  case DType::I8:
    for (int64_t g = 0; g < headDim; g += group)
      quantizeGroup(x + g, group, 255, paramsOut + 2 * (g / group),
                    [&](int64_t i, unsigned q) { b[g + i] = uint8_t(q); });
    return;
  case DType::I4:
    for (int64_t g = 0; g < headDim; g += group)
      quantizeGroup(x + g, group, 15, paramsOut + 2 * (g / group),
                    [&](int64_t i, unsigned q) {
                      uint8_t &byte = b[(g + i) / 2];
                      byte = (g + i) % 2 == 0 ? uint8_t(q)
                                              : uint8_t(byte | (q << 4));
                    });
    return;
  case DType::I2:
    // Elements in increasing order: the first of each byte assigns it.
    for (int64_t g = 0; g < headDim; g += group)
      quantizeGroup(x + g, group, 3, paramsOut + 2 * (g / group),
                    [&](int64_t i, unsigned q) { putCode2(b, g + i, q); });
    return;
  }
}

void dequantizeKvRow(const void *data, const uint16_t *params, int64_t headDim,
                     DType dtype, int64_t group, float staticScale,
                     float *out) {
  const uint8_t *b = static_cast<const uint8_t *>(data);
  switch (dtype) {
  case DType::F32:
  case DType::BF16:
  case DType::F16:
    for (int64_t i = 0; i < headDim; ++i)
      out[i] = loadAsFloat(data, dtype, size_t(i));
    return;
  case DType::FP8E4M3:
    for (int64_t i = 0; i < headDim; ++i)
      out[i] = fp8E4M3ToFloat(b[i]) * staticScale;
    return;
  case DType::FP8E5M2:
    for (int64_t i = 0; i < headDim; ++i)
      out[i] = fp8E5M2ToFloat(b[i]) * staticScale;
    return;
  case DType::I8:
  case DType::I4:
  case DType::I2:
    for (int64_t g = 0; g < headDim; g += group) {
      float scale = f16ToFloat(params[2 * (g / group)]);
      float mn = f16ToFloat(params[2 * (g / group) + 1]);
      for (int64_t i = g; i < g + group; ++i) {
        unsigned q = dtype == DType::I8   ? b[i]
                     : dtype == DType::I4 ? (b[i / 2] >> (4 * (i % 2))) & 0xfu
                                          : (b[i / 4] >> (2 * (i % 4))) & 0x3u;
        // q * scale is exact (at most 8 + 11 significant bits), so this is
        // also the single rounding of fma(q, scale, min) the vector path
        // uses.
        out[i] = mn + float(q) * scale;
      }
    }
    return;
  }
}

} // namespace folio::cpu
