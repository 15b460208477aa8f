//===- Tensor.cpp - Run-time values of the CPU executor -------------------===//

#include "runtime/Executor/Tensor.h"

#include <cassert>
#include <cstdlib>
#include <cstring>

namespace folio::exec {

int64_t numelOf(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string shapeString(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t Tensor::numel() const { return numelOf(shape); }

Tensor Tensor::allocate(ElemType type, Shape shape) {
  Tensor t;
  t.type = type;
  t.shape = std::move(shape);
  // 64-byte alignment suits the AVX-512 kernels; never zero bytes so that
  // an empty tensor still has a valid pointer.
  size_t bytes = (t.bytes() + 63) / 64 * 64;
  if (bytes == 0)
    bytes = 64;
  void *mem = std::aligned_alloc(64, bytes);
  assert(mem && "out of memory");
  std::memset(mem, 0, bytes);
  t.storage = std::shared_ptr<void>(mem, [](void *p) { std::free(p); });
  t.data = mem;
  return t;
}

Tensor Tensor::view(Shape newShape) const {
  assert(numelOf(newShape) == numel() && "a view keeps the element count");
  Tensor t = *this;
  t.shape = std::move(newShape);
  return t;
}

int64_t Tensor::intAt(int64_t i) const {
  return type == ElemType::I64 ? as<int64_t>()[i] : as<int32_t>()[i];
}

std::vector<int64_t> Tensor::ints() const {
  std::vector<int64_t> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i)
    v[size_t(i)] = intAt(i);
  return v;
}

} // namespace folio::exec
