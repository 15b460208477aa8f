// Sampling over logits rows, one block per row. Greedy: the lowest index
// among the largest logits, as runtime/Sampler's argmaxProcessed. Top-k /
// top-p: runtime/Sampler's processLogits and drawProcessed (temperature,
// min-p, top-k keeping ties at the k-th value, the smallest most likely
// set that reaches top-p with ties by lower token id, then an inverse-CDF
// draw in token order with the caller's uniform), in double like the host;
// the sums are block reductions instead of one sequential loop, so a
// choice can differ only where the uniform or top-p falls within rounding
// of a partial sum. Its rows of temperature 0 are greedy, so a batch
// mixing greedy and sampled requests takes one launch. A row with a NaN or
// +inf, or with every logit -inf, gets token -1 (the CPU sampler refuses
// such rows with an error; the runtime reports it). Penalties are not
// applied here: rows that ask for them are sampled on the host.
#ifndef FOLIO_CUDA_SAMPLE
#define FOLIO_CUDA_SAMPLE

namespace folio_cuda {

/// An unsigned key ordered as the floats are (for radix selection).
__device__ __forceinline__ unsigned orderedKey(float x) {
  unsigned b = __float_as_uint(x);
  return (b & 0x80000000u) ? ~b : b | 0x80000000u;
}

/// The block-wide sum of a double, in every thread (`red`: 32 doubles).
template <int NT>
__device__ __forceinline__ double blockSumDouble(double v, double *red) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0)
    red[threadIdx.x / 32] = v;
  __syncthreads();
  double total = 0.0;
  for (int w = 0; w < NT / 32; ++w)
    total += red[w];
  __syncthreads();
  return total;
}

/// The largest key K for which `atLeast(K)` holds (a predicate monotone in
/// K, true at 0), deciding one bit per pass, most significant first.
template <int NT, class Count>
__device__ __forceinline__ unsigned radixSelect(Count atLeast) {
  unsigned prefix = 0;
  for (int bit = 31; bit >= 0; --bit) {
    unsigned candidate = prefix | (1u << bit);
    if (atLeast(candidate))
      prefix = candidate;
  }
  return prefix;
}

/// (value, index) of the better of two candidates: larger value, then
/// lower index.
__device__ __forceinline__ void betterOf(float &v, int &i, float v2, int i2) {
  if (v2 > v || (v2 == v && i2 < i)) {
    v = v2;
    i = i2;
  }
}

template <class C>
__device__ __forceinline__ void sampleGreedy(const SampleArgs &a) {
  constexpr int NT = C::kThreads, NW = NT / 32;
  const float *row = a.logits + (long long)blockIdx.x * a.stride;
  float best = -infinity();
  int bestIdx = a.vocab; // none yet
  int fault = 0;         // NaN or +inf seen
  for (int i = int(threadIdx.x); i < a.vocab; i += NT) {
    float v = row[i];
    if (isnan(v) || v == infinity())
      fault = 1;
    else if (v != -infinity())
      betterOf(best, bestIdx, v, i);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    float v2 = __shfl_xor_sync(0xffffffffu, best, o);
    int i2 = __shfl_xor_sync(0xffffffffu, bestIdx, o);
    betterOf(best, bestIdx, v2, i2);
  }
  __shared__ float warpBest[NW];
  __shared__ int warpIdx[NW];
  if (threadIdx.x % 32 == 0) {
    warpBest[threadIdx.x / 32] = best;
    warpIdx[threadIdx.x / 32] = bestIdx;
  }
  fault = __syncthreads_or(fault);
  if (threadIdx.x == 0) {
    for (int w = 1; w < NW; ++w)
      betterOf(best, bestIdx, warpBest[w], warpIdx[w]);
    a.tokens[blockIdx.x] = fault || bestIdx == a.vocab ? -1 : bestIdx;
  }
}

