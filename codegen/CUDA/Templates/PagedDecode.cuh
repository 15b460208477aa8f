// Paged attention for decode-like steps: every query token attends to the
// keys up to its own position (codegen/CPU/PagedAttention.h's ragged batch,
// with few tokens per sequence). Grid (numKvHeads, numTokens, partitions):
// a block takes all query heads of one kv head (GQA: each K / V element is
// dequantized once for all of them) over one partition of the context.
// Decode reads every cache byte once and does little with it, so the
// kernel is built for memory throughput: lanes load whole chunks of rows
// (16 bytes where they can), several rows each before using any, and the
// V sums are split over keys like the scores, not over head_dim.
// With one partition the block writes the output; with several (split-K
// over a long context) it writes its partial result, max and sum, and
// pagedDecodeCombine merges them.
#ifndef FOLIO_CUDA_PAGED_DECODE
#define FOLIO_CUDA_PAGED_DECODE

namespace folio_cuda {

/// The sequence owning query token t: the last s with queryStartLoc[s] <= t
/// (skips empty sequences).
__device__ __forceinline__ int sequenceOf(const int *queryStartLoc,
                                          int numSeqs, int t) {
  int lo = 0, hi = numSeqs - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (queryStartLoc[mid] <= t)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/// How a decode block reads cache rows. A row is kChunks chunks of
/// kChunkBytes, each loaded whole by one lane (16 bytes where the row
/// allows); kLanes lanes (a power of two) share a row, each with
/// kChunksPerLane chunks, so a warp reads kRowsPerWarp rows at once. A
/// lane's chunks are the same in every row, so it keeps its slice of q in
/// registers, and its V sums for all query heads: kElems * kQueriesPerKv
/// floats per chunk, kept at 32 or fewer by narrower chunks (more
/// registers per thread would leave too few warps per multiprocessor to
/// keep loads in flight).
template <class C> struct DecodeLayout {
  static constexpr int kRowBytes = C::kHeadDim * C::kBits / 8;
  static constexpr int kMaxElems =
      32 / C::kQueriesPerKv > 1 ? 32 / C::kQueriesPerKv : 1;
  __host__ __device__ static constexpr int chunkBytes() {
    int b = 16;
    while (b > 1 && (kRowBytes % b != 0 || b * 8 / C::kBits > kMaxElems))
      b /= 2;
    return b;
  }
  static constexpr int kChunkBytes = chunkBytes();
  static constexpr int kElems = kChunkBytes * 8 / C::kBits;
  static constexpr int kChunks = kRowBytes / kChunkBytes;
  __host__ __device__ static constexpr int lanes() {
    int l = 1;
    while (l < kChunks && l < 32)
      l *= 2;
    return l;
  }
  static constexpr int kLanes = lanes();
  static constexpr int kChunksPerLane = (kChunks + kLanes - 1) / kLanes;
  static constexpr int kRowsPerWarp = 32 / kLanes;
};

/// One chunk of a cache row, loaded whole.
template <int N> struct alignas(N) CacheChunk {
  unsigned char b[N];
};

/// The chunk at p: one vector load where p is aligned to it (a pool from
/// cudaMalloc always is), else byte by byte.
template <int N>
__device__ __forceinline__ CacheChunk<N> loadChunk(const unsigned char *p,
                                                   bool aligned) {
  CacheChunk<N> c;
  if (aligned) {
    c = *reinterpret_cast<const CacheChunk<N> *>(p);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i)
      c.b[i] = p[i];
  }
  return c;
}

/// Elements [d0, d0 + E) of a cache row from its chunk: loadCache's
/// arithmetic, element by element.
template <class C, int E, int N>
__device__ __forceinline__ void dequantChunk(const CacheChunk<N> &c,
                                             const unsigned short *params,
                                             int d0, float scale, float *out) {
  constexpr CacheType T = C::kType;
  if constexpr (T == CacheType::F32) {
#pragma unroll
    for (int e = 0; e < E; ++e)
      out[e] = __uint_as_float(unsigned(c.b[4 * e]) |
                               unsigned(c.b[4 * e + 1]) << 8 |
                               unsigned(c.b[4 * e + 2]) << 16 |
                               unsigned(c.b[4 * e + 3]) << 24);
  } else if constexpr (T == CacheType::BF16 || T == CacheType::F16) {
#pragma unroll
    for (int e = 0; e < E; ++e) {
      unsigned bits = unsigned(c.b[2 * e]) | unsigned(c.b[2 * e + 1]) << 8;
      out[e] = T == CacheType::BF16 ? __uint_as_float(bits << 16)
                                    : f16BitsToFloat((unsigned short)bits);
    }
  } else if constexpr (T == CacheType::E4M3 || T == CacheType::E5M2) {
#pragma unroll
    for (int e = 0; e < E; ++e) {
      __half_raw h = __nv_cvt_fp8_to_halfraw(
          c.b[e], T == CacheType::E4M3 ? __NV_E4M3 : __NV_E5M2);
      out[e] = __half2float(__half(h)) * scale;
    }
  } else {
    constexpr int G = C::kGroup;
    // One group's {scale, min} for the whole chunk where the chunks tile
    // the groups; else each element's own.
    constexpr bool oneGroup = G % E == 0;
    float s = 0.0f, mn = 0.0f;
    if constexpr (oneGroup) {
      int g = d0 / G;
      s = f16BitsToFloat(__ldg(params + 2 * g));
      mn = f16BitsToFloat(__ldg(params + 2 * g + 1));
    }
#pragma unroll
    for (int e = 0; e < E; ++e) {
      if constexpr (!oneGroup) {
        int g = (d0 + e) / G;
        s = f16BitsToFloat(__ldg(params + 2 * g));
        mn = f16BitsToFloat(__ldg(params + 2 * g + 1));
      }
      unsigned q = T == CacheType::I8 ? unsigned(c.b[e])
                                      : (unsigned(c.b[e / 2]) >> (4 * (e % 2))) & 0xfu;
      out[e] = mn + float(q) * s;
    }
  }
}

/// This lane's chunks of rows base + u * stride + rowInWarp (u < U) of a
/// K or V pool, and each row's int8 / int4 params; rows at or past n are
/// not read.
template <class C, int U>
__device__ __forceinline__ void loadDecodeRows(
    const unsigned char *pool, const unsigned short *paramPool,
    const int *slots, int kvHead, int base, int stride, int rowInWarp,
    int sub, int n, bool aligned,
    CacheChunk<DecodeLayout<C>::kChunkBytes> (
        &raw)[U][DecodeLayout<C>::kChunksPerLane],
    const unsigned short *(&rowParams)[U]) {
  using L = DecodeLayout<C>;
  constexpr int paramsPerRow =
      C::kGroup > 0 ? 2 * (C::kHeadDim / C::kGroup) : 0;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    int j = base + u * stride + rowInWarp;
    long long r = j < n ? (long long)slots[j] * C::kNumKvHeads + kvHead : -1;
    rowParams[u] =
        paramsPerRow && r >= 0 ? paramPool + r * paramsPerRow : nullptr;
#pragma unroll
    for (int c = 0; c < L::kChunksPerLane; ++c) {
      int chunk = sub + c * L::kLanes;
      if (r >= 0 && chunk < L::kChunks)
        raw[u][c] = loadChunk<L::kChunkBytes>(
            pool + r * L::kRowBytes + chunk * L::kChunkBytes, aligned);
    }
  }
}

