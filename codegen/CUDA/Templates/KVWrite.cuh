// kv_write: stores this step's K and V rows into the paged cache, quantized
// as codegen/CPU/KVQuant.h defines each cache type. Grid (numTokens,
// numKvHeads), one warp per block: the warp owns one head's row of one
// token, so a group's min / max is a warp reduction. Slots are trusted
// (the runtime validates the slot mapping before the launch); slot -1 skips
// the token.
#ifndef FOLIO_CUDA_KV_WRITE
#define FOLIO_CUDA_KV_WRITE

namespace folio_cuda {

/// One head's row x[0, HeadDim) into `row` (and `params`); every lane of
/// the warp calls this.
template <CacheType T, int HeadDim, int Group>
__device__ __forceinline__ void storeRow(const float *x, unsigned char *row,
                                         unsigned short *params, float scale) {
  const int lane = int(threadIdx.x);
  if constexpr (T == CacheType::F32) {
    for (int d = lane; d < HeadDim; d += 32)
      reinterpret_cast<float *>(row)[d] = x[d];
  } else if constexpr (T == CacheType::BF16) {
    for (int d = lane; d < HeadDim; d += 32)
      reinterpret_cast<unsigned short *>(row)[d] =
          __bfloat16_as_ushort(__float2bfloat16_rn(x[d]));
  } else if constexpr (T == CacheType::F16) {
    for (int d = lane; d < HeadDim; d += 32)
      reinterpret_cast<unsigned short *>(row)[d] = floatToF16Bits(x[d]);
  } else if constexpr (T == CacheType::E4M3 || T == CacheType::E5M2) {
    for (int d = lane; d < HeadDim; d += 32)
      row[d] = floatToFp8<T>(x[d] / scale);
  } else {
    constexpr unsigned qmax = T == CacheType::I8 ? 255u : 15u;
    constexpr int perByte = T == CacheType::I8 ? 1 : 2;
    for (int g0 = 0; g0 < HeadDim; g0 += Group) {
      float lo = infinity(), hi = -infinity();
      bool finite = true;
      for (int i = lane; i < Group; i += 32) {
        float v = x[g0 + i];
        finite = finite && isfinite(v);
        lo = fminf(lo, v);
        hi = fmaxf(hi, v);
      }
      finite = __all_sync(0xffffffffu, finite);
      lo = warpMin(lo);
      hi = warpMax(hi);
      unsigned short scaleH = 0x7e00, minH = 0x7e00; // NaN: see KVQuant.h
      if (finite)
        groupParams(lo, hi, qmax, scaleH, minH);
      if (lane == 0) {
        params[2 * (g0 / Group)] = scaleH;
        params[2 * (g0 / Group) + 1] = minH;
      }
      float s = f16BitsToFloat(scaleH), mn = f16BitsToFloat(minH);
      for (int b = lane; b < Group / perByte; b += 32) {
        unsigned byte = 0;
        for (int j = 0; j < perByte; ++j) {
          unsigned q = finite ? groupCode(x[g0 + b * perByte + j], s, mn, qmax)
                              : 0u;
          byte |= q << (4 * j);
        }
        row[g0 / perByte + b] = (unsigned char)byte;
      }
    }
  }
}

template <class C> __device__ __forceinline__ void kvWrite(const KVWriteArgs &a) {
  const long long token = blockIdx.x, head = blockIdx.y;
  const long long slot = a.slotMapping[token];
  if (slot < 0)
    return;
  constexpr int rowBytes = C::kHeadDim * C::kBits / 8;
  constexpr int paramsPerRow = C::kGroup > 0 ? 2 * (C::kHeadDim / C::kGroup) : 0;
  const long long rowIndex = slot * C::kNumKvHeads + head;
  float kScale = 1.0f, vScale = 1.0f;
  if constexpr (C::kType == CacheType::E4M3 || C::kType == CacheType::E5M2) {
    kScale = a.kScale[head];
    vScale = a.vScale[head];
  }
  storeRow<C::kType, C::kHeadDim, C::kGroup>(
      a.k + token * a.kStride + head * C::kHeadDim,
      a.kCache + rowIndex * rowBytes,
      paramsPerRow ? a.kParams + rowIndex * paramsPerRow : nullptr, kScale);
  storeRow<C::kType, C::kHeadDim, C::kGroup>(
      a.v + token * a.vStride + head * C::kHeadDim,
      a.vCache + rowIndex * rowBytes,
      paramsPerRow ? a.vParams + rowIndex * paramsPerRow : nullptr, vScale);
}

} // namespace folio_cuda

#endif // FOLIO_CUDA_KV_WRITE
