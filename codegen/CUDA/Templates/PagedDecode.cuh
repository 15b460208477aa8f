// Paged attention for decode-like steps: every query token attends to the
// keys up to its own position (codegen/CPU/PagedAttention.h's ragged batch,
// with few tokens per sequence). Grid (numKvHeads, numTokens, partitions):
// a block takes all query heads of one kv head (GQA: each K / V element is
// dequantized once for all of them) over one partition of the context.
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

template <class C>
__device__ __forceinline__ void pagedDecode(const PagedDecodeArgs &a) {
  constexpr int D = C::kHeadDim, G = C::kQueriesPerKv, P = C::kPartition;
  constexpr int NT = C::kThreads, NW = NT / 32;
  constexpr int numHeads = C::kNumKvHeads * G;
  constexpr int rowBytes = D * C::kBits / 8;
  constexpr int paramsPerRow = C::kGroup > 0 ? 2 * (D / C::kGroup) : 0;
  const int kvHead = int(blockIdx.x), token = int(blockIdx.y);
  const int part = int(blockIdx.z);
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;

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
  float *qs = smem;          // [G][D]
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
  __syncthreads();

  // Scores: a warp per key, lanes across the head dimension.
  for (int j = warp; j < n; j += NW) {
    long long r = (long long)slots[j] * C::kNumKvHeads + kvHead;
    const unsigned char *row = a.kCache + r * rowBytes;
    const unsigned short *params = paramsPerRow ? a.kParams + r * paramsPerRow : nullptr;
    float acc[G];
#pragma unroll
    for (int g = 0; g < G; ++g)
      acc[g] = 0.0f;
    for (int d = lane; d < D; d += 32) {
      float k = loadCache<C::kType, C::kGroup>(row, params, d, kScale);
#pragma unroll
      for (int g = 0; g < G; ++g)
        acc[g] += qs[g * D + d] * k;
    }
#pragma unroll
    for (int g = 0; g < G; ++g) {
      float s = warpSum(acc[g]) * a.scale;
      if (a.softCap > 0.0f)
        s = tanhf(s / a.softCap) * a.softCap;
      if (lane == 0)
        scores[g * P + j] = s;
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

  // Weighted sum of V: a thread per output element of the head dimension.
  for (int d = int(threadIdx.x); d < D; d += NT) {
    float acc[G];
#pragma unroll
    for (int g = 0; g < G; ++g)
      acc[g] = 0.0f;
    for (int j = 0; j < n; ++j) {
      long long r = (long long)slots[j] * C::kNumKvHeads + kvHead;
      float v = loadCache<C::kType, C::kGroup>(
          a.vCache + r * rowBytes,
          paramsPerRow ? a.vParams + r * paramsPerRow : nullptr, d, vScale);
#pragma unroll
      for (int g = 0; g < G; ++g)
        acc[g] += scores[g * P + j] * v;
    }
#pragma unroll
    for (int g = 0; g < G; ++g) {
      long long h = headBase + g;
      float o = acc[g] / headSum[g];
      if (a.numPartitions == 1)
        a.out[h * D + d] = o;
      else
        a.partialOut[(h * a.numPartitions + part) * D + d] = o;
    }
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