template <class C>
__device__ __forceinline__ void pagedDecode(const PagedDecodeArgs &a) {
  constexpr int D = C::kHeadDim, G = C::kQueriesPerKv, P = C::kPartition;
  constexpr int NT = C::kThreads, NW = NT / 32;
  constexpr int numHeads = C::kNumKvHeads * G;
  using L = DecodeLayout<C>;
  constexpr int CB = L::kChunkBytes, E = L::kElems;
  constexpr int LN = L::kLanes, CPL = L::kChunksPerLane, RW = L::kRowsPerWarp;
  // Rows each lane loads before it uses them: loads in flight.
  constexpr int U = 4;
  const int kvHead = int(blockIdx.x), token = int(blockIdx.y);
  const int part = int(blockIdx.z);
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int sub = lane % LN, rowInWarp = lane / LN;

  const int seq = sequenceOf(a.queryStartLoc, a.numSeqs, token);
  const int pos = a.seqLens[seq] - (a.queryStartLoc[seq + 1] - token);
  int first = a.slidingWindow > 0 ? pos - a.slidingWindow + 1 : 0;
  first = first > part * P ? first : part * P;
  const int last = pos + 1 < (part + 1) * P ? pos + 1 : (part + 1) * P;
  const int n = last - first; // keys of this partition; uniform per block

  const long long headBase = (long long)token * numHeads + kvHead * G;
  if (n <= 0) { // a partition past the context or before the window
    if (a.numPartitions > 1 && threadIdx.x < G) {
      long long h = headBase + threadIdx.x;
      a.partialMax[h * a.numPartitions + part] = -infinity();
      a.partialSum[h * a.numPartitions + part] = 0.0f;
    }
    return;
  }

  FOLIO_DYNAMIC_SHARED(float, smem);
  float *qs = smem;          // [G][D]; the V sums at the end
  float *scores = qs + G * D; // [G][P]
  int *slots = reinterpret_cast<int *>(scores + G * P); // [P]
  __shared__ float headMax[G], headSum[G];

  for (int i = int(threadIdx.x); i < G * D; i += NT)
    qs[i] = a.q[headBase * D + i];
  const int *table = a.blockTables + (long long)seq * a.maxBlocksPerSeq;
  for (int j = int(threadIdx.x); j < n; j += NT) {
    int key = first + j;
    slots[j] = table[key / C::kBlockSize] * C::kBlockSize + key % C::kBlockSize;
  }
  float kScale = 1.0f, vScale = 1.0f;
  if constexpr (C::kType == CacheType::E4M3 || C::kType == CacheType::E5M2) {
    kScale = a.kScale[kvHead];
    vScale = a.vScale[kvHead];
  }
  const bool aligned =
      ((unsigned long long)a.kCache | (unsigned long long)a.vCache) % CB == 0;
  __syncthreads();

  // This lane's slice of every head's q: its chunks are the same in every
  // row.
  float qr[G][CPL][E];
#pragma unroll
  for (int g = 0; g < G; ++g)
#pragma unroll
    for (int c = 0; c < CPL; ++c)
#pragma unroll
      for (int e = 0; e < E; ++e) {
        int d = (sub + c * LN) * E + e;
        qr[g][c][e] = d < D ? qs[g * D + d] : 0.0f;
      }

  // Scores: kLanes lanes per key, each with whole chunks of its row; U
  // rows per lane are loaded before any is used.
  constexpr int stride = NW * RW;
  for (int base = warp * RW; base < n; base += U * stride) {
    CacheChunk<CB> raw[U][CPL] = {};
    const unsigned short *rowParams[U];
    loadDecodeRows<C, U>(a.kCache, a.kParams, slots, kvHead, base, stride,
                         rowInWarp, sub, n, aligned, raw, rowParams);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      int j = base + u * stride + rowInWarp;
      float acc[G];
#pragma unroll
      for (int g = 0; g < G; ++g)
        acc[g] = 0.0f;
      if (j < n) {
#pragma unroll
        for (int c = 0; c < CPL; ++c) {
          int chunk = sub + c * LN;
          if (chunk < L::kChunks) {
            float k[E];
            dequantChunk<C, E>(raw[u][c], rowParams[u], chunk * E, kScale, k);
#pragma unroll
            for (int e = 0; e < E; ++e)
#pragma unroll
              for (int g = 0; g < G; ++g)
                acc[g] += qr[g][c][e] * k[e];
          }
        }
      }
      // Every lane takes part in the shuffles, also past the last key.
#pragma unroll
      for (int g = 0; g < G; ++g) {
#pragma unroll
        for (int o = LN / 2; o > 0; o >>= 1)
          acc[g] += __shfl_xor_sync(0xffffffffu, acc[g], o);
        float s = acc[g] * a.scale;
        if (a.softCap > 0.0f)
          s = tanhf(s / a.softCap) * a.softCap;
        if (j < n && sub == 0)
          scores[g * P + j] = s;
      }
    }
  }
  __syncthreads();

  // Softmax of each head's scores: a warp per head.
  for (int g = warp; g < G; g += NW) {
    float m = -infinity();
    for (int j = lane; j < n; j += 32)
      m = fmaxf(m, scores[g * P + j]);
    m = warpMax(m);
    float l = 0.0f;
    for (int j = lane; j < n; j += 32) {
      float e = softmaxExp(scores[g * P + j] - m);
      scores[g * P + j] = e;
      l += e;
    }
    l = warpSum(l);
    if (lane == 0) {
      headMax[g] = m;
      headSum[g] = l;
    }
  }
  __syncthreads();

  // Weighted sum of V, read as K was: each lane sums its chunks over the
  // rows it takes, for every head; then the rows of a warp and the warps
  // are added up.
  float acc[G][CPL][E];
