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

struct PackedWeight::Impl {
  struct FreeDeleter {
    void operator()(void *p) const { std::free(p); }
  };
  int64_t n = 0, k = 0;
  DType storage = DType::F32;
  const void *w = nullptr;                  ///< owned.get() or borrowed
  std::unique_ptr<void, FreeDeleter> owned; ///< 64-byte aligned
  std::vector<float> bias;
  bool hasBias = false;
#ifdef FOLIO_ENABLE_DNNL
  std::unique_ptr<detail::DnnlMatmul> dnnl;
#endif
};

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_PACKEDWEIGHTIMPL_H
