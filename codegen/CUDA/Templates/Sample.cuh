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
// such rows with an error; the runtime reports it). Penalties run before,
// in place (penalizeRows). The verification of drafts (verifyDrafts)
// and the logprobs after a draw (rowLogprobs) use the same
// pieces; the draw and the verifier can record each row's keep set
// (RowKeep) for the logprobs kernel to read.
#ifndef FOLIO_CUDA_SAMPLE
#define FOLIO_CUDA_SAMPLE

namespace folio_cuda {

/// An unsigned key ordered as the floats are (for radix selection). -0
/// takes +0's key: they compare equal, so the host's samplers count them
/// as ties at a top-k or top-p cut, not as two values.
__device__ __forceinline__ unsigned orderedKey(float x) {
  unsigned b = x == 0.0f ? 0u : __float_as_uint(x);
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
template <class T>
__device__ __forceinline__ void betterOf(T &v, int &i, T v2, int i2) {
  if (v2 > v || (v2 == v && i2 < i)) {
    v = v2;
    i = i2;
  }
}

/// The largest double of the block, in every thread (`red`: 32 doubles).
template <int NT>
__device__ __forceinline__ double blockMaxDouble(double v, double *red) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (threadIdx.x % 32 == 0)
    red[threadIdx.x / 32] = v;
  __syncthreads();
  double best = -infinity();
  for (int w = 0; w < NT / 32; ++w)
    best = fmax(best, red[w]);
  __syncthreads();
  return best;
}

/// A row's argmax (the lowest index among the largest entries; `vocab`
/// when every entry is -inf) and whether it holds a NaN or +inf, in every
/// thread, from one pass over the row.
struct RowArgmax {
  int index;
  bool fault;
};

template <int NT>
__device__ __forceinline__ RowArgmax blockArgmax(const float *row, int vocab) {
  constexpr int NW = NT / 32;
  float best = -infinity();
  int bestIdx = vocab; // none yet
  int fault = 0;       // NaN or +inf seen
  for (int i = int(threadIdx.x); i < vocab; i += NT) {
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
  for (int w = 0; w < NW; ++w)
    betterOf(best, bestIdx, warpBest[w], warpIdx[w]);
  __syncthreads(); // the next call rewrites warpBest
  return {bestIdx, fault != 0};
}

template <class C>
__device__ __forceinline__ void sampleGreedy(const SampleArgs &a) {
  const float *row = a.logits + (long long)blockIdx.x * a.stride;
  RowArgmax r = blockArgmax<C::kThreads>(row, a.vocab);
  if (threadIdx.x == 0)
    a.tokens[blockIdx.x] = r.fault || r.index == a.vocab ? -1 : r.index;
}

/// How many entries of a row are above -inf, or -1 when it holds a NaN or
/// +inf (the rows the CPU sampler refuses, with 0), in every thread.
template <int NT>
__device__ __forceinline__ int rowLive(const float *row, int vocab,
                                       double *red) {
  int fault = 0, live = 0;
  for (int i = int(threadIdx.x); i < vocab; i += NT) {
    float v = row[i];
    fault |= isnan(v) || v == infinity();
    live += v != -infinity();
  }
  fault = __syncthreads_or(fault);
  live = int(blockSumDouble<NT>(double(live), red));
  return fault ? -1 : live;
}

/// The tokens a draw keeps: runtime/Sampler's temperature, min-p, top-k
/// and top-p over one usable row, and the largest l / temperature kept.
struct KeepSet {
  const float *row;
  double temp;
  unsigned kKey;    // top-k: keys at or above it
  double minPFloor; // min-p: l / temperature at or above it
  unsigned pKey;    // top-p: keys above it, and its ties up to lastTie
  int lastTie;
  double best;

  /// After temperature, min-p and top-k.
  __device__ __forceinline__ bool kept(int i) const {
    return row[i] != -infinity() && orderedKey(row[i]) >= kKey &&
           double(row[i]) / temp >= minPFloor;
  }
  /// After top-p too: the draw's support.
  __device__ __forceinline__ bool keep(int i) const {
    if (!kept(i))
      return false;
    unsigned key = orderedKey(row[i]);
    return key > pKey || (key == pKey && i <= lastTie);
  }
};

/// The keep set of a row with `live` (> 0) entries above -inf, in every
/// thread. top_k <= 0, top_p >= 1 and min_p <= 0 are off.
template <int NT>
__device__ __forceinline__ KeepSet keepSet(const float *row, int V, int live,
                                           double temp, int k, double topP,
                                           float minP, double *red) {
  const int tid = int(threadIdx.x);
  KeepSet ks{row, temp, 0u, -double(infinity()), 0u, V, -double(infinity())};
  // Top-k: keep keys >= the k-th largest (ties at it all survive). The
  // host applies min-p first, but both keep an upper set of the values, so
  // the k-th largest of min-p's survivors (when more than k survive) is the
  // k-th largest of the row, and together they keep the intersection.
  if (k > 0 && k < live) {
    ks.kKey = radixSelect<NT>([&](unsigned cand) {
      int n = 0;
      for (int i = tid; i < V; i += NT)
        n += row[i] != -infinity() && orderedKey(row[i]) >= cand;
      return blockSumDouble<NT>(double(n), red) >= double(k);
    });
  }
  // Top-k always keeps the largest, so this is the row's maximum.
  double best = -infinity();
  for (int i = tid; i < V; i += NT)
    if (ks.kept(i))
      best = fmax(best, double(row[i]) / temp);
  ks.best = best = blockMaxDouble<NT>(best, red);
  // Min-p: p_i >= min_p * p_max, i.e. l_i >= l_max + log(min_p), as the
  // host compares it.
  if (minP > 0.0f)
    ks.minPFloor = best + log(double(minP));

  // Top-p: the largest key whose tokens at or above it hold top_p of the
  // mass; all above it stay, and of its ties the lowest ids while the mass
  // before them is under top_p.
  if (topP < 1.0) {
    double total = 0.0;
    for (int i = tid; i < V; i += NT)
      if (ks.kept(i))
        total += exp(double(row[i]) / temp - best);
    total = blockSumDouble<NT>(total, red);
    const double lse = best + log(total);
    auto mass = [&](unsigned cand, bool strict) {
      double m = 0.0;
      for (int i = tid; i < V; i += NT)
        if (ks.kept(i) && (strict ? orderedKey(row[i]) > cand
                                  : orderedKey(row[i]) >= cand))
          m += exp(double(row[i]) / temp - lse);
      return blockSumDouble<NT>(m, red);
    };
    if (mass(0u, false) >= topP) {
      ks.pKey = radixSelect<NT>(
          [&](unsigned cand) { return mass(cand, false) >= topP; });
      double above = mass(ks.pKey, true);
      __shared__ int lastTie;
      if (tid == 0) { // ties are few: one thread walks them in id order
        double before = above;
        int last = -1;
        for (int i = 0; i < V; ++i)
          if (ks.kept(i) && orderedKey(row[i]) == ks.pKey) {
            if (!(before < topP))
              break;
            before += exp(double(row[i]) / temp - lse);
            last = i;
          }
        lastTie = last;
      }
      __syncthreads();
      ks.lastTie = lastTie;
      __syncthreads();
    }
  }
  return ks;
}

/// Records a row's keep set (and, with kRowKeepLse, the log-sum-exp of its
/// kept l / temperature) for the logprobs kernel; thread 0 writes.
__device__ __forceinline__ void storeKeep(RowKeep *out, const KeepSet &ks,
                                          double lse, int flags) {
  if (out && threadIdx.x == 0)
    *out = RowKeep{ks.best, ks.minPFloor, lse, ks.kKey, ks.pKey, ks.lastTie,
                   flags};
}

/// A row the sampler kept no set for (greedy, refused, not verified).
__device__ __forceinline__ void storeNoKeep(RowKeep *out) {
  if (out && threadIdx.x == 0)
    out->flags = 0;
}

/// The keep set storeKeep recorded for `row`.
__device__ __forceinline__ KeepSet loadKeep(const RowKeep &k, const float *row,
                                            double temp) {
  return KeepSet{row, temp, k.kKey, k.minPFloor, k.pKey, k.lastTie, k.best};
}

/// Inverse-CDF draw in token order, in every thread: the first token of
/// positive weight whose running sum passes `target` (u x the weights'
/// total), chunk by chunk with a block scan; where rounding left the
/// target at or above the sum, the last token `live` says may be drawn.
template <int NT, class Weight, class Live>
__device__ __forceinline__ int drawInOrder(int V, double target, Weight weight,
                                           Live live, double *red) {
  const int tid = int(threadIdx.x);
  __shared__ int hit;
  __shared__ int lastShared[32];
  if (tid == 0)
    hit = V;
  __syncthreads();
  int lastLive = -1;
  double carry = 0.0;
  for (int c0 = 0; c0 < V; c0 += NT) {
    int i = c0 + tid;
    double w = i < V ? weight(i) : 0.0;
    if (i < V && live(i))
      lastLive = i;
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
    if (w > 0.0 && offset + x > target)
      atomicMin(&hit, i);
    __syncthreads();
    if (hit < V)
      break; // uniform per block: every thread read the same hit
    carry += chunk;
  }
  int result = hit;
  if (result == V) { // no chunk passed it: every chunk was scanned
    for (int o = 16; o > 0; o >>= 1) {
      int other = __shfl_xor_sync(0xffffffffu, lastLive, o);
      lastLive = other > lastLive ? other : lastLive;
    }
    if (tid % 32 == 0)
      lastShared[tid / 32] = lastLive;
    __syncthreads();
    result = -1;
    for (int wi = 0; wi < NT / 32; ++wi)
      result = lastShared[wi] > result ? lastShared[wi] : result;
  }
  __syncthreads(); // the next call resets hit
  return result;
}

template <class C>
__device__ __forceinline__ void sampleTopKTopP(const SampleArgs &a) {
  constexpr int NT = C::kThreads;
  const int rowIdx = int(blockIdx.x), V = a.vocab;
  RowKeep *keepOut = a.keep ? a.keep + rowIdx : nullptr;
  if (a.temperature[rowIdx] == 0.0f) { // the same for the whole block
    storeNoKeep(keepOut);
    sampleGreedy<C>(a);
    return;
  }
  const float *row = a.logits + (long long)rowIdx * a.stride;
  __shared__ double red[32];
  const int live = rowLive<NT>(row, V, red);
  if (live <= 0) {
    storeNoKeep(keepOut);
    if (threadIdx.x == 0)
      a.tokens[rowIdx] = -1;
    return;
  }
  const KeepSet ks =
      keepSet<NT>(row, V, live, double(a.temperature[rowIdx]), a.topK[rowIdx],
                  double(a.topP[rowIdx]), a.minP ? a.minP[rowIdx] : 0.0f, red);
  auto weight = [&](int i) { // exp(l - best), 0 when dropped
    return ks.keep(i) ? exp(double(row[i]) / ks.temp - ks.best) : 0.0;
  };
  double total = 0.0;
  for (int i = int(threadIdx.x); i < V; i += NT)
    total += weight(i);
  total = blockSumDouble<NT>(total, red);
  // The logprobs kernel's normaliser, summed as it would sum it.
  storeKeep(keepOut, ks, ks.best + log(total), kRowKeepSet | kRowKeepLse);
  int token = drawInOrder<NT>(
      V, a.uniform[rowIdx] * total, weight, [&](int i) { return ks.keep(i); },
      red);
  if (threadIdx.x == 0)
    a.tokens[rowIdx] = token;
  // A draft model's q: the distribution the token was drawn from, rounded
  // to float, the drawn token's at least the smallest normal float (the
  // verifier divides by it), as the host's proposer writes it.
  const int qRow = a.probs && a.probRows ? a.probRows[rowIdx] : -1;
  if (qRow >= 0) {
    float *q = a.probs + (long long)qRow * V;
    const float smallest = __int_as_float(0x00800000); // FLT_MIN
    for (int i = int(threadIdx.x); i < V; i += NT) {
      float v = float(weight(i) / total);
      q[i] = i == token && v < smallest ? smallest : v;
    }
  }
}

/// Speculative verification of one sequence per block, as the engine's
/// host path verifies it (runtime/Core/SpeculativeStep.h, then
/// codegen/CPU/SpecVerify.h): every row 0..k is checked first; a greedy
/// sequence (temperature 0) keeps drafts while each is its row's argmax and
/// then takes the argmax; a sampled one keeps draft x of row j when
/// u_j q_j(x) < p_j(x), with p_j the row's processed logits rounded to float
/// as the host stores them and q_j the draft model's row (probRows) or,
/// for a deterministic proposer (n-gram lookup), 1 at the draft; it draws
/// a rejection's token from max(0, p_j - q_j) renormalised (p_j where that
/// has no mass), and the bonus from p_k. The sums are block reductions, so
/// a choice can differ from the host only where a uniform falls within
/// rounding of a partial sum.
template <class C>
__device__ __forceinline__ void verifyDrafts(const SampleArgs &a) {
  constexpr int NT = C::kThreads;
  const int s = int(blockIdx.x), tid = int(threadIdx.x), V = a.vocab;
  const int K = a.numDraft;
  const int *drafts = a.drafts + (long long)s * K;
  const float *u = a.uniforms + (long long)s * (K + 1);
  int *out = a.tokens + (long long)s * (K + 1);
  auto rowOf = [&](int j) {
    return a.logits + ((long long)s * (K + 1) + j) * a.stride;
  };
  int k = 0; // drafts before the -1 padding
  while (k < K && drafts[k] >= 0)
    ++k;
  // The draft model's q rows of this sequence, or -1: one-hot drafts.
  const int qRow0 = a.probs && a.probRows ? a.probRows[s] : -1;
  RowKeep *keepOut = a.keep ? a.keep + (long long)s * (K + 1) : nullptr;
  if (keepOut) // rows below set theirs
    for (int j = 0; j <= K; ++j)
      storeNoKeep(keepOut + j);
  __shared__ double red[32];
  // Done: `n` drafts kept, then `token`, then -1 (all -1 for a faulty row).
  auto finish = [&](int n, int token) {
    if (tid == 0) {
      a.accepted[s] = token < 0 ? -1 : n;
      for (int j = 0; j <= K; ++j)
        out[j] = token < 0 ? -1 : j < n ? drafts[j] : j == n ? token : -1;
    }
  };
  for (int j = 0; j <= k; ++j)
    if (rowLive<NT>(rowOf(j), V, red) <= 0) {
      finish(0, -1);
      return;
    }
  const double temp = double(a.temperature[s]);
  for (int j = 0; j <= k; ++j) {
    const float *row = rowOf(j);
    if (temp == 0.0) {
      int t = blockArgmax<NT>(row, V).index;
      if (j == k || drafts[j] != t) {
        finish(j, t);
        return;
      }
      continue;
    }
    const KeepSet ks = keepSet<NT>(row, V, rowLive<NT>(row, V, red), temp,
                                   a.topK[s], double(a.topP[s]),
                                   a.minP ? a.minP[s] : 0.0f, red);
    // Its log-sum-exp is not the verifier's sum below (that one is over
    // the values rounded to float): the logprobs kernel sums its own.
    storeKeep(keepOut ? keepOut + j : nullptr, ks, 0.0, kRowKeepSet);
    // p_j as the host computes it from the float row it stores.
    const double m = double(float(ks.best));
    auto e = [&](int i) {
      return ks.keep(i) ? exp(double(float(double(row[i]) / temp)) - m) : 0.0;
    };
    auto positive = [&](int i) { return e(i) > 0.0; };
    double sum = 0.0;
    for (int i = tid; i < V; i += NT)
      sum += e(i);
    sum = blockSumDouble<NT>(sum, red);
    const double draw = double(u[K]);
    if (j == k) { // every draft kept: the bonus token from p_k
      finish(k, drawInOrder<NT>(V, draw * sum, e, positive, red));
      return;
    }
    const int x = drafts[j];
    // q_j: the draft model's row, or one-hot at x. Keep x iff
    // u < min(1, p/q), tested as u q(x) < p(x) as the host tests it.
    const float *q = qRow0 >= 0 ? a.probs + (long long)(qRow0 + j) * V
                                : nullptr;
    const double qx = q ? double(q[x]) : 1.0;
    if (!(qx > 0.0) || qx == double(infinity())) {
      finish(0, -1); // a q the draw cannot have written: refused
      return;
    }
    if (double(u[j]) * qx < e(x) / sum)
      continue; // kept
    // Rejected: max(0, p - q).
    const double invSum = 1.0 / sum;
    auto residual = [&](int i) {
      double qi = q ? double(q[i]) : (i == x ? 1.0 : 0.0);
      double r = e(i) * invSum - qi;
      return r > 0.0 ? r : 0.0;
    };
    double mass = 0.0;
    for (int i = tid; i < V; i += NT)
      mass += residual(i);
    mass = blockSumDouble<NT>(mass, red);
    int t = mass > 0.0
                ? drawInOrder<NT>(
                      V, draw * mass, residual,
                      [&](int i) { return residual(i) > 0.0; }, red)
                : drawInOrder<NT>(V, draw * sum, e, positive, red);
    finish(j, t);
    return;
  }
}

/// Penalties in place, one block per row, as runtime/Sampler's
/// applyPenalties computes them: for each listed token, the repetition
/// penalty where it is not 1 (a positive logit divided by it, a negative
/// one multiplied), then, where the token's output count is positive,
/// frequency x count + presence subtracted; in double, and rounded to
/// float for the sampler that reads the row next (the host keeps the
/// double, so a draw can differ only within that rounding). The list holds
/// each token once: every token of the prompt and output where the
/// repetition penalty is on, else the output's.
template <class C>
__device__ __forceinline__ void penalizeRows(const SampleArgs &a) {
  constexpr int NT = C::kThreads;
  const int r = int(blockIdx.x);
  float *row = a.penalized + (long long)r * a.stride;
  const double repetition = double(a.repetition[r]);
  const double frequency = double(a.frequency[r]);
  const double presence = double(a.presence[r]);
  for (int e = a.penaltyStart[r] + int(threadIdx.x); e < a.penaltyStart[r + 1];
       e += NT) {
    const int token = a.penaltyTokens[e], count = a.penaltyCounts[e];
    double l = double(row[token]);
    if (repetition != 1.0)
      l = l > 0 ? l / repetition : l * repetition;
    if (count > 0)
      l -= frequency * double(count) + presence;
    row[token] = float(l);
  }
}

/// Logprobs after a draw, one block per row, as runtime/Sampler's
/// logprobsProcessed reports them: under the distribution the token was
/// drawn from (the kept tokens' l / temperature, the rest -inf; a greedy
/// row's logits as they are), the drawn token's log-probability and the
/// numTop most likely tokens', ties by lower token id (masked tokens, at
/// -inf, last). The log-sum-exp is a block reduction in double where the
/// host sums in order, so values can differ from the host's by its
/// rounding; the order of the top tokens is the logits' own and does not.
/// Each thread keeps its own best numTop of the tokens it reads, in order,
/// and numTop block-wide rounds take the best head of those lists: one
/// pass over the row, not one per reported token. With numDraft > 0 the
/// rows are verified sequences' (numDraft + 1 rows each, the settings per
/// sequence, `tokens` the verifier's output: each row's emitted token).
/// Where the draw or the verifier recorded a row's keep set (`keep`), it is
/// read instead of rebuilt, and a draw's log-sum-exp too: such a row takes
/// one pass, for the top tokens.
template <class C>
__device__ __forceinline__ void rowLogprobs(const SampleArgs &a) {
  constexpr int NT = C::kThreads, NW = NT / 32;
  const int r = int(blockIdx.x), tid = int(threadIdx.x), V = a.vocab;
  const int p = r / (a.numDraft + 1); // the row's settings
  const int token = a.tokens[r];
  const int want = a.numTop[p] < V ? a.numTop[p] : V;
  // The same for the whole block: rows that asked for nothing, and rows
  // the draw refused.
  if (want < 0 || token < 0 || token >= V)
    return;
  const float *row = a.logits + (long long)r * a.stride;
  __shared__ double red[32];
  const double temp = double(a.temperature[p]);
  // What the draw or the verifier recorded (a row with a set was usable),
  // else the set rebuilt; a greedy row keeps every token above -inf at
  // temperature 1.
  const RowKeep *stored = a.keep && temp != 0.0 ? a.keep + r : nullptr;
  const int flags = stored ? stored->flags : 0;
  KeepSet ks;
  if (flags & kRowKeepSet) {
    ks = loadKeep(*stored, row, temp);
  } else {
    const int live = rowLive<NT>(row, V, red);
    if (live <= 0)
      return;
    ks = temp == 0.0 ? KeepSet{row, 1.0, 0u, -double(infinity()), 0u, V,
                               -double(infinity())}
                     : keepSet<NT>(row, V, live, temp, a.topK[p],
                                   double(a.topP[p]),
                                   a.minP ? a.minP[p] : 0.0f, red);
  }
  auto processed = [&](int i) {
    return ks.keep(i) ? double(row[i]) / ks.temp : -double(infinity());
  };
  double lse;
  if (flags & kRowKeepLse) {
    lse = stored->lse;
  } else {
    double best = -infinity();
    for (int i = tid; i < V; i += NT)
      best = fmax(best, processed(i));
    best = blockMaxDouble<NT>(best, red);
    double total = 0.0;
    for (int i = tid; i < V; i += NT)
      total += exp(processed(i) - best);
    lse = best + log(blockSumDouble<NT>(total, red));
  }
  if (tid == 0)
    a.logprob[r] = float(processed(token) - lse);

  // This thread's best `want` tokens, best first. It reads its tokens in
  // increasing id, so one equal to a listed value ranks after it.
  double topV[kMaxTopLogprobs];
  int topI[kMaxTopLogprobs];
  int n = 0;
  for (int i = tid; i < V && want > 0; i += NT) {
    const double v = processed(i);
    if (n == want && !(v > topV[want - 1]))
      continue;
    int j = n < want ? n++ : want - 1;
    for (; j > 0 && v > topV[j - 1]; --j) {
      topV[j] = topV[j - 1];
      topI[j] = topI[j - 1];
    }
    topV[j] = v;
    topI[j] = i;
  }
  // Every round takes the best head; ids are unique, so exactly one
  // thread advances. The lists hold at least `want` tokens in all, so a
  // real token always beats the empty lists' (-inf, V).
  __shared__ double warpV[NW];
  __shared__ int warpI[NW];
  int pos = 0;
  for (int j = 0; j < want; ++j) {
    double v = pos < n ? topV[pos] : -double(infinity());
    int i = pos < n ? topI[pos] : V;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      double v2 = __shfl_xor_sync(0xffffffffu, v, o);
      int i2 = __shfl_xor_sync(0xffffffffu, i, o);
      betterOf(v, i, v2, i2);
    }
    if (tid % 32 == 0) {
      warpV[tid / 32] = v;
      warpI[tid / 32] = i;
    }
    __syncthreads();
    for (int w = 0; w < NW; ++w)
      betterOf(v, i, warpV[w], warpI[w]);
    __syncthreads(); // the next round rewrites warpV
    if (pos < n && topI[pos] == i)
      ++pos;
    if (tid == 0) {
      a.topTokens[(long long)r * kMaxTopLogprobs + j] = i;
      a.topLogprobs[(long long)r * kMaxTopLogprobs + j] = float(v - lse);
    }
  }
}

} // namespace folio_cuda

#endif // FOLIO_CUDA_SAMPLE
