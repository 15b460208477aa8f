// Weight-streaming linear: y[m, n] = x[m, :] . W[n, :] + bias[n] over the
// weights folioc stores in a plan (codegen/CPU/WeightPack.h, bit for bit
// the same bytes): f32, bf16, f16, int8 (a scale per row, outlier columns
// in bf16), fp8_e4m3 (a scale per row) and int4 (64-byte blocks of 128
// nibbles, an f16 (scale, min) pair per group along K).
//
// One warp per kOutputsPerWarp output rows n. Its lanes stream the rows in
// 16-byte chunks (coalesced: a warp reads 512 contiguous bytes of each row
// per step), widen each chunk in registers once and multiply it into up to
// kRowsPerPass token rows, so the weights are read once per pass over the
// rows: what decode and speculative verification (a few rows per sequence)
// are bound by. Each x element a lane reads serves all of the warp's
// output rows: on an H200, with one output row per warp, reading x (f32,
// 2 to 8 times the weights' bytes) was what bounded the 8- and 4-bit
// weights. The
// per-row scales of int8 and fp8 apply to the finished sum, int4's group
// params to each weight (min + q * scale). Lanes' partial sums meet in a
// warp reduction; lane 0 adds the outlier columns and the bias and writes.
// No shared memory and no block barrier: a warp past the last row exits.
#ifndef FOLIO_CUDA_LINEAR
#define FOLIO_CUDA_LINEAR

namespace folio_cuda {

/// Weights one lane widens per chunk: 16 bytes of the row, or one element
/// when k does not split into whole 16-byte chunks (rows would not stay
/// aligned); int4 takes 32 nibbles (words 4c..4c+3 of a 64-byte block).
template <CacheType T, int K> struct LinearChunk {
  static constexpr int kBytes = T == CacheType::F32 ? 4
                                : T == CacheType::BF16 || T == CacheType::F16
                                    ? 2
                                    : 1;
  static constexpr bool kVector = T == CacheType::I4 || K % (16 / kBytes) == 0;
  static constexpr int kElems = T == CacheType::I4 ? 32
                                : kVector          ? 16 / kBytes
                                                   : 1;
  static constexpr int kChunks =
      T == CacheType::I4 ? (K + 127) / 128 * 4 : K / kElems;
};

/// Widens 16 bytes of a float-like or 8-bit row into w[16 / bytes].
template <CacheType T>
__device__ __forceinline__ void widen16(const uint4 &v, float *w) {
  const unsigned words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    unsigned u = words[i];
    if constexpr (T == CacheType::F32) {
      w[i] = __uint_as_float(u);
    } else if constexpr (T == CacheType::BF16) {
      w[2 * i] = __uint_as_float(u << 16);
      w[2 * i + 1] = __uint_as_float(u & 0xffff0000u);
    } else if constexpr (T == CacheType::F16) {
      w[2 * i] = f16BitsToFloat((unsigned short)(u & 0xffffu));
      w[2 * i + 1] = f16BitsToFloat((unsigned short)(u >> 16));
    } else {
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        unsigned char c = (unsigned char)(u >> (8 * b));
        if constexpr (T == CacheType::I8) {
          w[4 * i + b] = float((signed char)c);
        } else {
          // fp8 -> f16 is exact; the row scale applies to the sum.
          w[4 * i + b] =
              __half2float(__half(__nv_cvt_fp8_to_halfraw(c, __NV_E4M3)));
        }
      }
    }
  }
}

/// One element of a row whose chunks are single elements.
template <CacheType T>
__device__ __forceinline__ float widen1(const void *row, long long i) {
  if constexpr (T == CacheType::F32) {
    return static_cast<const float *>(row)[i];
  } else if constexpr (T == CacheType::BF16) {
    unsigned bits = static_cast<const unsigned short *>(row)[i];
    return __uint_as_float(bits << 16);
  } else if constexpr (T == CacheType::F16) {
    return f16BitsToFloat(static_cast<const unsigned short *>(row)[i]);
  } else if constexpr (T == CacheType::I8) {
    return float(static_cast<const signed char *>(row)[i]);
  } else {
    unsigned char c = static_cast<const unsigned char *>(row)[i];
    return __half2float(__half(__nv_cvt_fp8_to_halfraw(c, __NV_E4M3)));
  }
}

