// Row gathers: the embedding lookup (rows of a [vocab, dim] table in f32,
// bf16 or f16, converted to f32 and scaled) and gather_rows (f32 rows by
// index, the logits rows of the serving contract). One block per output
// row. An index outside [0, rows) writes nothing for its row and records
// the first such row + 1 in *error (0 when all are valid), which the
// runtime checks after the launch: the CPU kernels refuse the same inputs.
#ifndef FOLIO_CUDA_GATHER
#define FOLIO_CUDA_GATHER

namespace folio_cuda {

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
    float v;
    if constexpr (C::kTable == CacheType::F32) {
      v = static_cast<const float *>(a.table)[id * DIM + d];
    } else if constexpr (C::kTable == CacheType::BF16) {
      unsigned bits = static_cast<const unsigned short *>(a.table)[id * DIM + d];
      v = __uint_as_float(bits << 16);
    } else {
      v = f16BitsToFloat(static_cast<const unsigned short *>(a.table)[id * DIM + d]);
    }
    out[d] = C::kEmbedding ? v * a.scale : v;
  }
}

} // namespace folio_cuda

#endif // FOLIO_CUDA_GATHER
