// Row gathers: the embedding lookup (rows of a [vocab, dim] table in f32,
// bf16 or f16, or of a tied lm_head stored int8, fp8_e4m3 or int4,
// converted to f32 and scaled) and gather_rows (f32 rows by
// index, the logits rows of the serving contract). One block per output
// row. An index outside [0, rows) writes nothing for its row and records
// the first such row + 1 in *error (0 when all are valid), which the
// runtime checks after the launch: the CPU kernels refuse the same inputs.
#ifndef FOLIO_CUDA_GATHER
#define FOLIO_CUDA_GATHER

namespace folio_cuda {

/// Element d of table row `id` as f32. A packed table is a tied lm_head's
/// stored weight (codegen/CPU/WeightPack.h): int8 codes times the row's
/// scale (outlier columns are 0 codes, patched by the caller), fp8_e4m3
/// widened exactly through f16 times the row's scale, int4 nibbles in
/// 64-byte blocks of 128 as min + q * scale of their group; each as
/// weightViewAt reads it, so the lookup matches the CPU's.
template <class C>
__device__ __forceinline__ float tableElement(const GatherArgs &a, long long id,
                                              int d) {
  constexpr int DIM = C::kDim;
  if constexpr (C::kTable == CacheType::F32) {
    return static_cast<const float *>(a.table)[id * DIM + d];
  } else if constexpr (C::kTable == CacheType::BF16) {
    unsigned bits = static_cast<const unsigned short *>(a.table)[id * DIM + d];
    return __uint_as_float(bits << 16);
  } else if constexpr (C::kTable == CacheType::F16) {
    return f16BitsToFloat(
        static_cast<const unsigned short *>(a.table)[id * DIM + d]);
  } else if constexpr (C::kTable == CacheType::I8) {
    return float(static_cast<const signed char *>(a.table)[id * DIM + d]) *
           a.scales[id];
  } else if constexpr (C::kTable == CacheType::E4M3) {
    unsigned char c = static_cast<const unsigned char *>(a.table)[id * DIM + d];
    return __half2float(__half(__nv_cvt_fp8_to_halfraw(c, __NV_E4M3))) *
           a.scales[id];
  } else {
    constexpr int kRowBytes = (DIM + 127) / 128 * 64;
    constexpr int kGroups = (DIM + C::kGroup - 1) / C::kGroup;
    const unsigned char *row =
        static_cast<const unsigned char *>(a.table) + id * kRowBytes;
    const int e = d % 128, j = e / 16, l = e % 16;
    const unsigned q =
        (row[d / 128 * 64 + 4 * l + j / 2] >> (4 * (j % 2))) & 0xfu;
    const unsigned short *p = a.groupParams + (id * kGroups + d / C::kGroup) * 2;
    // Rounded as two operations, as the CPU's lookup: no FMA contraction.
    return __fadd_rn(f16BitsToFloat(p[1]),
                     __fmul_rn(float(q), f16BitsToFloat(p[0])));
  }
}

template <class C>
__device__ __forceinline__ void gatherRows(const GatherArgs &a) {
  constexpr int DIM = C::kDim, NT = C::kThreads;
  const long long row = blockIdx.x;
  const long long id = C::kEmbedding ? a.ids[row] : (long long)a.indices[row];
  if (id < 0 || id >= a.tableRows) {
    if (threadIdx.x == 0)
      atomicCAS(a.error, 0, int(row) + 1);
    return;
  }
  float *out = a.out + row * DIM;
  for (int d = int(threadIdx.x); d < DIM; d += NT) {
    const float v = tableElement<C>(a, id, d);
    out[d] = C::kEmbedding ? v * a.scale : v;
  }
  if constexpr (C::kTable == CacheType::I8) {
    // The outlier columns' weights are the bf16 side rows; the whole block
    // took the same branch above (one id per block), so all reach this
    // barrier.
    __syncthreads();
    for (int j = int(threadIdx.x); j < a.numOutliers; j += NT) {
      unsigned bits = a.outliers[id * a.numOutliers + j];
      out[a.outlierCols[j]] = __uint_as_float(bits << 16) * a.scale;
    }
  }
}

} // namespace folio_cuda

#endif // FOLIO_CUDA_GATHER
