// The span of query tokens one prefill block takes and the keys they see,
// which both prefill kernels share (PagedPrefill.cuh on CUDA cores,
// PagedPrefillMma.cuh on tensor cores), so that their causal and sliding
// window rules are one: a sequence's new tokens are the last positions of
// its context. Also their vector loads of K and V rows.
#ifndef FOLIO_CUDA_PREFILL_SPAN
#define FOLIO_CUDA_PREFILL_SPAN

namespace folio_cuda {

struct PrefillSpan {
  int t0;       // the block's first query token (its row of q and out)
  int nq;       // the block's query tokens, at most the query tile
  int pos0;     // token t0's position in its sequence
  int firstKey; // the first key any of them sees (0 without a window)
  int lastKey;  // the last: token t0 + nq - 1's own position
  int window;   // the sliding window (<= 0: none)

  /// Whether the token at position `pos` sees key `key`: not after it,
  /// and within its window.
  __device__ __forceinline__ bool sees(int key, int pos) const {
    return key <= pos && (window <= 0 || key > pos - window);
  }
};

/// Block blockIdx.y's span of sequence `seq`'s query tokens, `queryTile` a
/// block; false when the sequence has no tokens that far (uniform per
/// block: the whole block exits).
__device__ __forceinline__ bool prefillSpan(const PagedPrefillArgs &a, int seq,
                                            int queryTile, PrefillSpan &t) {
  const int qEnd = a.queryStartLoc[seq + 1];
  t.t0 = a.queryStartLoc[seq] + int(blockIdx.y) * queryTile;
  if (t.t0 >= qEnd)
    return false;
  t.nq = qEnd - t.t0 < queryTile ? qEnd - t.t0 : queryTile;
  t.pos0 = a.seqLens[seq] - (qEnd - t.t0);
  t.lastKey = t.pos0 + t.nq - 1;
  t.window = a.slidingWindow;
  const int first = t.window > 0 ? t.pos0 - t.window + 1 : 0;
  t.firstKey = first > 0 ? first : 0;
  return true;
}

/// Elements d0 .. d0 + 7 of the K and V rows of cache row `r` (slot x kv
/// heads + kv head), dequantized as loadCache8 gives them (loadCache's
/// values bit for bit); head_dim a multiple of 16, so every row is aligned.
template <class C>
__device__ __forceinline__ void loadKv8(const PagedPrefillArgs &a, long long r,
                                        int d0, float kScale, float vScale,
                                        float *k, float *v) {
  constexpr int rowBytes = C::kHeadDim * C::kBits / 8;
  constexpr int paramsPerRow =
      C::kGroup > 0 ? 2 * (C::kHeadDim / C::kGroup) : 0;
  loadCache8<C::kType, C::kGroup>(
      a.kCache + r * rowBytes,
      paramsPerRow ? a.kParams + r * paramsPerRow : nullptr, d0, kScale, k);
  loadCache8<C::kType, C::kGroup>(
      a.vCache + r * rowBytes,
      paramsPerRow ? a.vParams + r * paramsPerRow : nullptr, d0, vScale, v);
}

} // namespace folio_cuda

#endif // FOLIO_CUDA_PREFILL_SPAN