#pragma unroll
  for (int g = 0; g < G; ++g)
#pragma unroll
    for (int c = 0; c < CPL; ++c)
#pragma unroll
      for (int e = 0; e < E; ++e)
        acc[g][c][e] = 0.0f;
  for (int base = warp * RW; base < n; base += U * stride) {
    CacheChunk<CB> raw[U][CPL] = {};
    const unsigned short *rowParams[U];
    loadDecodeRows<C, U>(a.vCache, a.vParams, slots, kvHead, base, stride,
                         rowInWarp, sub, n, aligned, raw, rowParams);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      int j = base + u * stride + rowInWarp;
      if (j >= n)
        continue;
      float p[G];
#pragma unroll
      for (int g = 0; g < G; ++g)
        p[g] = scores[g * P + j];
#pragma unroll
      for (int c = 0; c < CPL; ++c) {
        int chunk = sub + c * LN;
        if (chunk < L::kChunks) {
          float v[E];
          dequantChunk<C, E>(raw[u][c], rowParams[u], chunk * E, vScale, v);
#pragma unroll
          for (int g = 0; g < G; ++g)
#pragma unroll
            for (int e = 0; e < E; ++e)
              acc[g][c][e] += p[g] * v[e];
        }
      }
    }
  }
  // The rows of a warp: lanes sub, sub + kLanes, ... hold the same chunks.
