// Folio CUDA kernel prelude: what every generated kernel shares. Compiles
// with NVRTC / nvcc, and as host C++ after codegen/CUDA/Emulation/Emulation.h.
// Arch-specific fast paths sit under __CUDA_ARCH__ with a portable twin;
// FOLIO_KERNEL_PORTABLE makes the device build use the twins too.
#ifndef FOLIO_CUDA_PRELUDE
#define FOLIO_CUDA_PRELUDE

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#if defined(__CUDA_ARCH__) && !defined(FOLIO_KERNEL_PORTABLE)
#define FOLIO_DEVICE_FAST_PATH 1
#endif

// Dynamic shared memory: `extern __shared__` on the device, the block's
// buffer of the emulation on the host.
#if defined(__CUDACC__)
#define FOLIO_DYNAMIC_SHARED(T, name)                                          \
  extern __shared__ __align__(16) unsigned char folio_dynamic_smem[];          \
  T *name = reinterpret_cast<T *>(folio_dynamic_smem)
#else
#define FOLIO_DYNAMIC_SHARED(T, name)                                          \
  T *name = static_cast<T *>(::folio::cuda_emu::dynamicShared())
#endif

namespace folio_cuda {

/// Cache element types (codegen/CPU/KVQuant.h defines the row formats).
enum class CacheType { F32, BF16, F16, E4M3, E5M2, I8, I4 };

__device__ __forceinline__ float infinity() { return __int_as_float(0x7f800000); }

/// exp for the softmax: ex2.approx on the device (within 2 ulp), libm's
/// expf in the portable twin.
__device__ __forceinline__ float softmaxExp(float x) {
#ifdef FOLIO_DEVICE_FAST_PATH
  return __expf(x);
#else
  return expf(x);
#endif
}

__device__ __forceinline__ float warpSum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warpMax(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float warpMin(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = fminf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float f16BitsToFloat(unsigned short h) {
  return __half2float(__ushort_as_half(h));
}

__device__ __forceinline__ unsigned short floatToF16Bits(float f) {
  return __half_as_ushort(__float2half_rn(f));
}

/// f to bf16 bits, rounded to nearest even, NaNs kept quiet (never inf):
/// codegen/CPU's floatToBf16, bit for bit.
__device__ __forceinline__ unsigned short floatToBf16Bits(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/// Element d of a cache row: `row` is the head's row in a data pool,
/// `params` its {scale, min} f16 pairs (int8 / int4), `scale` the head's
/// static scale (fp8). Exactly KVQuant.h's dequantizeKvRow.
template <CacheType T, int Group>
__device__ __forceinline__ float loadCache(const unsigned char *row,
                                           const unsigned short *params,
                                           int d, float scale) {
  if constexpr (T == CacheType::F32) {
    return reinterpret_cast<const float *>(row)[d];
  } else if constexpr (T == CacheType::BF16) {
    unsigned bits = reinterpret_cast<const unsigned short *>(row)[d];
    return __uint_as_float(bits << 16);
  } else if constexpr (T == CacheType::F16) {
    return f16BitsToFloat(reinterpret_cast<const unsigned short *>(row)[d]);
  } else if constexpr (T == CacheType::E4M3 || T == CacheType::E5M2) {
    // The conversion intrinsic is one cvt on sm_89+ and compiles on the
    // host with the same rounding (none: fp8 -> f16 is exact).
    __half_raw h = __nv_cvt_fp8_to_halfraw(
        row[d], T == CacheType::E4M3 ? __NV_E4M3 : __NV_E5M2);
    return __half2float(__half(h)) * scale;
  } else {
    int g = d / Group;
    float s = f16BitsToFloat(params[2 * g]);
    float mn = f16BitsToFloat(params[2 * g + 1]);
    unsigned q = T == CacheType::I8 ? row[d] : (row[d / 2] >> (4 * (d % 2))) & 0xfu;
    // q * s is exact (<= 8 + 11 significant bits): one rounding, as an FMA.
    return mn + float(q) * s;
  }
}

/// Elements d0 .. d0 + 7 of a cache row, as loadCache gives each (bit for
/// bit), with one vector load of their bytes: d0 a multiple of 8 and the
/// row 16-byte aligned for 16-bit caches (8 bytes for 8-bit ones, 4 for
/// int4; every row of a head_dim that is a multiple of 16 is).
template <CacheType T, int Group>
__device__ __forceinline__ void loadCache8(const unsigned char *row,
                                           const unsigned short *params,
                                           int d0, float scale, float *out) {
  if constexpr (T == CacheType::F32) {
    const uint4 *p = reinterpret_cast<const uint4 *>(row + 4 * d0);
    const uint4 lo = p[0], hi = p[1];
    const unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    for (int c = 0; c < 8; ++c)
      out[c] = __uint_as_float(w[c]);
  } else if constexpr (T == CacheType::BF16 || T == CacheType::F16) {
    const uint4 v = *reinterpret_cast<const uint4 *>(row + 2 * d0);
    const unsigned w[4] = {v.x, v.y, v.z, v.w};
    for (int c = 0; c < 8; ++c) {
      const unsigned h = (w[c / 2] >> (16 * (c % 2))) & 0xffffu;
      out[c] = T == CacheType::BF16 ? __uint_as_float(h << 16)
                                    : f16BitsToFloat((unsigned short)h);
    }
  } else if constexpr (T == CacheType::E4M3 || T == CacheType::E5M2 ||
                       T == CacheType::I8) {
    const uint2 v = *reinterpret_cast<const uint2 *>(row + d0);
    for (int c = 0; c < 8; ++c) {
      const unsigned char b =
          (unsigned char)(((c < 4 ? v.x : v.y) >> (8 * (c % 4))) & 0xffu);
      if constexpr (T == CacheType::I8) {
        const int g = (d0 + c) / Group;
        out[c] = f16BitsToFloat(params[2 * g + 1]) +
                 float(b) * f16BitsToFloat(params[2 * g]);
      } else {
        __half_raw h = __nv_cvt_fp8_to_halfraw(
            b, T == CacheType::E4M3 ? __NV_E4M3 : __NV_E5M2);
        out[c] = __half2float(__half(h)) * scale;
      }
    }
  } else {
    const unsigned v = *reinterpret_cast<const unsigned *>(row + d0 / 2);
    for (int c = 0; c < 8; ++c) {
      const int g = (d0 + c) / Group;
      out[c] = f16BitsToFloat(params[2 * g + 1]) +
               float((v >> (4 * c)) & 0xfu) * f16BitsToFloat(params[2 * g]);
    }
  }
}

/// fp8 of a value already divided by the static scale, as KVQuant.h's
/// floatToFp8E4M3 / E5M2: nearest even, finite values saturate, NaN stays
/// NaN, inf is NaN in e4m3 (it has none) and inf in e5m2.
template <CacheType T>
__device__ __forceinline__ unsigned char floatToFp8(float y) {
  unsigned sign = (__float_as_uint(y) >> 24) & 0x80u;
  if (isnan(y))
    return (unsigned char)(sign | (T == CacheType::E4M3 ? 0x7fu : 0x7eu));
  if (isinf(y))
    return (unsigned char)(sign | (T == CacheType::E4M3 ? 0x7fu : 0x7cu));
  return (unsigned char)__nv_cvt_float_to_fp8(
      y, __NV_SATFINITE, T == CacheType::E4M3 ? __NV_E4M3 : __NV_E5M2);
}

/// The largest finite f16 <= x (finite), -65504 at the least.
__device__ __forceinline__ unsigned short f16RoundDown(float x) {
  unsigned short h = floatToF16Bits(x);
  if (f16BitsToFloat(h) > x)
    h = h == 0x0000 ? 0x8001 : (h & 0x8000) ? (unsigned short)(h + 1)
                                            : (unsigned short)(h - 1);
  if ((h & 0x7fff) >= 0x7c00)
    h = (h & 0x8000) ? 0xfbff : 0x7bff;
  return h;
}

/// The smallest f16 >= x (x >= 0, finite), 65504 at the most.
__device__ __forceinline__ unsigned short f16RoundUp(float x) {
  unsigned short h = floatToF16Bits(x);
  if (f16BitsToFloat(h) < x)
    h = (unsigned short)(h + 1);
  return h >= 0x7c00 ? 0x7bff : h;
}

/// The f16 {scale, min} of a group in [lo, hi] with codes up to qmax:
/// KVQuant.cpp's detail::kvGroupParams, bit for bit.
__device__ __forceinline__ void groupParams(float lo, float hi, unsigned qmax,
                                            unsigned short &scaleH,
                                            unsigned short &minH) {
  minH = lo == 0.0f ? 0 : f16RoundDown(lo);
  float mn = f16BitsToFloat(minH);
  if (!(hi > mn)) {
    scaleH = 0;
    return;
  }
  double d = (double(hi) - double(mn)) / double(qmax);
  float f = float(d);
  if (double(f) < d)
    f = nextafterf(f, infinity());
  scaleH = f16RoundUp(f);
}

/// The code of x in a group with stored params.
__device__ __forceinline__ unsigned groupCode(float x, float scale, float mn,
                                              unsigned qmax) {
  if (scale == 0.0f)
    return 0u;
  float t = rintf((x - mn) / scale);
  t = t > 0.0f ? t : 0.0f;
  t = t < float(qmax) ? t : float(qmax);
  return unsigned(t);
}

} // namespace folio_cuda

#endif // FOLIO_CUDA_PRELUDE
