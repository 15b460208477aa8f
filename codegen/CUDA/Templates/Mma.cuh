// Warp-wide bf16 matrix products with f32 accumulation: mma.sync.m16n8k16
// on tensor cores (sm_80 and later), and a portable twin with the same
// fragments that gathers them by warp shuffles and sums on CUDA cores (the
// host emulation, FOLIO_KERNEL_PORTABLE). Every lane of the warp must call
// it, in a one-dimensional block. Fragments, as PTX's ISA lays them out
// ("Matrix Fragments for mma.m16n8k16 with floating point type"), with
// g = lane / 4 and t = lane % 4; a register holds a pair of bf16, the
// lower index in its low half:
//   A, 16 x 16 row-major:  a[0] = A[g][2t, 2t+1]    a[1] = A[g+8][2t, 2t+1]
//                          a[2] = A[g][2t+8, 2t+9]  a[3] = A[g+8][2t+8, 2t+9]
//   B, 16 x 8 (k x n):     b[0] = B[2t, 2t+1][g]    b[1] = B[2t+8, 2t+9][g]
//   C, 16 x 8 in f32:      c[0], c[1] = C[g][2t, 2t+1]
//                          c[2], c[3] = C[g+8][2t, 2t+1]
// and c += A B.
#ifndef FOLIO_CUDA_MMA
#define FOLIO_CUDA_MMA

namespace folio_cuda {

/// Two floats as a register of bf16 (rounded to nearest even), `lo` in
/// the low half.
__device__ __forceinline__ unsigned packBf16x2(float lo, float hi) {
  return unsigned(floatToBf16Bits(lo)) | (unsigned(floatToBf16Bits(hi)) << 16);
}

__device__ __forceinline__ float bf16x2Lo(unsigned p) {
  return __uint_as_float(p << 16);
}

__device__ __forceinline__ float bf16x2Hi(unsigned p) {
  return __uint_as_float(p & 0xffff0000u);
}

/// c += A B for one warp's fragments (see the layouts above).
__device__ __forceinline__ void mmaBf16(float c[4], const unsigned a[4],
                                        const unsigned b[2]) {
#ifdef FOLIO_DEVICE_FAST_PATH
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
                 "r"(b[1]));
#else
  const int lane = int(threadIdx.x) & 31, g = lane >> 2, t = lane & 3;
  // Rows g and g + 8 of A are held by lanes 4g .. 4g + 3; columns 2t and
  // 2t + 1 of B by lanes 8t .. 8t + 3 and 8t + 4 .. 8t + 7. One 64-bit
  // shuffle brings a lane's two registers of a row (or of a column).
  const unsigned long long rowLo =
      a[0] | (static_cast<unsigned long long>(a[2]) << 32);
  const unsigned long long rowHi =
      a[1] | (static_cast<unsigned long long>(a[3]) << 32);
  const unsigned long long col =
      b[0] | (static_cast<unsigned long long>(b[1]) << 32);
  float ar[2][16], bc[2][16];
  for (int s = 0; s < 4; ++s) {
    unsigned long long v[4] = {__shfl_sync(0xffffffffu, rowLo, 4 * g + s),
                               __shfl_sync(0xffffffffu, rowHi, 4 * g + s),
                               __shfl_sync(0xffffffffu, col, 8 * t + s),
                               __shfl_sync(0xffffffffu, col, 8 * t + 4 + s)};
    for (int i = 0; i < 4; ++i) {
      // Lane 4x + s holds k = 2s, 2s + 1 in its low word and 2s + 8,
      // 2s + 9 in its high word.
      unsigned lo = unsigned(v[i]), hi = unsigned(v[i] >> 32);
      float *dst = i < 2 ? ar[i] : bc[i - 2];
      dst[2 * s] = bf16x2Lo(lo);
      dst[2 * s + 1] = bf16x2Hi(lo);
      dst[2 * s + 8] = bf16x2Lo(hi);
      dst[2 * s + 9] = bf16x2Hi(hi);
    }
  }
  for (int k = 0; k < 16; ++k) {
    c[0] += ar[0][k] * bc[0][k];
    c[1] += ar[0][k] * bc[1][k];
    c[2] += ar[1][k] * bc[0][k];
    c[3] += ar[1][k] * bc[1][k];
  }
#endif
}

} // namespace folio_cuda

#endif // FOLIO_CUDA_MMA
