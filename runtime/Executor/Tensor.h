//===- Tensor.h - Run-time values of the CPU executor -----------*- C++ -*-===//
//
// A dense row-major tensor whose shape is known only at run time (the plan's
// dims may be dynamic). Storage is shared, so reshapes and casts are views,
// and constants point into the plan's (mapped) blob without a copy.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_EXECUTOR_TENSOR_H
#define FOLIO_RUNTIME_EXECUTOR_TENSOR_H

#include "runtime/Plan/Plan.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace folio::exec {

using plan::ElemType;
using Shape = std::vector<int64_t>;

struct Tensor {
  ElemType type = ElemType::F32;
  Shape shape;
  std::shared_ptr<void> storage; ///< keeps `data` alive; null for borrowed
  void *data = nullptr;

  bool defined() const { return data != nullptr || numel() == 0; }
  int64_t rank() const { return int64_t(shape.size()); }
  int64_t numel() const;
  size_t bytes() const { return size_t(numel()) * plan::elemTypeSize(type); }
  template <typename T> T *as() const { return static_cast<T *>(data); }

  /// A fresh, zero-filled tensor.
  static Tensor allocate(ElemType type, Shape shape);
  /// A fresh tensor with unspecified contents, for kernels that write every
  /// element (saves a pass over the result).
  static Tensor empty(ElemType type, Shape shape);
  /// The same storage under another shape (numel must match).
  Tensor view(Shape newShape) const;
  /// Reads element i as int64 (I64/I32 tensors; shape arithmetic).
  int64_t intAt(int64_t i) const;
  /// All elements as int64 (small shape tensors).
  std::vector<int64_t> ints() const;
};

int64_t numelOf(const Shape &shape);

/// Bytes of freed tensor storage kept for reuse (FOLIO_TENSOR_CACHE_MB caps
/// it, 1024 by default; over the cap the least recently used sizes go
/// first), a way to hand it back to the system, and to change the cap
/// (blocks already cached stay until the next free needs room).
size_t cachedTensorBytes();
void releaseCachedTensorMemory();
void setTensorCacheLimit(size_t bytes);

/// Steps a row-major multi-index over the first `rank` dims of `shape`
/// (the last fastest), wrapping to all zeros after the last element.
inline void advanceIndex(std::vector<int64_t> &idx, const Shape &shape,
                         size_t rank) {
  for (size_t d = rank; d-- > 0;) {
    if (++idx[d] < shape[d])
      return;
    idx[d] = 0;
  }
}
std::string shapeString(const Shape &shape);

} // namespace folio::exec

#endif // FOLIO_RUNTIME_EXECUTOR_TENSOR_H
