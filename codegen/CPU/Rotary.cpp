//===- Rotary.cpp - Rotary position embedding -----------------------------===//
//
// Each token's cos/sin row is computed once and applied to all its q and k
// heads; the rotation itself is a few multiplies per element, so the sincos
// evaluation is the cost and sharing it across heads is what matters.
//
// applyRotaryRows goes further for the executor, where every layer rotates
// q and k of the same positions: the cos/sin rows live in a process-wide
// table per frequency set, so a 512-token prefill evaluates no sincos at
// all after the first forward, and the rotation is a vector row kernel.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Rotary.h"
#include "codegen/CPU/RowKernels.h"
#include "codegen/CPU/Validate.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>

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

/// Rows [first, first + count) of cos/sin (rotaryDim floats each) for
/// positions first, first + 1, ...: the angles exactly as applyRotary
/// computes them.
void fillCosSin(const std::vector<float> &inv, int64_t first, int64_t count,
                float *out) {
  int64_t half = int64_t(inv.size());
  for (int64_t r = 0; r < count; ++r) {
    float pos = float(first + r);
    float *row = out + r * 2 * half;
    for (int64_t i = 0; i < half; ++i) {
      double angle = double(pos * inv[size_t(i)]); // f32 product, as HF
      row[i] = float(std::cos(angle));
      row[half + i] = float(std::sin(angle));
    }
  }
}

/// Beyond this many positions (32 MiB at rotaryDim 128) calls compute
/// their own rows instead of growing the shared table.
constexpr int64_t kMaxSharedPositions = int64_t(1) << 16;

/// The cos/sin rows of one frequency set for positions [0, rows). Grown by
/// replacing the vector, so a caller's snapshot stays valid while another
/// thread grows the table.
struct SharedCosSin {
  RotaryParams params;
  std::vector<float> inv;
  std::mutex mutex;
  std::shared_ptr<const std::vector<float>> rows;
  int64_t numRows = 0;

  std::shared_ptr<const std::vector<float>> atLeast(int64_t n) {
    std::lock_guard<std::mutex> lock(mutex);
    if (numRows < n) {
      int64_t grown = std::min(std::max({n, 2 * numRows, int64_t(256)}),
                               kMaxSharedPositions);
      int64_t width = 2 * int64_t(inv.size());
      auto next = std::make_shared<std::vector<float>>(size_t(grown * width));
      if (rows)
        std::copy(rows->begin(), rows->end(), next->begin());
      fillCosSin(inv, numRows, grown - numRows, next->data() + numRows * width);
      rows = std::move(next);
      numRows = grown;
    }
    return rows;
  }
};

/// Whether two parameter sets give the same frequencies.
bool sameFrequencies(const RotaryParams &a, const RotaryParams &b) {
  return a.rotaryDim == b.rotaryDim && a.base == b.base &&
         a.scaling == b.scaling && a.factor == b.factor &&
         a.lowFreqFactor == b.lowFreqFactor &&
         a.highFreqFactor == b.highFreqFactor &&
         a.originalMaxPositions == b.originalMaxPositions;
}

SharedCosSin &sharedCosSin(const RotaryParams &p) {
  static std::mutex mutex;
  static auto *tables = new std::vector<std::unique_ptr<SharedCosSin>>();
  std::lock_guard<std::mutex> lock(mutex);
  for (auto &t : *tables)
    if (sameFrequencies(t->params, p))
      return *t;
  tables->push_back(std::make_unique<SharedCosSin>());
  tables->back()->params = p;
  tables->back()->inv = rotaryInverseFrequencies(p);
  return *tables->back();
}

} // namespace

std::vector<float> rotaryCosSinTable(const RotaryParams &params,
                                     int64_t positions) {
  std::vector<float> inv = rotaryInverseFrequencies(params);
  std::vector<float> table(size_t(positions) * 2 * inv.size());
  fillCosSin(inv, 0, positions, table.data());
  return table;
}

Status applyRotaryRows(const float *x, float *y, int64_t outer, int64_t heads,
                       int64_t inner, const int64_t *positions,
                       const float *cosSin, int64_t numTablePositions,
                       const RotaryParams &params, ThreadPool &pool) {
  const char *kernel = "applyRotaryRows";
  FOLIO_RETURN_IF_ERROR(validateRotary(params));
  FOLIO_RETURN_IF_ERROR(checkNonNegative(kernel, "outer", outer));
  FOLIO_RETURN_IF_ERROR(checkNonNegative(kernel, "heads", heads));
  FOLIO_RETURN_IF_ERROR(checkNonNegative(kernel, "inner", inner));
  int64_t d = params.headDim, rd = params.rotaryDim;
  int64_t tokens = outer * inner, rows = outer * heads * inner;
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "x", x, rows * d));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "y", y, rows * d));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "positions", positions, tokens));
  if (rows == 0)
    return Status::success();
  int64_t lo = positions[0], hi = positions[0];
  for (int64_t t = 1; t < tokens; ++t) {
    lo = std::min(lo, positions[t]);
    hi = std::max(hi, positions[t]);
  }
  // Row of token t: base + (byPosition ? positions[t] : t) * rd.
  const float *base = cosSin;
  bool byPosition = true;
  std::shared_ptr<const std::vector<float>> shared;
  std::vector<float> local;
  if (cosSin) {
    FOLIO_RETURN_IF_ERROR(
        checkPointer(kernel, "cosSin", cosSin, numTablePositions));
    if (lo < 0 || hi >= numTablePositions)
      return Status::error("position " + std::to_string(lo < 0 ? lo : hi) +
                           " is beyond the cos/sin table of " +
                           std::to_string(numTablePositions) + " positions");
  } else if (lo >= 0 && hi < kMaxSharedPositions) {
    shared = sharedCosSin(params).atLeast(hi + 1);
    base = shared->data();
  } else {
    std::vector<float> inv = rotaryInverseFrequencies(params);
    local.resize(size_t(tokens * rd));
    for (int64_t t = 0; t < tokens; ++t)
      fillCosSin(inv, positions[t], 1, local.data() + t * rd);
    base = local.data();
    byPosition = false;
  }
  const RowKernels &k = rowKernels();
  bool interleaved = params.style == RotaryStyle::Interleaved;
  pool.parallelFor(rows, rowGrain(d, 8192), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t t = (r / (heads * inner)) * inner + r % inner;
      const float *cs = base + (byPosition ? positions[t] : t) * rd;
      k.rotary(x + r * d, y + r * d, cs, rd / 2, d, interleaved);
    }
  });
  return Status::success();
}

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
  const RowKernels &rk = rowKernels();
  bool interleaved = params.style == RotaryStyle::Interleaved;
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
      for (int64_t h = 0; h < numQHeads; ++h) {
        float *row = q + (t * numQHeads + h) * d;
        rk.rotary(row, row, cosv, half, d, interleaved);
      }
      for (int64_t h = 0; h < numKHeads; ++h) {
        float *row = k + (t * numKHeads + h) * d;
        rk.rotary(row, row, cosv, half, d, interleaved);
      }
    }
  });
  return Status::success();
}

} // namespace folio::cpu
