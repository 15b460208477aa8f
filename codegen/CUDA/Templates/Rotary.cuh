// Rotary position embedding of [tokens, heads, headDim] rows (a token's
// heads contiguous, tokens `xStride` elements apart, so a slice of a fused
// qkv row works in place). Angles come from a cos / sin table of rotaryDim
// floats per position (the cosines, then the sines), the model's own or
// built once from the frequencies, as codegen/CPU/Rotary.h's
// applyRotaryRows reads it: the products are the CPU's. Grid (tokens,
// heads), a thread per rotated pair; elements past rotaryDim are copied.
// Positions are trusted: the runtime checks them against the table.
#ifndef FOLIO_CUDA_ROTARY
#define FOLIO_CUDA_ROTARY

namespace folio_cuda {

template <class C>
__device__ __forceinline__ void rotary(const RotaryArgs &a) {
  constexpr int D = C::kHeadDim, RD = C::kRotaryDim, HALF = RD / 2;
  const long long token = blockIdx.x, head = blockIdx.y;
  const float *x = a.x + token * a.xStride + head * D;
  float *y = a.y + token * a.yStride + head * D;
  const float *cs = a.cosSin + a.positions[token] * RD;
  const int i = int(threadIdx.x);
  // Every pair is read before any is written: y may equal x.
  float lo = 0.0f, hi = 0.0f, c = 0.0f, s = 0.0f;
  int loIdx = 0, hiIdx = 0;
  if (i < HALF) {
    loIdx = C::kInterleaved ? 2 * i : i;
    hiIdx = C::kInterleaved ? 2 * i + 1 : i + HALF;
    lo = x[loIdx];
    hi = x[hiIdx];
    c = cs[i];
    s = cs[HALF + i];
  }
  if (i < HALF) {
    y[loIdx] = lo * c - hi * s;
    y[hiIdx] = hi * c + lo * s;
  }
  if (x != y)
    for (int d = RD + i; d < D; d += int(blockDim.x))
      y[d] = x[d];
}

} // namespace folio_cuda

#endif // FOLIO_CUDA_ROTARY
