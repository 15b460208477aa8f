//===- Validate.h - Shared argument checks -----------------------*- C++
//-*-===//
//
// Internal helpers so every kernel words its errors the same way.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_VALIDATE_H
#define FOLIO_CODEGEN_CPU_VALIDATE_H

#include "codegen/CPU/Status.h"

#include <cstdint>
#include <string>

namespace folio::cpu::detail {

inline Status checkNonNegative(const char *kernel, const char *what,
                               int64_t v) {
  if (v < 0)
    return Status::error(std::string(kernel) + ": " + what +
                         " must be >= 0, got " + std::to_string(v));
  return Status::success();
}

inline Status checkPositive(const char *kernel, const char *what, int64_t v) {
  if (v <= 0)
    return Status::error(std::string(kernel) + ": " + what +
                         " must be > 0, got " + std::to_string(v));
  return Status::success();
}

/// A buffer may be null only when it holds no elements.
inline Status checkPointer(const char *kernel, const char *what, const void *p,
                           int64_t elements) {
  if (!p && elements > 0)
    return Status::error(std::string(kernel) + ": " + what + " is null");
  return Status::success();
}

/// Rows per parallelFor chunk so that a chunk touches about `target`
/// elements: big enough to amortise scheduling, small enough to balance.
inline int64_t rowGrain(int64_t rowElements, int64_t target = 16384) {
  int64_t g = rowElements > 0 ? target / rowElements : target;
  return g > 0 ? g : 1;
}

} // namespace folio::cpu::detail

#define FOLIO_RETURN_IF_ERROR(expr)                                            \
  do {                                                                         \
    ::folio::cpu::Status _folioStatus = (expr);                                \
    if (!_folioStatus.ok())                                                    \
      return _folioStatus;                                                     \
  } while (0)

#endif // FOLIO_CODEGEN_CPU_VALIDATE_H