template <class C>
__device__ __forceinline__ void linearRows(const LinearArgs &a) {
  constexpr CacheType T = C::kType;
  constexpr int K = C::kK, MT = C::kRowsPerPass, NT = C::kThreads;
  constexpr int NR = C::kOutputsPerWarp;
  using Chunk = LinearChunk<T, K>;
  constexpr int E = Chunk::kElems;
  const int lane = int(threadIdx.x) & 31;
  const long long n0 =
      ((long long)blockIdx.x * (NT / 32) + (threadIdx.x >> 5)) * NR;
  if (n0 >= a.n)
    return; // the whole warp: n0 is the same for its lanes
  // Outputs of this warp past the last row read row n0 again and write
  // nothing.
  long long ns[NR];
#pragma unroll
  for (int o = 0; o < NR; ++o)
    ns[o] = n0 + o < a.n ? n0 + o : n0;

  constexpr long long rowBytes =
      T == CacheType::I4 ? (K + 127) / 128 * 64 : (long long)K * Chunk::kBytes;
  const unsigned char *rows[NR];
#pragma unroll
  for (int o = 0; o < NR; ++o)
    rows[o] = static_cast<const unsigned char *>(a.w) + ns[o] * rowBytes;
  constexpr int kGroups =
      T == CacheType::I4 ? (K + C::kGroup - 1) / C::kGroup : 1;

  for (long long m0 = 0; m0 < a.m; m0 += MT) {
    const int rowsHere = a.m - m0 < MT ? int(a.m - m0) : MT;
    const float *x0 = a.x + m0 * K;
    float acc[MT][NR];
#pragma unroll
    for (int r = 0; r < MT; ++r)
#pragma unroll
      for (int o = 0; o < NR; ++o)
        acc[r][o] = 0.0f;

    for (int c = lane; c < Chunk::kChunks; c += 32) {
      if constexpr (T == CacheType::I4) {
        // Words 4q..4q+3 of block b: weight 16j + l of the block is nibble
        // j of word l, so this chunk holds weights b*128 + 16j + 4q + i.
        const int b = c / 4, q = c % 4;
        unsigned words[NR][4];
#pragma unroll
        for (int o = 0; o < NR; ++o) {
          uint4 v = __ldg(reinterpret_cast<const uint4 *>(rows[o] + c * 16));
          words[o][0] = v.x;
          words[o][1] = v.y;
          words[o][2] = v.z;
          words[o][3] = v.w;
        }
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const int e0 = b * 128 + 16 * j + 4 * q; // first of 4 weights
          if (K % 128 != 0 && e0 >= K)
            break; // the zero padding of the last block
          // 16 weights from 16j share a group (groups are multiples of 32).
          const int g = (b * 128 + 16 * j) / C::kGroup;
          float w[NR][4];
#pragma unroll
          for (int o = 0; o < NR; ++o) {
            const unsigned short *params = a.groupParams + ns[o] * kGroups * 2;
            const float s = f16BitsToFloat(params[2 * g]);
            const float mn = f16BitsToFloat(params[2 * g + 1]);
#pragma unroll
            for (int i = 0; i < 4; ++i)
              w[o][i] = mn + float((words[o][i] >> (4 * j)) & 0xfu) * s;
          }
#pragma unroll
          for (int r = 0; r < MT; ++r) {
            if (r < rowsHere) {
              const float *x = x0 + (long long)r * K + e0;
              if constexpr (K % 4 == 0) {
                float4 xv = *reinterpret_cast<const float4 *>(x);
#pragma unroll
                for (int o = 0; o < NR; ++o)
                  acc[r][o] += w[o][0] * xv.x + w[o][1] * xv.y +
                               w[o][2] * xv.z + w[o][3] * xv.w;
              } else {
#pragma unroll
                for (int i = 0; i < 4; ++i)
                  if (e0 + i < K) {
                    const float xi = x[i];
#pragma unroll
                    for (int o = 0; o < NR; ++o)
                      acc[r][o] += w[o][i] * xi;
                  }
              }
            }
          }
        }
      } else if constexpr (Chunk::kVector) {
        // Every weight chunk first (NR loads in flight), then each x row
        // read once for all of them.
        float w[NR][E];
#pragma unroll
        for (int o = 0; o < NR; ++o)
          widen16<T>(__ldg(reinterpret_cast<const uint4 *>(rows[o] + c * 16)),
                     w[o]);
#pragma unroll
        for (int r = 0; r < MT; ++r) {
          if (r < rowsHere) {
            const float4 *x =
                reinterpret_cast<const float4 *>(x0 + (long long)r * K + c * E);
            float s[NR];
#pragma unroll
            for (int o = 0; o < NR; ++o)
              s[o] = 0.0f;
#pragma unroll
            for (int i = 0; i < E / 4; ++i) {
              float4 xv = x[i];
#pragma unroll
              for (int o = 0; o < NR; ++o)
                s[o] += w[o][4 * i] * xv.x + w[o][4 * i + 1] * xv.y +
                        w[o][4 * i + 2] * xv.z + w[o][4 * i + 3] * xv.w;
            }
#pragma unroll
            for (int o = 0; o < NR; ++o)
              acc[r][o] += s[o];
          }
        }
      } else {
        float w[NR];
#pragma unroll
        for (int o = 0; o < NR; ++o)
          w[o] = widen1<T>(rows[o], c);
#pragma unroll
        for (int r = 0; r < MT; ++r)
          if (r < rowsHere) {
            const float xi = x0[(long long)r * K + c];
#pragma unroll
            for (int o = 0; o < NR; ++o)
              acc[r][o] += w[o] * xi;
          }
      }
    }

    // Outlier columns (int8): x's column times the row's bf16 weight.
    float extra[MT][NR];
#pragma unroll
    for (int r = 0; r < MT; ++r)
#pragma unroll
      for (int o = 0; o < NR; ++o)
        extra[r][o] = 0.0f;
    if constexpr (T == CacheType::I8) {
      for (int j = lane; j < a.numOutliers; j += 32) {
        const int col = a.outlierCols[j];
        float wo[NR];
#pragma unroll
        for (int o = 0; o < NR; ++o)
          wo[o] = __uint_as_float(
              unsigned(a.outliers[ns[o] * a.numOutliers + j]) << 16);
#pragma unroll
        for (int r = 0; r < MT; ++r)
          if (r < rowsHere) {
            const float xc = x0[(long long)r * K + col];
#pragma unroll
            for (int o = 0; o < NR; ++o)
              extra[r][o] += wo[o] * xc;
          }
      }
    }

#pragma unroll
    for (int o = 0; o < NR; ++o) {
      const long long n = ns[o];
      const bool mine = n0 + o < a.n;
      const float scale =
          T == CacheType::I8 || T == CacheType::E4M3 ? a.scales[n] : 1.0f;
      const float bias = a.bias ? a.bias[n] : 0.0f;
#pragma unroll
      for (int r = 0; r < MT; ++r) {
        // Every lane takes part in the shuffles; rows past the last are 0.
        float s = warpSum(acc[r][o]);
        float e = T == CacheType::I8 ? warpSum(extra[r][o]) : 0.0f;
        if (lane == 0 && r < rowsHere && mine)
          a.y[(m0 + r) * a.n + n] = s * scale + e + bias;
      }
    }
  }
}

