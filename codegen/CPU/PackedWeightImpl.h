//===- PackedWeightImpl.h - PackedWeight's representation -------*- C++ -*-===//

#ifndef FOLIO_CODEGEN_CPU_PACKEDWEIGHTIMPL_H
#define FOLIO_CODEGEN_CPU_PACKEDWEIGHTIMPL_H

#include "codegen/CPU/Linear.h"
#ifdef FOLIO_ENABLE_DNNL
#include "codegen/CPU/DnnlMatmul.h"
#endif

#include <cstdlib>
#include <memory>
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
  std::vector<float> bias;
  bool hasBias = false;
#ifdef FOLIO_ENABLE_DNNL
  std::unique_ptr<detail::DnnlMatmul> dnnl;
#endif
};

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_PACKEDWEIGHTIMPL_H
