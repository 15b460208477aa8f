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

/// How a prefill block splits its work into register tiles: the scores in
/// tiles of 4 rows x 4 keys, the output in tiles of 4 rows x 8 columns of
/// head_dim (columns dt, dt + kColGroups, ...: a warp's lanes read
/// consecutive V columns). Each value a thread reads from shared memory
/// serves 4 or 8 multiply-adds instead of one.
template <class C> struct PrefillLayout {
  static constexpr int kRows = C::kQueryTile * C::kQueriesPerKv;
  static constexpr int kRowGroups = (kRows + 3) / 4;
  static constexpr int kKeyGroups = (C::kKeyTile + 3) / 4;
  static constexpr int kColGroups = (C::kHeadDim + 7) / 8;
  static constexpr int kScoreTiles = kRowGroups * kKeyGroups;
  static constexpr int kOutTiles = kRowGroups * kColGroups;
  /// Output tiles per thread, kept in registers over the whole context.
  static constexpr int kOutTilesPerThread =
      (kOutTiles + C::kThreads - 1) / C::kThreads;
};

template <class C>
__device__ __forceinline__ void pagedPrefill(const PagedPrefillArgs &a) {
  constexpr int D = C::kHeadDim, G = C::kQueriesPerKv;
  constexpr int QT = C::kQueryTile, N = C::kKeyTile, R = QT * G;
  constexpr int NT = C::kThreads;
  constexpr int numHeads = C::kNumKvHeads * G;
  constexpr int rowBytes = D * C::kBits / 8;
  constexpr int paramsPerRow = C::kGroup > 0 ? 2 * (D / C::kGroup) : 0;
  using L = PrefillLayout<C>;
  constexpr int CG = L::kColGroups, TPT = L::kOutTilesPerThread;
  // Rows of q, K and the scores are one float longer than their length:
  // the lanes of a warp read different rows at the same column, and rows
  // a multiple of 32 floats apart would all fall in one bank.
  constexpr int QS = D + 1, KS = D + 1, PS = N + 1;
  const int kvHead = int(blockIdx.x), seq = int(blockIdx.z);
  const int tid = int(threadIdx.x);

  PrefillSpan span;
  if (!prefillSpan(a, seq, QT, span)) // past the sequence's query tokens
    return;
  const int t0 = span.t0, nq = span.nq, pos0 = span.pos0;
  const int firstKey = span.firstKey, lastKey = span.lastKey;

  FOLIO_DYNAMIC_SHARED(float, smem);
  float *qs = smem;             // [R][QS], row r = token i * G + head g
  float *ks = qs + R * QS;      // [N][KS]
  float *vs = ks + N * KS;      // [N][D]
  float *ps = vs + N * D;       // [R][PS] scores, then probabilities
  float *rowMax = ps + R * PS;  // [R]
  float *rowSum = rowMax + R;   // [R]
  float *rowScale = rowSum + R; // [R] rescale of the output this tile
  int *slots = reinterpret_cast<int *>(rowScale + R); // [N]

  for (int e = tid; e < R * D; e += NT) {
    int r = e / D, i = r / G, g = r % G;
    qs[r * QS + e % D] =
        i < nq ? a.q[((long long)(t0 + i) * numHeads + kvHead * G + g) * D +
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
  // This thread's output tiles: tile tid + t * NT is rows 4 * rt + y and
  // columns dt + CG * x.
  float acc[TPT][4][8];
#pragma unroll
  for (int t = 0; t < TPT; ++t)
#pragma unroll
    for (int y = 0; y < 4; ++y)
#pragma unroll
      for (int x = 0; x < 8; ++x)
        acc[t][y][x] = 0.0f;
  const int *table = a.blockTables + (long long)seq * a.maxBlocksPerSeq;

  for (int k0 = firstKey; k0 <= lastKey; k0 += N) {
    const int nk = lastKey + 1 - k0 < N ? lastKey + 1 - k0 : N;
    for (int j = tid; j < nk; j += NT) {
      int key = k0 + j;
      slots[j] = table[key / C::kBlockSize] * C::kBlockSize + key % C::kBlockSize;
    }
    __syncthreads();
    // The K and V tiles, dequantized once for every row of the block:
    // eight elements of a row per vector load where every row is aligned
    // for it (loadCache8, bit for bit loadCache's values), else one.
    if constexpr (D % 16 == 0) {
      for (int e = tid; e < nk * (D / 8); e += NT) {
        const int j = e / (D / 8), d0 = e % (D / 8) * 8;
        float kv[8], vv[8];
        loadKv8<C>(a, (long long)slots[j] * C::kNumKvHeads + kvHead, d0,
                   kScale, vScale, kv, vv);
#pragma unroll
        for (int c = 0; c < 8; ++c) {
          ks[j * KS + d0 + c] = kv[c];
          vs[j * D + d0 + c] = vv[c];
        }
      }
    } else {
      for (int e = tid; e < nk * D; e += NT) {
        int j = e / D, d = e % D;
        long long r = (long long)slots[j] * C::kNumKvHeads + kvHead;
        ks[j * KS + d] = loadCache<C::kType, C::kGroup>(
            a.kCache + r * rowBytes,
            paramsPerRow ? a.kParams + r * paramsPerRow : nullptr, d, kScale);
        vs[j * D + d] = loadCache<C::kType, C::kGroup>(
            a.vCache + r * rowBytes,
            paramsPerRow ? a.vParams + r * paramsPerRow : nullptr, d, vScale);
      }
    }
    __syncthreads();
    // Scores, 4 rows x 4 keys per tile; -inf where the key is not visible:
    // padding rows, keys after the token (causal) or before its window.
    for (int tile = tid; tile < L::kScoreTiles; tile += NT) {
      const int r0 = tile / L::kKeyGroups * 4, j0 = tile % L::kKeyGroups * 4;
      // Rows and keys past the tile's read the last one's (never written).
      int qr[4], kr[4];
#pragma unroll
      for (int y = 0; y < 4; ++y)
        qr[y] = (r0 + y < R ? r0 + y : R - 1) * QS;
#pragma unroll
      for (int x = 0; x < 4; ++x)
        kr[x] = (j0 + x < N ? j0 + x : N - 1) * KS;
      float dot[4][4];
#pragma unroll
      for (int y = 0; y < 4; ++y)
#pragma unroll
        for (int x = 0; x < 4; ++x)
          dot[y][x] = 0.0f;
      // Fully unrolled (D is a constant), this loop dominated NVRTC time.
#pragma unroll 4
      for (int d = 0; d < D; ++d) {
        float q[4], k[4];
#pragma unroll
        for (int y = 0; y < 4; ++y)
          q[y] = qs[qr[y] + d];
#pragma unroll
        for (int x = 0; x < 4; ++x)
          k[x] = ks[kr[x] + d];
#pragma unroll
        for (int y = 0; y < 4; ++y)
#pragma unroll
          for (int x = 0; x < 4; ++x)
            dot[y][x] += q[y] * k[x];
      }
#pragma unroll
      for (int y = 0; y < 4; ++y)
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          const int r = r0 + y, j = j0 + x, i = r / G;
          if (r >= R || j >= N)
            continue;
          const int key = k0 + j, pos = pos0 + i;
          float s = -infinity();
          if (i < nq && j < nk && span.sees(key, pos)) {
            s = dot[y][x] * a.scale;
            if (a.softCap > 0.0f)
              s = tanhf(s / a.softCap) * a.softCap;
          }
          ps[r * PS + j] = s;
        }
    }
    __syncthreads();
    // Online softmax, a thread per row.
    for (int r = tid; r < R; r += NT) {
      float mOld = rowMax[r], m = mOld;
      for (int j = 0; j < nk; ++j)
        m = fmaxf(m, ps[r * PS + j]);
      if (m == -infinity()) { // nothing visible yet (or a padding row)
        for (int j = 0; j < nk; ++j)
          ps[r * PS + j] = 0.0f;
        rowScale[r] = 1.0f;
        continue;
      }
      float l = 0.0f;
      for (int j = 0; j < nk; ++j) {
        float p = softmaxExp(ps[r * PS + j] - m);
        ps[r * PS + j] = p;
        l += p;
      }
      float alpha = softmaxExp(mOld - m); // 0 while mOld is -inf
      rowScale[r] = alpha;
      rowSum[r] = rowSum[r] * alpha + l;
      rowMax[r] = m;
    }
    __syncthreads();
    // The output tiles: rescaled, then the tile's weighted V rows added,
    // keys in the outer loop (the same order as one element at a time).
#pragma unroll
    for (int t = 0; t < TPT; ++t) {
      const int tile = tid + t * NT;
      if (tile >= L::kOutTiles)
        continue;
      const int r0 = tile / CG * 4, dt = tile % CG;
      int pr[4], vc[8];
#pragma unroll
      for (int y = 0; y < 4; ++y) {
        const int r = r0 + y < R ? r0 + y : R - 1;
        pr[y] = r * PS;
        const float alpha = rowScale[r];
#pragma unroll
        for (int x = 0; x < 8; ++x)
          acc[t][y][x] *= alpha;
      }
#pragma unroll
      for (int x = 0; x < 8; ++x)
        vc[x] = dt + CG * x < D ? dt + CG * x : D - 1;
      for (int j = 0; j < nk; ++j) {
        float p[4], v[8];
#pragma unroll
        for (int y = 0; y < 4; ++y)
          p[y] = ps[pr[y] + j];
#pragma unroll
        for (int x = 0; x < 8; ++x)
          v[x] = vs[j * D + vc[x]];
#pragma unroll
        for (int y = 0; y < 4; ++y)
#pragma unroll
          for (int x = 0; x < 8; ++x)
            acc[t][y][x] += p[y] * v[x];
      }
    }
    __syncthreads(); // the next tile overwrites slots, K, V and scores
  }

#pragma unroll
  for (int t = 0; t < TPT; ++t) {
    const int tile = tid + t * NT;
    if (tile >= L::kOutTiles)
      continue;
    const int r0 = tile / CG * 4, dt = tile % CG;
#pragma unroll
    for (int y = 0; y < 4; ++y) {
      const int r = r0 + y, i = r / G, g = r % G;
      if (r >= R || i >= nq)
        continue;
#pragma unroll
      for (int x = 0; x < 8; ++x) {
        const int d = dt + CG * x;
        if (d < D)
          a.out[((long long)(t0 + i) * numHeads + kvHead * G + g) * D + d] =
              acc[t][y][x] / rowSum[r];
      }
    }
  }
}

} // namespace folio_cuda

#endif // FOLIO_CUDA_PAGED_PREFILL