/// LinearSpec::dequantToBf16: weight row blockIdx.x as bf16 at y (read as
/// bf16 [n, k]), each element the value codegen/CPU's weightViewAt gives
/// (int8 and fp8 codes times the row's scale, int4 min + q * scale of its
/// group as two roundings) rounded to nearest even; then the int8 outlier
/// columns' own bf16 values over their 0 codes.
template <class C>
__device__ __forceinline__ void dequantRows(const LinearArgs &a) {
  constexpr CacheType T = C::kType;
  constexpr int K = C::kK, NT = C::kThreads;
  const long long n = blockIdx.x;
  if (n >= a.n)
    return; // the whole block
  constexpr long long rowBytes = T == CacheType::I4 ? (K + 127) / 128 * 64
                                                    : (long long)K;
  const unsigned char *row = static_cast<const unsigned char *>(a.w) + n * rowBytes;
  unsigned short *out = reinterpret_cast<unsigned short *>(a.y) + n * K;
  for (int d = int(threadIdx.x); d < K; d += NT) {
    float v;
    if constexpr (T == CacheType::I4) {
      constexpr int kGroups = (K + C::kGroup - 1) / C::kGroup;
      const int e = d % 128, j = e / 16, l = e % 16;
      const unsigned q =
          (row[d / 128 * 64 + 4 * l + j / 2] >> (4 * (j % 2))) & 0xfu;
      const unsigned short *p =
          a.groupParams + (n * kGroups + d / C::kGroup) * 2;
      v = __fadd_rn(f16BitsToFloat(p[1]),
                    __fmul_rn(float(q), f16BitsToFloat(p[0])));
    } else {
      v = __fmul_rn(widen1<T>(row, d), a.scales[n]);
    }
    out[d] = floatToBf16Bits(v);
  }
  if constexpr (T == CacheType::I8) {
    __syncthreads();
    for (int j = int(threadIdx.x); j < a.numOutliers; j += NT)
      out[a.outlierCols[j]] = a.outliers[n * a.numOutliers + j];
  }
}

