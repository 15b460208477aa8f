//===- Philox.h - Counter-based random numbers -----------------*- C++ -*-===//
//
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC'11), as in Random123, cuRAND and PyTorch. A counter-based
// generator is a pure function of (key, counter): the sampler keys it by a
// request's seed and counts by token position, so a request's random draws
// depend on nothing else in the batch and survive preemption unchanged.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SAMPLER_PHILOX_H
#define FOLIO_RUNTIME_SAMPLER_PHILOX_H

#include <array>
#include <cstdint>

namespace folio {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

/// Ten Philox rounds: 128 random bits for one (counter, key).
inline PhiloxCounter philox4x32(PhiloxCounter ctr, PhiloxKey key) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kWeyl0;
      key[1] += kWeyl1;
    }
    uint64_t p0 = static_cast<uint64_t>(kMul0) * ctr[0];
    uint64_t p1 = static_cast<uint64_t>(kMul1) * ctr[2];
    ctr = {static_cast<uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0],
           static_cast<uint32_t>(p1),
           static_cast<uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1],
           static_cast<uint32_t>(p0)};
  }
  return ctr;
}

/// The independent draws of one token position. Speculative decoding
/// needs draws that do not depend on each other: the draft's choice of a
/// token must be independent of the verifier's decision to keep it.
enum PhiloxStream : uint32_t {
  kSampleStream = 0,       ///< plain sampling (Sampler)
  kVerifyAcceptStream = 1, ///< keep or reject a draft (spec_verify)
  kVerifyDrawStream = 2,   ///< the corrected or bonus token (spec_verify)
  kDraftStream = 3,        ///< the draft model's own sampling
};

/// A uniform double in [0, 1) for draw `stream` of the token at `position`
/// of the request seeded with `seed`.
inline double philoxUniform(uint64_t seed, uint64_t position,
                            uint32_t stream = 0) {
  PhiloxCounter out = philox4x32(
      {static_cast<uint32_t>(position), static_cast<uint32_t>(position >> 32),
       stream, 0},
      {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  // 53 random bits: every double in [0, 1) on the 2^-53 grid.
  uint64_t bits = (static_cast<uint64_t>(out[0] >> 5) << 26) | (out[1] >> 6);
  return static_cast<double>(bits) * 0x1.0p-53;
}

} // namespace folio

#endif // FOLIO_RUNTIME_SAMPLER_PHILOX_H
