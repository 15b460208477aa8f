//===- PackedWeightImpl.h - PackedWeight's representation -------*- C++ -*-===//

#ifndef FOLIO_CODEGEN_CPU_PACKEDWEIGHTIMPL_H
#define FOLIO_CODEGEN_CPU_PACKEDWEIGHTIMPL_H

#include "codegen/CPU/Linear.h"
#include "codegen/CPU/WeightPack.h"
#ifdef FOLIO_ENABLE_DNNL
#include "codegen/CPU/DnnlMatmul.h"
#endif

#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

namespace folio::cpu {

namespace detail {
/// `bytes` (4 KiB aligned) of weight memory from huge-page-backed chunks
/// shared between weights; the chunk lives while any of its slices does.
std::shared_ptr<void> allocateWeightMemory(size_t bytes);
} // namespace detail

struct PackedWeight::Impl {
  int64_t n = 0, k = 0;
  DType storage = DType::F32;
  const void *w = nullptr;     ///< owned.get() or borrowed
  std::shared_ptr<void> owned; ///< from allocateWeightMemory
  /// What the kernels read (w plus, for int8, scales and outliers).
  WeightView view;
  /// An int8 weight packed here (tests, unpacked plans) rather than viewed.
  std::shared_ptr<WeightPacking> packing;
  std::vector<float> bias;
  bool hasBias = false;
#ifdef FOLIO_ENABLE_DNNL
  /// The prefill primitive; for a view (weights stored in a plan) made at
  /// its first use, so that loading stays a page-in: its blocked copy of
  /// the weights is the only conversion, and a decode-only run never
  /// makes it.
  mutable std::unique_ptr<detail::DnnlMatmul> dnnl;
  mutable std::once_flag dnnlOnce;
  bool dnnlLazy = false;
  bool gatedHalves = false;
  const detail::DnnlMatmul *matmul() const;
#endif
};

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_PACKEDWEIGHTIMPL_H
