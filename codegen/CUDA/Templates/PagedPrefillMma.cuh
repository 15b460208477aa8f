// Paged attention for prefill and mixed batches on tensor cores: the same
// ragged batch, grid and causal / window / soft-cap rules as
// PagedPrefill.cuh, with both products as bf16 mma.sync (Mma.cuh) and f32
// accumulation. A block takes up to QueryTile tokens of one sequence with
// the G query heads of one kv head: R = QueryTile * G rows, row i * G + g,
// and one warp per 16 of them (the last rows padding). Each warp keeps its
// rows' q fragments in registers, then for every tile of KeyTile keys
// (dequantized once into shared memory as bf16: K row-major, V transposed
// so a B fragment's pair of keys is one word):
//   S = q K^T    KeyTile / 8 tiles of 16 x 8, in the C layout
//   online softmax on S in registers (the 4 lanes of a row reduce by
//   shuffles), P rounded to bf16; a pair of S tiles in the C layout is
//   exactly one A fragment of P, so P never goes through shared memory
//   O += P V     head_dim / 8 tiles of 16 x 8
// The row sums add P as rounded, so the output is a convex combination of
// V's bf16 rows. Against f32 attention the result moves by about 2^-8 of
// max |v| (the tests' tolerance says how much).
#ifndef FOLIO_CUDA_PAGED_PREFILL_MMA
#define FOLIO_CUDA_PAGED_PREFILL_MMA

