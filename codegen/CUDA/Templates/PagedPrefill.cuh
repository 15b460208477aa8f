// Paged attention for prefill and mixed batches: the ragged batch of
// codegen/CPU/PagedAttention.h, where a sequence's new tokens are the last
// positions of its context and attend causally among themselves and to the
// context already in the cache. Grid (numKvHeads, query tiles, numSeqs): a
// block takes up to QueryTile consecutive query tokens of one sequence with
// all query heads of one kv head (R = QueryTile * G rows), and walks the
// keys they see in tiles of KeyTile. Each K / V tile is dequantized once
// into shared memory for all R rows; an online softmax (running max and
// sum per row, the output rescaled when the max grows) keeps memory
// O(tile) for any context. Decode tokens are tiles of one token, so one
// launch covers a mixed batch; long decode-only contexts are better served
// by the split-K decode kernel.
#ifndef FOLIO_CUDA_PAGED_PREFILL
#define FOLIO_CUDA_PAGED_PREFILL

namespace folio_cuda {

template <class C>
__device__ __forceinline__ void pagedPrefill(const PagedPrefillArgs &a) {
  constexpr int D = C::kHeadDim, G = C::kQueriesPerKv;
  constexpr int QT = C::kQueryTile, N = C::kKeyTile, R = QT * G;
  constexpr int NT = C::kThreads, PER = (R * D + NT - 1) / NT;
  constexpr int numHeads = C::kNumKvHeads * G;
  constexpr int rowBytes = D * C::kBits / 8;
  constexpr int paramsPerRow = C::kGroup > 0 ? 2 * (D / C::kGroup) : 0;
  const int kvHead = int(blockIdx.x), seq = int(blockIdx.z);
  const int tid = int(threadIdx.x);

  const int qEnd = a.queryStartLoc[seq + 1];
  const int t0 = a.queryStartLoc[seq] + int(blockIdx.y) * QT;
  if (t0 >= qEnd) // past this sequence's query tokens (uniform per block)
    return;
  const int nq = qEnd - t0 < QT ? qEnd - t0 : QT;
  const int pos0 = a.seqLens[seq] - (qEnd - t0); // position of token t0
  const int lastKey = pos0 + nq - 1;
  int firstKey = a.slidingWindow > 0 ? pos0 - a.slidingWindow + 1 : 0;
  firstKey = firstKey > 0 ? firstKey : 0;

  // K's rows are D + 1 floats apart: the scores read one K row per lane,
  // and rows D apart (D a multiple of 32) would all fall in one bank.
  constexpr int KS = D + 1;
  FOLIO_DYNAMIC_SHARED(float, smem);
  float *qs = smem;            // [R][D], row r = token i * G + head g
  float *ks = qs + R * D;      // [N][KS]
  float *vs = ks + N * KS;     // [N][D]
  float *ps = vs + N * D;      // [R][N] scores, then probabilities
  float *rowMax = ps + R * N;  // [R]
  float *rowSum = rowMax + R;  // [R]
  float *rowScale = rowSum + R; // [R] rescale of the output this tile
  int *slots = reinterpret_cast<int *>(rowScale + R); // [N]

  for (int e = tid; e < R * D; e += NT) {
    int r = e / D, i = r / G, g = r % G;
    qs[e] = i < nq ? a.q[((long long)(t0 + i) * numHeads + kvHead * G + g) * D +
                         e % D]
                   : 0.0f;
  }
  for (int r = tid; r < R; r += NT) {
    rowMax[r] = -infinity();
    rowSum[r] = 0.0f;
  }
  float kScale = 1.0f, vScale = 1.0f;
  if constexpr (C::kType == CacheType::E4M3 || C::kType == CacheType::E5M2) {
    kScale = a.kScale[kvHead];
    vScale = a.vScale[kvHead];
  }
  float acc[PER];
#pragma unroll
  for (int k = 0; k < PER; ++k)
    acc[k] = 0.0f;
  const int *table = a.blockTables + (long long)seq * a.maxBlocksPerSeq;

  for (int k0 = firstKey; k0 <= lastKey; k0 += N) {
    const int nk = lastKey + 1 - k0 < N ? lastKey + 1 - k0 : N;
    for (int j = tid; j < nk; j += NT) {
      int key = k0 + j;
      slots[j] = table[key / C::kBlockSize] * C::kBlockSize + key % C::kBlockSize;
    }
    __syncthreads();
    // The K and V tiles, dequantized once for every row of the block.
    for (int e = tid; e < nk * D; e += NT) {
      int j = e / D, d = e % D;
      long long r = (long long)slots[j] * C::kNumKvHeads + kvHead;
      ks[j * KS + d] = loadCache<C::kType, C::kGroup>(
          a.kCache + r * rowBytes,
          paramsPerRow ? a.kParams + r * paramsPerRow : nullptr, d, kScale);
      vs[e] = loadCache<C::kType, C::kGroup>(
          a.vCache + r * rowBytes,
          paramsPerRow ? a.vParams + r * paramsPerRow : nullptr, d, vScale);
    }
    __syncthreads();
    // Scores; -inf where the key is not visible: padding rows, keys after
    // the token (causal) or before its window.
    for (int e = tid; e < R * N; e += NT) {
      int r = e / N, j = e % N, i = r / G;
      int key = k0 + j, pos = pos0 + i;
      float s = -infinity();
      if (i < nq && j < nk && key <= pos &&
          (a.slidingWindow <= 0 || key > pos - a.slidingWindow)) {
        float dot = 0.0f;
        // Fully unrolled (D is a constant), this loop dominated NVRTC time.
#pragma unroll 4
        for (int d = 0; d < D; ++d)
          dot += qs[r * D + d] * ks[j * KS + d];
        s = dot * a.scale;
        if (a.softCap > 0.0f)
          s = tanhf(s / a.softCap) * a.softCap;
      }
      ps[e] = s;
    }
    __syncthreads();
    // Online softmax, a thread per row.
    for (int r = tid; r < R; r += NT) {
      float mOld = rowMax[r], m = mOld;
      for (int j = 0; j < nk; ++j)
        m = fmaxf(m, ps[r * N + j]);
      if (m == -infinity()) { // nothing visible yet (or a padding row)
        for (int j = 0; j < nk; ++j)
          ps[r * N + j] = 0.0f;
        rowScale[r] = 1.0f;
        continue;
      }
      float l = 0.0f;
      for (int j = 0; j < nk; ++j) {
        float p = softmaxExp(ps[r * N + j] - m);
        ps[r * N + j] = p;
        l += p;
      }
      float alpha = softmaxExp(mOld - m); // 0 while mOld is -inf
      rowScale[r] = alpha;
      rowSum[r] = rowSum[r] * alpha + l;
      rowMax[r] = m;
    }
    __syncthreads();
    // The output tile: each thread owns elements tid + k * NT. Keys in the
    // outer loop, so that only the register loop unrolls.
#pragma unroll
    for (int k = 0; k < PER; ++k)
      if (tid + k * NT < R * D)
        acc[k] *= rowScale[(tid + k * NT) / D];
    for (int j = 0; j < nk; ++j) {
#pragma unroll
      for (int k = 0; k < PER; ++k) {
        int e = tid + k * NT;
        if (e < R * D)
          acc[k] += ps[e / D * N + j] * vs[j * D + e % D];
      }
    }
    __syncthreads(); // the next tile overwrites slots, K, V and scores
  }

#pragma unroll
  for (int k = 0; k < PER; ++k) {
    int e = tid + k * NT;
    if (e < R * D) {
      int r = e / D, i = r / G, g = r % G;
      if (i < nq)
        a.out[((long long)(t0 + i) * numHeads + kvHead * G + g) * D + e % D] =
            acc[k] / rowSum[r];
    }
  }
}

} // namespace folio_cuda

#endif // FOLIO_CUDA_PAGED_PREFILL
