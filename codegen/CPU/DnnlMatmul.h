//===- DnnlMatmul.h - oneDNN matmul over a packed weight --------*- C++ -*-===//
//
// Internal; compiled only with FOLIO_ENABLE_DNNL. Keeps oneDNN's headers out of
// every other translation unit.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_DNNLMATMUL_H
#define FOLIO_CODEGEN_CPU_DNNLMATMUL_H

#include "codegen/CPU/DType.h"
#include "codegen/CPU/Status.h"
#include "codegen/CPU/ThreadPool.h"

#include <cstdint>
#include <memory>
#include <string>

namespace folio::cpu::detail {

/// One matmul primitive with a runtime M dimension, created once per weight:
/// a new M (every step's token count differs) costs no primitive creation.
/// The weight buffer is borrowed and must outlive this object.
class DnnlMatmul {
public:
  /// Null (with `why` set) if oneDNN cannot build the primitive here.
  static std::unique_ptr<DnnlMatmul> create(const void *w, DType storage,
                                            int64_t n, int64_t k,
                                            const float *bias,
                                            std::string &why);
  ~DnnlMatmul();

  /// y[m, n] = x[m, :] . W^T + bias. bf16 weights take x rounded to bf16
  /// (converted here on the pool), f32 weights take x as is.
  Status run(const float *x, int64_t m, float *y, ThreadPool &pool) const;

  struct State;

private:
  explicit DnnlMatmul(std::unique_ptr<State> s);
  std::unique_ptr<State> state;
};

} // namespace folio::cpu::detail

#endif // FOLIO_CODEGEN_CPU_DNNLMATMUL_H
