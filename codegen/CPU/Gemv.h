//===- Gemv.h - Small-M matrix times W^T kernels ----------------*- C++ -*-===//
//
// Internal. y[m, n] = x[m, :] . w[n, :] + bias[n] for n in [nBegin, nEnd)
// and every m < M. Each output is computed independently of how N is split,
// so results do not depend on the thread count.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_GEMV_H
#define FOLIO_CODEGEN_CPU_GEMV_H

#include <cstdint>

namespace folio::cpu::detail {

struct GemvArgs {
  const float *x = nullptr; ///< [M, K]
  int64_t m = 0;
  int64_t k = 0;
  const void *w = nullptr; ///< [N, K], f32 or bf16
  bool bf16 = false;
  const float *bias = nullptr; ///< [N] or null
  float *y = nullptr;          ///< [M, N]
  int64_t n = 0;
};

void gemvScalar(const GemvArgs &a, int64_t nBegin, int64_t nEnd);
void gemvAvx512(const GemvArgs &a, int64_t nBegin, int64_t nEnd);

} // namespace folio::cpu::detail

#endif // FOLIO_CODEGEN_CPU_GEMV_H
