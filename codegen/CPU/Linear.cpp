//===- Linear.cpp - Dispatch between GEMV and oneDNN ----------------------===//

#include "codegen/CPU/CPUFeatures.h"
#include "codegen/CPU/GemmAmx.h"
#include "codegen/CPU/Gemv.h"
#include "codegen/CPU/PackedWeightImpl.h"
#include "codegen/CPU/Validate.h"

#include <algorithm>
#include <dlfcn.h>
#include <vector>

namespace folio::cpu {

using namespace detail;

namespace {

Status checkLinear(const float *x, int64_t numTokens, const PackedWeight &w,
                   float *y) {
  if (!w.data())
    return Status::error("linear: weight is not packed");
  FOLIO_RETURN_IF_ERROR(checkNonNegative("linear", "numTokens", numTokens));
  FOLIO_RETURN_IF_ERROR(checkPointer("linear", "x", x, numTokens));
  FOLIO_RETURN_IF_ERROR(checkPointer("linear", "y", y, numTokens));
  return Status::success();
}

/// Runs `kernel` over the output rows in guided chunks that shrink to about
/// 32 KiB of weights (`rowBytes` per row; linearGemv says why), or in one
/// call on this thread when the whole GEMV is small (kSerialMacs).
template <typename Args>
Status forOutputRows(const Args &a,
                     void (*kernel)(const Args &, int64_t, int64_t),
                     int64_t rowBytes, ThreadPool &pool) {
  if (a.m * a.n * a.k < kSerialMacs) {
    kernel(a, 0, a.n);
    return Status::success();
  }
  int64_t minRows = ((int64_t(32) << 10) / rowBytes + 3) / 4 * 4;
  pool.parallelForGuided(a.n, minRows > 4 ? minRows : 4, /*align=*/4,
                         [&](int64_t b, int64_t e) { kernel(a, b, e); });
  return Status::success();
}

using Bf16Gemm = void (*)(const AmxGemmArgs &, int64_t, int64_t);

/// The bf16 GEMM a prefill of `numTokens` rows with `codes` weights runs:
/// gemmAmx on AMX for every code type, gemmBf16Dot with AVX512-BF16 dot
/// products for the 8-bit ones (int4's and f16's hi + lo products would
/// cost more than the f32 panel); null for the f32 panel.
Bf16Gemm bf16GemmFor(int64_t numTokens, AmxCodes codes) {
  if (numTokens <= kConvertTileRows)
    return nullptr;
  if (amxActive())
    return gemmAmx;
  return !amxSplitCodes(codes) && bf16DotActive() ? gemmBf16Dot : nullptr;
}

/// The bf16 GEMM `gemm` (bf16GemmFor): x converted to bf16 once (per
/// calling thread, as below; for int4 with its remainder, GemmAmx.h), then
/// the GEMM over whole panels of 32 outputs.
Status linearBf16Gemm(Bf16Gemm gemm, const float *x, int64_t numTokens,
                      const PackedWeight &w, AmxCodes codes, const float *xOut,
                      float *y, ThreadPool &pool) {
  const WeightView &v = w.view();
  thread_local std::vector<uint16_t> xb, xbLo;
  const size_t elems = size_t(amxPaddedRows(numTokens) * amxPaddedK(v.k));
  xb.resize(elems);
  const bool splitX = amxSplitCodes(codes);
  xbLo.resize(splitX ? elems : 0);
  packXForAmx(x, numTokens, v.k, xb.data(), splitX ? xbLo.data() : nullptr);
  AmxGemmArgs a;
  a.xb = xb.data();
  a.xbLo = splitX ? xbLo.data() : nullptr;
  a.m = numTokens;
  a.k = v.k;
  a.codes = codes;
  a.w = v.data;
  a.scales = v.scales;
  a.numOutliers = v.numOutliers;
  a.outliers = v.outliers;
  a.xOut = xOut;
  a.groupSize = v.groupSize;
  a.params = v.groupParams;
  a.bias = w.bias();
  a.y = y;
  a.n = v.n;
  pool.parallelForGuided(a.n, 32, /*align=*/32,
                         [&](int64_t b, int64_t e) { gemm(a, b, e); });
  return Status::success();
}

/// The int8 path of linearGemv: x's outlier columns gathered once, then the
/// bf16 GEMM, or x's codes for the GEMV once and the int8 tiles over guided
/// chunks of N as for the float weights.
Status linearGemvInt8(const float *x, int64_t numTokens, const PackedWeight &w,
                      float *y, ThreadPool &pool) {
  const WeightView &v = w.view();
  GemvInt8Args a = int8WeightArgs(v, numTokens, w.bias(), y);
  // Per calling thread, as the pair-split x below.
  thread_local std::vector<float> xOut;
  if (v.numOutliers) {
    xOut.resize(size_t(numTokens * v.numOutliers));
    for (int64_t m = 0; m < numTokens; ++m)
      for (int64_t j = 0; j < v.numOutliers; ++j)
        xOut[size_t(m * v.numOutliers + j)] = x[m * v.k + v.outlierCols[j]];
    a.xOut = xOut.data();
  }
  a.kPadded = int8XPaddedLength(v.k);
  // From a verify step's few rows up to a prefill's, on AMX-INT8: the
  // GEMV's bits at every M (Gemv.h, kInt8AmxMinRows).
  const bool amxRows = numTokens >= kInt8AmxMinRows && a.kPadded > 0 &&
                       a.kPadded <= kInt8AmxMaxCodes && amxInt8Active();
  if (!amxRows)
    if (Bf16Gemm gemm = bf16GemmFor(numTokens, AmxCodes::Int8))
      return linearBf16Gemm(gemm, x, numTokens, w, AmxCodes::Int8, a.xOut, y,
                            pool);
  const Isa isa = activeIsa();
  // x in 16-bit fixed point (Gemv.h), per calling thread as xOut. The
  // outlier columns' codes are 0 in w, so they are zeroed in a copy of x
  // first: they must not set a row's step.
  thread_local std::vector<float> xNoOut;
  thread_local std::vector<int16_t> xq;
  thread_local std::vector<float> steps;
  const float *src = x;
  if (v.numOutliers) {
    xNoOut.assign(x, x + numTokens * v.k);
    for (int64_t m = 0; m < numTokens; ++m)
      for (int64_t j = 0; j < v.numOutliers; ++j)
        xNoOut[size_t(m * v.k + v.outlierCols[j])] = 0.0f;
    src = xNoOut.data();
  }
  // Aligned as the pair-split x (kPadded is a multiple of 64 codes).
  int16_t *codes = alignedScratch(xq, size_t(numTokens * a.kPadded));
  steps.resize(size_t(numTokens));
  (isa == Isa::Avx512 ? quantizeXInt16Avx512
   : isa == Isa::Avx2 ? quantizeXInt16Avx2
                      : quantizeXInt16Scalar)(src, numTokens, v.k, codes,
                                              a.kPadded, steps.data());
  a.xq = codes;
  a.xSteps = steps.data();
  if (amxRows) {
    thread_local std::vector<uint8_t> tiles;
    uint8_t *xAmx =
        alignedScratch(tiles, size_t(int8AmxXBytes(numTokens, a.kPadded)));
    packXInt8ForAmx(codes, numTokens, a.kPadded, xAmx);
    a.xAmx = xAmx;
    // A small weight on the calling thread alone: splitting it cost more
    // than it saved (kInt8AmxSerialBytes). Else whole groups of 32 weight
    // rows (two A tiles) per chunk.
    if (a.n * a.k < kInt8AmxSerialBytes)
      gemvInt8Amx(a, 0, a.n);
    else
      pool.parallelForGuided(a.n, 32, /*align=*/32, [&](int64_t b, int64_t e) {
        gemvInt8Amx(a, b, e);
      });
    return Status::success();
  }
  const bool avx512 = isa == Isa::Avx512;
  if (isa != Isa::Scalar &&
      numTokens > (avx512 ? kInt8GemvMaxRowsAvx512 : kInt8GemvMaxRowsAvx2)) {
    // Whole panels of weight rows (32 on AVX-512, 16 on AVX2) per chunk.
    const int64_t panel = avx512 ? 32 : 16;
    pool.parallelForGuided(a.n, panel, panel, [&](int64_t b, int64_t e) {
      (avx512 ? gemmInt8X16Avx512 : gemmInt8X16Avx2)(a, b, e);
    });
    return Status::success();
  }
  void (*kernel)(const GemvInt8Args &, int64_t, int64_t) =
      isa == Isa::Avx512 ? gemvInt8Avx512
      : isa == Isa::Avx2 ? gemvInt8Avx2
                         : gemvInt8Scalar;
  return forOutputRows(a, kernel, a.k, pool);
}

Status linearGemvFp8(const float *x, int64_t numTokens, const PackedWeight &w,
                     float *y, ThreadPool &pool) {
  if (Bf16Gemm gemm = bf16GemmFor(numTokens, AmxCodes::Fp8E4M3))
    return linearBf16Gemm(gemm, x, numTokens, w, AmxCodes::Fp8E4M3, nullptr, y,
                          pool);
  const WeightView &v = w.view();
  GemvFp8Args a;
  a.x = x;
  a.m = numTokens;
  a.k = v.k;
  a.w = static_cast<const uint8_t *>(v.data);
  a.scales = v.scales;
  a.bias = w.bias();
  a.y = y;
  a.n = v.n;
  const Isa isa = activeIsa();
  void (*kernel)(const GemvFp8Args &, int64_t, int64_t) =
      isa == Isa::Avx512 ? gemvFp8Avx512
      : isa == Isa::Avx2 ? gemvFp8Avx2
                         : gemvFp8Scalar;
  return forOutputRows(a, kernel, a.k, pool);
}

Status linearGemvInt4(const float *x, int64_t numTokens, const PackedWeight &w,
                      float *y, ThreadPool &pool) {
  const WeightView &v = w.view();
  GemvInt4Args a;
  a.x = x;
  a.m = numTokens;
  a.k = v.k;
  a.w = static_cast<const uint8_t *>(v.data);
  a.groupSize = v.groupSize;
  a.params = v.groupParams;
  a.bias = w.bias();
  a.y = y;
  a.n = v.n;
  // AVX512-VNNI, else AVX2 (an AVX-512 CPU without VNNI too).
  const bool vnni = activeIsa() == Isa::Avx512 && hostFeatures().avx512vnni;
  // The GEMV up to kConvertTileRows rows where an int8-x GEMM applies
  // (above them it wins), else up to kInt4X8MaxRows (Gemv.h has the
  // figures): the AMX-INT8 one for groups of 128, or the VNNI one without
  // AMX and, with AMX, for groups of 64 (one tile K step per group: the
  // C tiles' stores and epilogue after every step made AMX-INT8 the slower
  // there, docs/cpu-kernels.md); with AMX, groups of 32 take the bf16
  // GEMM, which the VNNI one does not beat for them.
  const bool amxInt8Fits = v.groupSize >= 128 && amxInt8Active();
  const bool vnniGemmFits = vnni && (!amxActive() || v.groupSize == 64);
  const bool gemv = numTokens <= (amxInt8Fits || vnniGemmFits ? kConvertTileRows
                                                              : kInt4X8MaxRows);
  const bool amxInt8 = !gemv && amxInt8Fits;
  const bool vnniGemm = !gemv && !amxInt8Fits && vnniGemmFits;
  if (v.int8X && int4X8Active() && (gemv || amxInt8 || vnniGemm)) {
    // Per calling thread, as the pair-split x above.
    thread_local Int4X8Buffers xq;
    (vnni ? quantizeXForInt4Avx512 : quantizeXForInt4Avx2)(x, numTokens, v.k,
                                                           v.groupSize, xq);
    a.xq = xq.xq.data();
    a.xqRow = xq.xqRow;
    a.xScales = xq.xScales.data();
    a.xScaleRow = xq.xScaleRow;
    a.xSums = xq.xSums.data();
    a.xSumRow = xq.xSumRow;
    if (amxInt8) {
      prepareXForAmxInt4X8(xq, numTokens, v.groupSize);
      a.xq = xq.xq.data();
      pool.parallelForGuided(a.n, 32, /*align=*/32, [&](int64_t b, int64_t e) {
        gemmAmxInt4X8(a, b, e);
      });
      return Status::success();
    }
    if (vnniGemm) {
      prepareXForInt4X8Gemm(xq, numTokens, v.groupSize);
      pool.parallelForGuided(a.n, 32, /*align=*/32, [&](int64_t b, int64_t e) {
        gemmInt4X8Avx512(a, b, e);
      });
      return Status::success();
    }
    return forOutputRows(a, vnni ? gemvInt4X8Avx512 : gemvInt4X8Avx2,
                         int4RowBytes(a.k), pool);
  }
  if (Bf16Gemm gemm = bf16GemmFor(numTokens, AmxCodes::Int4))
    return linearBf16Gemm(gemm, x, numTokens, w, AmxCodes::Int4, nullptr, y,
                          pool);
  const Isa isa = activeIsa();
  void (*kernel)(const GemvInt4Args &, int64_t, int64_t) =
      isa == Isa::Avx512 ? gemvInt4Avx512
      : isa == Isa::Avx2 ? gemvInt4Avx2
                         : gemvInt4Scalar;
  return forOutputRows(a, kernel, int4RowBytes(a.k), pool);
}

/// Whether linear() runs `w` through gemmPanelAvx2 above kSmallM rows: on
/// AVX2, f16 weights (oneDNN 2.6 has no f16 matmul) and bf16 ones (its bf16
/// matmul needs AVX-512; without it the 110M Llama's bf16 prefill ran slower
/// than the int8 panel path). f32 stays with oneDNN's AVX2 GEMM.
bool avx2Panel(const PackedWeight &w) {
  return activeIsa() == Isa::Avx2 &&
         (w.storage() == DType::BF16 || w.storage() == DType::F16);
}

Status linearPanelAvx2(const float *x, int64_t numTokens, const PackedWeight &w,
                       float *y, ThreadPool &pool) {
  GemvArgs a;
  a.x = x;
  a.m = numTokens;
  a.k = w.inFeatures();
  a.w = w.data();
  a.bf16 = w.storage() == DType::BF16;
  a.f16 = w.storage() == DType::F16;
  a.bias = w.bias();
  a.y = y;
  a.n = w.outFeatures();
  return forOutputRows(a, gemmPanelAvx2, a.k * 2, pool);
}

} // namespace

Status linearGemv(const float *x, int64_t numTokens, const PackedWeight &w,
                  float *y, ThreadPool &pool) {
  FOLIO_RETURN_IF_ERROR(checkLinear(x, numTokens, w, y));
  if (numTokens == 0)
    return Status::success();
  if (w.storage() == DType::I8)
    return linearGemvInt8(x, numTokens, w, y, pool);
  if (w.storage() == DType::FP8E4M3)
    return linearGemvFp8(x, numTokens, w, y, pool);
  if (w.storage() == DType::I4)
    return linearGemvInt4(x, numTokens, w, y, pool);
  // f16 has no oneDNN matmul here: above the rows where the GEMV tiles
  // win, its prefill runs Folio's GEMMs, on AMX, else (AVX-512) on an f32
  // panel.
  if (w.storage() == DType::F16 && numTokens > kF16GemvMaxRowsAmx)
    if (Bf16Gemm gemm = bf16GemmFor(numTokens, AmxCodes::F16))
      return linearBf16Gemm(gemm, x, numTokens, w, AmxCodes::F16, nullptr, y,
                            pool);
  GemvArgs a;
  a.x = x;
  a.m = numTokens;
  a.k = w.inFeatures();
  a.w = w.data();
  a.bf16 = w.storage() == DType::BF16;
  a.f16 = w.storage() == DType::F16;
  a.bias = w.bias();
  a.y = y;
  a.n = w.outFeatures();
  const Isa isa = activeIsa();
  if (a.f16 && isa == Isa::Avx512 && numTokens > kF16GemvMaxRows) {
    pool.parallelForGuided(
        a.n, kDequantPanelRows,
        /*align=*/kDequantPanelRows,
        [&](int64_t b, int64_t e) { gemmF16PanelAvx512(a, b, e); });
    return Status::success();
  }
  void (*kernel)(const GemvArgs &, int64_t, int64_t) =
      isa == Isa::Avx512 ? gemvAvx512
      : isa == Isa::Avx2 ? gemvAvx2
                         : gemvScalar;
  if (isa != Isa::Scalar && a.bf16) {
    // Per calling thread: the executor runs one layer at a time, and the
    // pool's workers only read it.
    // 64-byte aligned (and kPairs is a multiple of 32): every x load of
    // the tiles is one cache line. malloc's 16-byte alignment split each
    // across two, and at 5-8 rows, with the weights in cache, the loads
    // cost a quarter of the time (docs/cpu-kernels.md, Linear).
    thread_local std::vector<float> pairs;
    a.kPairs = pairSplitLength(a.k);
    float *xPairs = alignedScratch(pairs, size_t(a.m * a.kPairs));
    splitPairs(x, a.m, a.k, xPairs);
    a.xPairs = xPairs;
  }
  // Guided chunks: the first grabs take about a quarter of the rows each (2
  // threads), later ones shrink to 32 KiB of weights. Each chunk costs a
  // shared-counter bump and a cold start for the prefetchers, and a decode
  // step makes ~60 GEMV calls, so fixed 64 KiB chunks lost 15-20 % of the
  // 2-thread read loop; fixed chunks of about half a thread's share (the
  // previous rule) left up to one large chunk of tail on one thread when the
  // other lost its core. folio-linear-bench 7 2, one token's GEMVs, in-run
  // alternation, 6 rounds of 7: guided 0.78-0.91 of the read loop against
  // 0.80-0.90 before, ahead in 4 of the 6 (docs/cpu-kernels.md, Linear).
  return forOutputRows(a, kernel, a.k * int64_t(dtypeSize(w.storage())), pool);
}

Status linear(const float *x, int64_t numTokens, const PackedWeight &w,
              float *y, ThreadPool &pool) {
  FOLIO_RETURN_IF_ERROR(checkLinear(x, numTokens, w, y));
  if (numTokens > kSmallM && avx2Panel(w))
    return linearPanelAvx2(x, numTokens, w, y, pool);
#ifdef FOLIO_ENABLE_DNNL
  if (numTokens > kSmallM)
    if (const DnnlMatmul *mm = w.impl->matmul())
      return mm->run(x, numTokens, y, pool);
#endif
  return linearGemv(x, numTokens, w, y, pool);
}

Status gatedLinear(const float *x, int64_t numTokens,
                   const PackedWeight &gateUp, Activation act, float *h,
                   ThreadPool &pool) {
  FOLIO_RETURN_IF_ERROR(checkLinear(x, numTokens, gateUp, h));
  int64_t f = gateUp.outFeatures() / 2;
  if (gateUp.outFeatures() % 2 != 0 || gateUp.bias())
    return Status::error(
        "gatedLinear: the weight must be gate and up stacked, without bias");
  if (numTokens == 0)
    return Status::success();
#ifdef FOLIO_ENABLE_DNNL
  if (numTokens > kSmallM && !avx2Panel(gateUp))
    if (const DnnlMatmul *mm = gateUp.impl->matmul();
        mm && mm->gatedReady() && mm->runGated(x, numTokens, act, h, pool).ok())
      return Status::success();
#endif
  // Per calling thread (the executor runs one layer at a time); decode's
  // one row is small, a long unfused prefill's buffer is not kept.
  thread_local std::vector<float> gu;
  gu.resize(size_t(numTokens * 2 * f));
  Status s = linear(x, numTokens, gateUp, gu.data(), pool);
  if (s.ok())
    s = gatedActivation(gu.data(), 2 * f, gu.data() + f, 2 * f, h, numTokens, f,
                        act, pool);
  if (gu.capacity() * sizeof(float) > (size_t(64) << 20))
    std::vector<float>().swap(gu);
  return s;
}

bool setLibraryThreads(int numThreads) {
  // Looked up at run time: libgomp comes in with libdnnl, and linking it
  // here directly could pick a different OpenMP runtime than oneDNN's.
  using SetFn = void (*)(int);
  static SetFn set =
      reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (!set)
    return false;
  set(numThreads > 0 ? numThreads : 1);
  return true;
}

} // namespace folio::cpu
