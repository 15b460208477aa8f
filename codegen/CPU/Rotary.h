//===- Rotary.h - Rotary position embedding ----------------------*- C++
//-*-===//

#ifndef FOLIO_CODEGEN_CPU_ROTARY_H
#define FOLIO_CODEGEN_CPU_ROTARY_H

#include "codegen/CPU/Status.h"
#include "codegen/CPU/ThreadPool.h"

#include <cstdint>
#include <vector>

namespace folio::cpu {

/// Which elements form a rotated pair.
enum class RotaryStyle {
  HalfSplit,   ///< (x[i], x[i + rotaryDim/2]): Llama, NeoX, HF rotate_half.
  Interleaved, ///< (x[2i], x[2i + 1]): GPT-J, Meta's original Llama.
};

enum class RopeScaling { None, Linear, Llama3 };

struct RotaryParams {
  int64_t headDim = 0;
  /// Leading elements of each head that rotate (partial rotary: Phi, NeoX);
  /// the rest pass through. Even, 0 < rotaryDim <= headDim.
  int64_t rotaryDim = 0;
  float base = 10000.0f;
  RotaryStyle style = RotaryStyle::HalfSplit;
  RopeScaling scaling = RopeScaling::None;
  /// Linear and Llama3: frequencies divided by factor (Linear divides all).
  float factor = 1.0f;
  /// Llama3 only (HF rope_scaling: low_freq_factor, high_freq_factor,
  /// original_max_position_embeddings).
  float lowFreqFactor = 1.0f;
  float highFreqFactor = 4.0f;
  int64_t originalMaxPositions = 8192;
};

/// Checks params (shared by the kernel and the reference).
Status validateRotary(const RotaryParams &params);

/// The rotaryDim/2 inverse frequencies after scaling, as HF computes them.
std::vector<float> rotaryInverseFrequencies(const RotaryParams &params);

/// The cos/sin table of `params` for positions [0, positions): rotaryDim
/// floats per position, the cosines then the sines (the `cosSin` layout of
/// applyRotaryRows), the angles exactly as applyRotary computes them.
std::vector<float> rotaryCosSinTable(const RotaryParams &params,
                                     int64_t positions);

/// Rotates q [numTokens, numQHeads, headDim] and k [numTokens, numKHeads,
/// headDim] in place, token t by positions[t]. k may be null (numKHeads 0).
/// The angle is float(position) * invFreq in f32 as in HF, so results match
/// the exported graphs' cos/sin caches.
Status applyRotary(float *q, int64_t numQHeads, float *k, int64_t numKHeads,
                   const int32_t *positions, int64_t numTokens,
                   const RotaryParams &params,
                   ThreadPool &pool = ThreadPool::global());

/// Rotates x into y (y may equal x) in the layouts the executor meets: x
/// viewed as [outer, heads, inner, headDim], row (o, h, i) at position
/// positions[o * inner + i]. [B, H, S, D] with positions [B, S] is
/// (B, H, S); [T, H, D] with positions [T] is (T, H, 1). Angles come from
/// `cosSin` when given (the model's table: numTablePositions rows of
/// rotaryDim floats, the cosines then the sines), else from the
/// frequencies of `params`, computed exactly as applyRotary computes them
/// but once per position and process: a table shared by every call with
/// the same frequencies, grown as positions arrive. Elements past
/// rotaryDim are copied.
Status applyRotaryRows(const float *x, float *y, int64_t outer, int64_t heads,
                       int64_t inner, const int64_t *positions,
                       const float *cosSin, int64_t numTablePositions,
                       const RotaryParams &params,
                       ThreadPool &pool = ThreadPool::global());

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_ROTARY_H