template <class C>
__device__ __forceinline__ void sampleTopKTopP(const SampleArgs &a) {
  constexpr int NT = C::kThreads;
  const int rowIdx = int(blockIdx.x), tid = int(threadIdx.x), V = a.vocab;
  if (a.temperature[rowIdx] == 0.0f) { // the same for the whole block
    sampleGreedy<C>(a);
    return;
  }
  const float *row = a.logits + (long long)rowIdx * a.stride;
  __shared__ double red[32];
  __shared__ int choice;
  const double temp = double(a.temperature[rowIdx]);

  int fault = 0, live = 0;
  for (int i = tid; i < V; i += NT) {
    float v = row[i];
    fault |= isnan(v) || v == infinity();
    live += v != -infinity();
  }
  fault = __syncthreads_or(fault);
  live = int(blockSumDouble<NT>(double(live), red));
  if (fault || live == 0) {
    if (tid == 0)
      a.tokens[rowIdx] = -1;
    return;
  }

  // Top-k: keep keys >= the k-th largest (ties at it all survive). The
  // host applies min-p first, but both keep an upper set of the values, so
  // the k-th largest of min-p's survivors (when more than k survive) is the
  // k-th largest of the row, and together they keep the intersection.
  unsigned kKey = 0;
  const int k = a.topK[rowIdx];
  if (k > 0 && k < live) {
    kKey = radixSelect<NT>([&](unsigned cand) {
      int n = 0;
      for (int i = tid; i < V; i += NT)
        n += row[i] != -infinity() && orderedKey(row[i]) >= cand;
      return blockSumDouble<NT>(double(n), red) >= double(k);
    });
  }
  // Min-p's floor on l / temperature, -inf until the largest is known
  // (top-k always keeps the largest, so the maximum below is the row's).
  double minPFloor = -infinity();
  auto kept = [&](int i) {
    return row[i] != -infinity() && orderedKey(row[i]) >= kKey &&
           double(row[i]) / temp >= minPFloor;
  };
  double best = -infinity();
  for (int i = tid; i < V; i += NT)
    if (kept(i))
      best = fmax(best, double(row[i]) / temp);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    best = fmax(best, __shfl_xor_sync(0xffffffffu, best, o));
  if (tid % 32 == 0)
    red[tid / 32] = best;
  __syncthreads();
  for (int w = 0; w < NT / 32; ++w)
    best = fmax(best, red[w]);
  __syncthreads();
  // Min-p: p_i >= min_p * p_max, i.e. l_i >= l_max + log(min_p), as the
  // host compares it.
  const float minP = a.minP ? a.minP[rowIdx] : 0.0f;
  if (minP > 0.0f)
    minPFloor = best + log(double(minP));
  auto weight = [&](int i) { // exp(l - best), 0 when masked
    return kept(i) ? exp(double(row[i]) / temp - best) : 0.0;
  };

  // Top-p: the largest key whose tokens at or above it hold top_p of the
  // mass; all above it stay, and of its ties the lowest ids while the mass
  // before them is under top_p.
  unsigned pKey = 0;
  int lastTie = V; // ties at pKey with a higher id are dropped
  const double topP = double(a.topP[rowIdx]);
  if (topP < 1.0) {
    double total = 0.0;
    for (int i = tid; i < V; i += NT)
      total += weight(i);
    total = blockSumDouble<NT>(total, red);
    const double lse = best + log(total);
    auto mass = [&](unsigned cand, bool strict) {
      double m = 0.0;
      for (int i = tid; i < V; i += NT)
        if (kept(i) && (strict ? orderedKey(row[i]) > cand
                               : orderedKey(row[i]) >= cand))
          m += exp(double(row[i]) / temp - lse);
      return blockSumDouble<NT>(m, red);
    };
    if (mass(0u, false) >= topP) {
      pKey = radixSelect<NT>(
          [&](unsigned cand) { return mass(cand, false) >= topP; });
      double above = mass(pKey, true);
      if (tid == 0) { // ties are few: one thread walks them in id order
        double before = above;
        int last = -1;
        for (int i = 0; i < V; ++i)
          if (kept(i) && orderedKey(row[i]) == pKey) {
            if (!(before < topP))
              break;
            before += exp(double(row[i]) / temp - lse);
            last = i;
          }
        choice = last;
      }
      __syncthreads();
      lastTie = choice;
      __syncthreads();
    }
  }
  auto keep = [&](int i) {
    if (!kept(i))
      return false;
    unsigned key = orderedKey(row[i]);
    return key > pKey || (key == pKey && i <= lastTie);
  };

  // The draw: the first token whose running sum in id order passes
  // uniform * total, chunk by chunk with a block scan.
  double total = 0.0;
  int lastLive = -1;
  for (int i = tid; i < V; i += NT)
    if (keep(i)) {
      total += exp(double(row[i]) / temp - best);
      lastLive = i > lastLive ? i : lastLive;
    }
  total = blockSumDouble<NT>(total, red);
  const double target = a.uniform[rowIdx] * total;
  if (tid == 0)
    choice = V;
  __shared__ int lastShared[32];
  for (int o = 16; o > 0; o >>= 1) {
    int other = __shfl_xor_sync(0xffffffffu, lastLive, o);
    lastLive = other > lastLive ? other : lastLive;
  }
  if (tid % 32 == 0)
    lastShared[tid / 32] = lastLive;
  __syncthreads();
  double carry = 0.0;
  for (int c0 = 0; c0 < V; c0 += NT) {
    int i = c0 + tid;
    double w = i < V && keep(i) ? exp(double(row[i]) / temp - best) : 0.0;
    // Inclusive scan within the warp, then over the warps.
    double x = w;
    for (int o = 1; o < 32; o <<= 1) {
      double y = __shfl_up_sync(0xffffffffu, x, o);
      if (tid % 32 >= o)
        x += y;
    }
    if (tid % 32 == 31)
      red[tid / 32] = x;
    __syncthreads();
    double offset = carry;
    for (int wi = 0; wi < tid / 32; ++wi)
      offset += red[wi];
    double chunk = 0.0;
    for (int wi = 0; wi < NT / 32; ++wi)
      chunk += red[wi];
    bool hit = w > 0.0 && offset + x > target;
    if (hit)
      atomicMin(&choice, i);
    __syncthreads();
    if (choice < V)
      break; // uniform per block: every thread read the same choice
    carry += chunk;
  }
  if (tid == 0) {
    int last = -1;
    for (int wi = 0; wi < NT / 32; ++wi)
      last = lastShared[wi] > last ? lastShared[wi] : last;
    // Rounding left the target at or above the sum: the last live token.
    a.tokens[rowIdx] = choice < V ? choice : last;
  }
}

} // namespace folio_cuda

#endif // FOLIO_CUDA_SAMPLE