namespace folio_cuda {

template <class C>
__device__ __forceinline__ void pagedPrefillMma(const PagedPrefillArgs &a) {
  constexpr int D = C::kHeadDim, G = C::kQueriesPerKv;
  constexpr int QT = C::kQueryTile, N = C::kKeyTile, R = QT * G;
  constexpr int NT = C::kThreads, RP = NT / 32 * 16; // rows with padding
  static_assert(RP >= R && RP - R < 16, "one warp per 16 rows");
  static_assert(D % 16 == 0 && N % 16 == 0, "mma.m16n8k16 tiles");
  constexpr int numHeads = C::kNumKvHeads * G;
  // Shared rows 8 bf16 longer than their length: a fragment load's lanes
  // read rows g = 0..7 at words t = 0..3, which then fall in 32 banks.
  constexpr int KS = D + 8, VS = N + 8;
  constexpr int KSTEPS = D / 16, DTILES = D / 8, STILES = N / 8;
  const int kvHead = int(blockIdx.x), seq = int(blockIdx.z);
  const int tid = int(threadIdx.x), lane = tid & 31;
  const int g8 = lane >> 2, t4 = lane & 3;
  const int row0 = (tid >> 5) * 16 + g8; // this thread's rows: row0, row0 + 8

  PrefillSpan span;
  if (!prefillSpan(a, seq, QT, span)) // past the sequence's query tokens
    return;
  const int t0 = span.t0, nq = span.nq, pos0 = span.pos0;
  const int firstKey = span.firstKey, lastKey = span.lastKey;

  FOLIO_DYNAMIC_SHARED(unsigned short, smem);
  constexpr int QK_ROWS = RP > N ? RP : N;
  unsigned short *qs = smem;                // [RP][KS], until q is in registers
  unsigned short *ks = smem;                // [N][KS], after
  unsigned short *vt = smem + QK_ROWS * KS; // [D][VS]
  int *slots = reinterpret_cast<int *>(vt + D * VS); // [N]
  auto word = [](const unsigned short *p) {
    return *reinterpret_cast<const unsigned *>(p);
  };

  for (int e = tid; e < RP * D; e += NT) {
    const int r = e / D, d = e % D, i = r / G, g = r % G;
    // Padding rows (r >= R) are tokens past the tile: i >= QT >= nq.
    const float v =
        i < nq ? a.q[((long long)(t0 + i) * numHeads + kvHead * G + g) * D + d]
               : 0.0f;
    qs[r * KS + d] = floatToBf16Bits(v);
  }
  __syncthreads();
  unsigned qf[KSTEPS][4];
#pragma unroll
  for (int kk = 0; kk < KSTEPS; ++kk) {
    const unsigned short *p = qs + row0 * KS + kk * 16 + 2 * t4;
    qf[kk][0] = word(p);
    qf[kk][1] = word(p + 8 * KS);
    qf[kk][2] = word(p + 8);
    qf[kk][3] = word(p + 8 * KS + 8);
  }
  __syncthreads(); // the K tiles overwrite q

  float kScale = 1.0f, vScale = 1.0f;
  if constexpr (C::kType == CacheType::E4M3 || C::kType == CacheType::E5M2) {
    kScale = a.kScale[kvHead];
    vScale = a.vScale[kvHead];
  }
  // Rows row0 and row0 + 8: running max and this thread's share of the
  // sum (its columns; the row's 4 lanes add theirs at the end).
  float rowMax[2] = {-infinity(), -infinity()}, rowSum[2] = {0.0f, 0.0f};
  bool rowLive[2];
  int rowPos[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = row0 + 8 * h;
    rowLive[h] = r / G < nq; // padding rows too are past nq
    rowPos[h] = pos0 + r / G;
  }
  float o[DTILES][4];
#pragma unroll
  for (int dt = 0; dt < DTILES; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      o[dt][e] = 0.0f;
  const int *table = a.blockTables + (long long)seq * a.maxBlocksPerSeq;

  for (int k0 = firstKey; k0 <= lastKey; k0 += N) {
    const int nk = lastKey + 1 - k0 < N ? lastKey + 1 - k0 : N;
    for (int j = tid; j < nk; j += NT) {
      const int key = k0 + j;
      slots[j] =
          table[key / C::kBlockSize] * C::kBlockSize + key % C::kBlockSize;
    }
    __syncthreads();
    // The K and V tiles in bf16, eight elements of a row per load (the
    // values loadCache gives); keys past nk are zeros (a masked key's
    // probability is 0, and 0 * NaN would not be).
    for (int e = tid; e < N * (D / 8); e += NT) {
      const int j = e / (D / 8), d0 = e % (D / 8) * 8;
      float kv[8], vv[8];
      if (j < nk) {
        loadKv8<C>(a, (long long)slots[j] * C::kNumKvHeads + kvHead, d0,
                   kScale, vScale, kv, vv);
      } else {
        for (int c = 0; c < 8; ++c)
          kv[c] = vv[c] = 0.0f;
      }
      // K's eight bf16 are one 16-byte store (rows of D + 8 bf16 keep
      // every d0 aligned); V's go down a column of the transpose.
      uint4 packed;
      packed.x = packBf16x2(kv[0], kv[1]);
      packed.y = packBf16x2(kv[2], kv[3]);
      packed.z = packBf16x2(kv[4], kv[5]);
      packed.w = packBf16x2(kv[6], kv[7]);
      *reinterpret_cast<uint4 *>(ks + j * KS + d0) = packed;
      for (int c = 0; c < 8; ++c)
        vt[(d0 + c) * VS + j] = floatToBf16Bits(vv[c]);
    }
    __syncthreads();

    // S = q K^T: tile nt holds keys 8 nt .. 8 nt + 7.
    float s[STILES][4];
#pragma unroll
    for (int nt = 0; nt < STILES; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e)
        s[nt][e] = 0.0f;
      const unsigned short *p = ks + (nt * 8 + g8) * KS + 2 * t4;
#pragma unroll
      for (int kk = 0; kk < KSTEPS; ++kk) {
        const unsigned b[2] = {word(p + kk * 16), word(p + kk * 16 + 8)};
        mmaBf16(s[nt], qf[kk], b);
      }
    }
    // Scale, soft-cap and mask; then the online softmax per row.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float m = rowMax[h];
#pragma unroll
      for (int nt = 0; nt < STILES; ++nt)
#pragma unroll
        for (int x = 0; x < 2; ++x) {
          const int j = nt * 8 + 2 * t4 + x, key = k0 + j;
          float v = -infinity();
          if (rowLive[h] && j < nk && span.sees(key, rowPos[h])) {
            v = s[nt][2 * h + x] * a.scale;
            if (a.softCap > 0.0f)
              v = tanhf(v / a.softCap) * a.softCap;
          }
          s[nt][2 * h + x] = v;
          m = fmaxf(m, v);
        }
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
      // Nothing visible yet (or a padding row): probabilities 0, and the
      // output (still 0) keeps its scale.
      const bool none = m == -infinity();
      const float alpha = none ? 1.0f : softmaxExp(rowMax[h] - m);
      float l = 0.0f;
#pragma unroll
      for (int nt = 0; nt < STILES; ++nt)
#pragma unroll
        for (int x = 0; x < 2; ++x) {
          float p = none ? 0.0f : softmaxExp(s[nt][2 * h + x] - m);
          // As the product will read it.
          p = __uint_as_float(unsigned(floatToBf16Bits(p)) << 16);
          s[nt][2 * h + x] = p;
          l += p;
        }
      rowSum[h] = rowSum[h] * alpha + l;
      rowMax[h] = m;
#pragma unroll
      for (int dt = 0; dt < DTILES; ++dt) {
        o[dt][2 * h] *= alpha;
        o[dt][2 * h + 1] *= alpha;
      }
    }
    // O += P V: score tiles 2 kt and 2 kt + 1 are the A fragment of keys
    // 16 kt .. 16 kt + 15.
#pragma unroll
    for (int kt = 0; kt < N / 16; ++kt) {
      const unsigned pa[4] = {packBf16x2(s[2 * kt][0], s[2 * kt][1]),
                              packBf16x2(s[2 * kt][2], s[2 * kt][3]),
                              packBf16x2(s[2 * kt + 1][0], s[2 * kt + 1][1]),
                              packBf16x2(s[2 * kt + 1][2], s[2 * kt + 1][3])};
#pragma unroll
      for (int dt = 0; dt < DTILES; ++dt) {
        const unsigned short *p = vt + (dt * 8 + g8) * VS + kt * 16 + 2 * t4;
        const unsigned b[2] = {word(p), word(p + 8)};
        mmaBf16(o[dt], pa, b);
      }
    }
    __syncthreads(); // the next tile overwrites slots, K and V
  }

#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float l = rowSum[h];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int r = row0 + 8 * h, i = r / G, g = r % G;
    if (!rowLive[h])
      continue;
    float *out = a.out + ((long long)(t0 + i) * numHeads + kvHead * G + g) * D;
#pragma unroll
    for (int dt = 0; dt < DTILES; ++dt) {
      out[dt * 8 + 2 * t4] = o[dt][2 * h] / l;
      out[dt * 8 + 2 * t4 + 1] = o[dt][2 * h + 1] / l;
    }
  }
}

} // namespace folio_cuda

#endif // FOLIO_CUDA_PAGED_PREFILL_MMA