/// LinearSpec::quantizeXToFp8: x row blockIdx.x as e4m3 codes at y (read
/// as bytes [m, k]) and its scale at xScales: the row's largest |x| / 448
/// (e4m3's largest finite value), 1 for a row of zeros or one whose
/// largest |x| is not finite; each code floatToFp8(x / scale), nearest
/// even. A NaN or inf in x becomes a NaN code (e4m3 has no inf), so the
/// GEMM's row is NaN, non-finite as the linear kernel's would be.
template <class C>
__device__ __forceinline__ void quantizeRowsFp8(const LinearArgs &a) {
  constexpr int K = C::kK, NT = C::kThreads;
  const long long r = blockIdx.x;
  if (r >= a.m)
    return; // the whole block
  const float *x = a.x + r * K;
  const int tid = int(threadIdx.x);
  float amax = 0.0f;
  for (int d = tid; d < K; d += NT)
    amax = fmaxf(amax, fabsf(x[d]));
  __shared__ float warpMaxes[32];
  amax = warpMax(amax);
  if (tid % 32 == 0)
    warpMaxes[tid / 32] = amax;
  __syncthreads();
  if (tid < 32) {
    float v = tid < NT / 32 ? warpMaxes[tid] : 0.0f;
    v = warpMax(v);
    if (tid == 0)
      warpMaxes[0] = v;
  }
  __syncthreads();
  amax = warpMaxes[0];
  const float scale =
      amax > 0.0f && amax <= 3.402823466e38f ? amax / 448.0f : 1.0f;
  unsigned char *codes = reinterpret_cast<unsigned char *>(a.y) + r * K;
  for (int d = tid; d < K; d += NT)
    codes[d] = floatToFp8<CacheType::E4M3>(x[d] / scale);
  if (tid == 0)
    a.xScales[r] = scale;
}

} // namespace folio_cuda

#endif // FOLIO_CUDA_LINEAR