#pragma unroll
  for (int o = LN; o < 32; o <<= 1)
#pragma unroll
    for (int g = 0; g < G; ++g)
#pragma unroll
      for (int c = 0; c < CPL; ++c)
#pragma unroll
        for (int e = 0; e < E; ++e)
          acc[g][c][e] += __shfl_xor_sync(0xffffffffu, acc[g][c][e], o);
  // The warps, in order (deterministic), into qs, which no one reads any
  // more.
  for (int w = 0; w < NW; ++w) {
    if (warp == w && rowInWarp == 0) {
#pragma unroll
      for (int g = 0; g < G; ++g)
#pragma unroll
        for (int c = 0; c < CPL; ++c)
#pragma unroll
          for (int e = 0; e < E; ++e) {
            int d = (sub + c * LN) * E + e;
            if (d < D)
              qs[g * D + d] = w == 0 ? acc[g][c][e] : qs[g * D + d] + acc[g][c][e];
          }
    }
    __syncthreads();
  }
  for (int i = int(threadIdx.x); i < G * D; i += NT) {
    int g = i / D, d = i % D;
    long long h = headBase + g;
    float o = qs[i] / headSum[g];
    if (a.numPartitions == 1)
      a.out[h * D + d] = o;
    else
      a.partialOut[(h * a.numPartitions + part) * D + d] = o;
  }
  if (a.numPartitions > 1 && int(threadIdx.x) < G) {
    long long h = headBase + threadIdx.x;
    a.partialMax[h * a.numPartitions + part] = headMax[threadIdx.x];
    a.partialSum[h * a.numPartitions + part] = headSum[threadIdx.x];
  }
}

/// Merges the partitions of one (token, head): grid (numHeads, numTokens).
template <class C>
__device__ __forceinline__ void pagedDecodeCombine(const PagedDecodeArgs &a) {
  constexpr int D = C::kHeadDim, NT = C::kThreads;
  const long long h = (long long)blockIdx.y * gridDim.x + blockIdx.x;
  const int np = a.numPartitions;
  const float *maxes = a.partialMax + h * np, *sums = a.partialSum + h * np;
  float m = -infinity();
  for (int p = 0; p < np; ++p)
    if (sums[p] > 0.0f)
      m = fmaxf(m, maxes[p]);
  float total = 0.0f;
  for (int p = 0; p < np; ++p)
    if (sums[p] > 0.0f)
      total += sums[p] * softmaxExp(maxes[p] - m);
  for (int d = int(threadIdx.x); d < D; d += NT) {
    float acc = 0.0f;
    for (int p = 0; p < np; ++p)
      if (sums[p] > 0.0f) // empty partitions wrote no partial output
        acc += sums[p] * softmaxExp(maxes[p] - m) *
               a.partialOut[(h * np + p) * D + d];
    a.out[h * D + d] = acc / total;
  }
}

} // namespace folio_cuda

#endif // FOLIO_CUDA_PAGED_DECODE
