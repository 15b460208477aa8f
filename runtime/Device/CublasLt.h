//===- CublasLt.h - GEMMs through cuBLASLt, loaded at run time --*- C++ -*-===//
//
// The generated linear kernel streams the weights once per 8 token rows:
// what decode wants. A prefill of hundreds of rows wants tensor cores, which
// cuBLASLt drives best. Like the driver, cuBLASLt is loaded with dlopen
// (libcublasLt.so.13, or FOLIO_LIBCUBLASLT_PATH in tests), so one binary
// runs with or without it; its header is not included and the few enums
// used are restated with their cublasLt.h values.
//
// linear computes y[m, n] = x[m, k] . w[n, k]^T (+ bias[n]) with x and w
// in bf16 or f16 (both the same) and y, bias in f32, all row-major: the
// stored [n, k] weight is
// cuBLASLt's column-major k x n matrix A taken transposed, x its k x m
// matrix B, and y the n x m column-major D (the "TN" GEMM, the layout
// Hopper's fp8 GEMMs require too). The bias is cuBLASLt's BIAS epilogue.
//
// linearFp8 is the same product with x and w as e4m3 codes and a scale per
// row of each (cuBLASLt's outer-vector scaling: the weight's per-output
// scales on A, x's per-token scales on B), y in f32, without a bias.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_DEVICE_CUBLASLT_H
#define FOLIO_RUNTIME_DEVICE_CUBLASLT_H

#include "runtime/Device/CudaDevice.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

namespace folio::device {

struct CublasLtApi;

class CublasLt {
public:
  /// Loads the library and creates a handle, with a workspace on `dev`
  /// (which must outlive the result); an error says what is missing.
  static Expected<std::unique_ptr<CublasLt>> open(const CudaDevice &dev);
  ~CublasLt();

  /// cublasLtGetVersion(), e.g. 130100.
  size_t version() const;
  /// The library loaded.
  const std::string &library() const;

  /// The 16-bit type of a GEMM's x and w: the stored weight's.
  enum class Half { BF16, F16 };

  /// y = x . w^T (+ bias), see the file comment; bias may be 0 (none).
  /// Enqueued on the device's stream, so a capture (CudaDevice::
  /// beginCapture) records it; the algorithm is chosen at a shape's first
  /// GEMM, a host call. m, n, k >= 1. Callers on several threads take
  /// turns.
  Status linear(Half type, cu::DevicePtr x, cu::DevicePtr w, cu::DevicePtr bias,
                cu::DevicePtr y, int64_t m, int64_t n, int64_t k) const;
  Status linearBf16(cu::DevicePtr x, cu::DevicePtr w, cu::DevicePtr bias,
                    cu::DevicePtr y, int64_t m, int64_t n, int64_t k) const {
    return linear(Half::BF16, x, w, bias, y, m, n, k);
  }

  /// y[m, n] = (xScale[i] * wScale[j] * sum_k x8[i, k] w8[j, k]) with x8
  /// and w8 e4m3 codes [m, k] and [n, k], scales f32 (sm_89 and later).
  /// NotFound where the library has no algorithm for it or refuses its
  /// arguments (an older library, another arch, k not a multiple of 16, an
  /// alignment): nothing was enqueued, and the caller takes another path.
  Status linearFp8(cu::DevicePtr x8, cu::DevicePtr xScale, cu::DevicePtr w8,
                   cu::DevicePtr wScale, cu::DevicePtr y, int64_t m, int64_t n,
                   int64_t k) const;

  /// Workspace given to every GEMM.
  static constexpr size_t kWorkspaceBytes = size_t(32) << 20;

  struct Plan; ///< descriptors and the chosen algorithm of one shape

private:
  CublasLt() = default;
  /// The cached plan of a shape, made at its first use; mu_ held.
  /// `type` is x's and w's CUDA data type (bf16, f16 or e4m3).
  Expected<Plan *> plan(int type, int64_t m, int64_t n, int64_t k,
                        bool bias) const;
  Status check(int status, const std::string &call,
               const std::string &what) const;
  /// Points the descriptor attribute `attr` of `p` at `want` unless it
  /// holds it already (`held`); mu_ held.
  Status setPointer(Plan &p, int attr, cu::DevicePtr want, cu::DevicePtr &held,
                    const std::string &what) const;
  /// cublasLtMatmul of plan `p`: y = w^T x (the plan's epilogue and
  /// scales); its cuBLAS status.
  int matmul(const Plan &p, cu::DevicePtr x, cu::DevicePtr w,
             cu::DevicePtr y) const;

  const CudaDevice *dev_ = nullptr;
  const CublasLtApi *api_ = nullptr;
  void *handle_ = nullptr;
  DeviceBuffer workspace_;
  // Shapes seen so far: the heuristic query costs more than a small GEMM.
  mutable std::mutex mu_;
  mutable std::map<std::tuple<int, int64_t, int64_t, int64_t, bool>,
                   std::unique_ptr<Plan>>
      plans_;
};

} // namespace folio::device

#endif // FOLIO_RUNTIME_DEVICE_CUBLASLT_H
