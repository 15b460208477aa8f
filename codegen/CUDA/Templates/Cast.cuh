// Element casts, the CPU executor's `cast` step: within integers (i32 and
// i64; to i32 keeps the low 32 bits) or within floats (f32, f16, bf16; to
// bf16 rounds to nearest even and keeps NaNs quiet as codegen/CPU's
// floatToBf16 does, bit for bit; to f16 rounds to nearest even). One thread
// per element.
#ifndef FOLIO_CUDA_CAST
#define FOLIO_CUDA_CAST

namespace folio_cuda {

enum class CastType { F32, F16, BF16, I32, I64 };

template <CastType T>
__device__ __forceinline__ float castLoadFloat(const void *p, long long i) {
  if constexpr (T == CastType::F32) {
    return static_cast<const float *>(p)[i];
  } else if constexpr (T == CastType::BF16) {
    unsigned bits = static_cast<const unsigned short *>(p)[i];
    return __uint_as_float(bits << 16);
  } else {
    return f16BitsToFloat(static_cast<const unsigned short *>(p)[i]);
  }
}

template <CastType T>
__device__ __forceinline__ void castStoreFloat(void *p, long long i, float v) {
  if constexpr (T == CastType::F32) {
    static_cast<float *>(p)[i] = v;
  } else if constexpr (T == CastType::BF16) {
    static_cast<unsigned short *>(p)[i] = floatToBf16Bits(v);
  } else {
    static_cast<unsigned short *>(p)[i] = floatToF16Bits(v);
  }
}

template <class C>
__device__ __forceinline__ void castElements(const CastArgs &a) {
  const long long i = (long long)blockIdx.x * C::kThreads + threadIdx.x;
  if (i >= a.n)
    return;
  constexpr bool kIntIn =
      C::kFrom == CastType::I32 || C::kFrom == CastType::I64;
  if constexpr (kIntIn) {
    long long v = C::kFrom == CastType::I64
                      ? static_cast<const long long *>(a.in)[i]
                      : (long long)static_cast<const int *>(a.in)[i];
    if constexpr (C::kTo == CastType::I64)
      static_cast<long long *>(a.out)[i] = v;
    else
      static_cast<int *>(a.out)[i] = (int)(unsigned)(unsigned long long)v;
  } else {
    castStoreFloat<C::kTo>(a.out, i, castLoadFloat<C::kFrom>(a.in, i));
  }
}

} // namespace folio_cuda

#endif // FOLIO_CUDA_CAST
