//===- DataMovementOps.cpp - folio.reshape, transpose, slice, concat ------===//
//
// The compiler folded every shape: a reshape carries its target with at
// most one -1 (the token count), slices and concats name static ranges.
// Reshapes are views; the others copy whole rows (memcpy) wherever the
// innermost dim stays contiguous, and split big copies over the pool.
//
//===----------------------------------------------------------------------===//

#include "runtime/Executor/StepKernel.h"

#include <algorithm>
#include <cstring>

namespace folio::exec {
namespace {

Status normAxis(const StepContext &ctx, int64_t &axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    return ctx.error("axis " + std::to_string(axis) +
                     " is out of range for rank " + std::to_string(rank));
  if (axis < 0)
    axis += rank;
  return Status::ok();
}

Status runConcat(StepContext &ctx) {
  const Tensor &first = ctx.in(0);
  int64_t axis = ctx.step.getInt("axis", 0);
  if (first.rank() < 1)
    return ctx.error("cannot join rank-0 tensors");
  if (Status s = normAxis(ctx, axis, first.rank()); !s)
    return s;
  Shape shape = first.shape;
  shape[size_t(axis)] = 0;
  for (size_t i = 0; i < ctx.numOperands(); ++i) {
    const Tensor &t = ctx.in(i);
    if (t.type != first.type || t.rank() != first.rank())
      return ctx.error("inputs differ in element type or rank");
    for (int64_t d = 0; d < t.rank(); ++d)
      if (d != axis && t.shape[size_t(d)] != first.shape[size_t(d)])
        return ctx.error("input " + std::to_string(i) + " has shape " +
                         shapeString(t.shape) + ", incompatible with " +
                         shapeString(first.shape));
    shape[size_t(axis)] += t.shape[size_t(axis)];
  }
  Tensor out = ctx.output(0, first.type, shape);
  size_t es = plan::elemTypeSize(first.type);
  int64_t outer = numelOf(Shape(shape.begin(), shape.begin() + axis));
  int64_t inner = numelOf(Shape(shape.begin() + axis + 1, shape.end()));
  char *dst = static_cast<char *>(out.data);
  for (int64_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < ctx.numOperands(); ++i) {
      const Tensor &t = ctx.in(i);
      size_t chunk = size_t(t.shape[size_t(axis)] * inner) * es;
      std::memcpy(dst, static_cast<const char *>(t.data) + size_t(o) * chunk,
                  chunk);
      dst += chunk;
    }
  ctx.setResult(0, std::move(out));
  return Status::ok();
}

/// Copies `n` elements of `es` bytes from `src`, `stride` elements apart,
/// to contiguous `dst`; typed for the common sizes so it is a plain loop.
void gatherStrided(char *dst, const char *src, int64_t n, int64_t stride,
                   size_t es) {
  if (stride == 1) {
    std::memcpy(dst, src, size_t(n) * es);
    return;
  }
  auto typed = [&](auto tag) {
    using T = decltype(tag);
    T *d = reinterpret_cast<T *>(dst);
    const T *s = reinterpret_cast<const T *>(src);
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(d + i, s + i * stride, sizeof(T));
  };
  switch (es) {
  case 1:
    return typed(uint8_t());
  case 2:
    return typed(uint16_t());
  case 4:
    return typed(uint32_t());
  case 8:
    return typed(uint64_t());
  default:
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(dst + size_t(i) * es, src + size_t(i * stride) * es, es);
  }
}

/// Fills `out` (contiguous, row-major over `dims`) from `src`, where output
/// dim d steps `stride[d]` elements through `src`. Each output row (the
/// last dim) is one strided gather, a memcpy when its stride is 1; rows are
/// split over the pool.
void copyStrided(const char *src, char *out, const std::vector<int64_t> &dims,
                 const std::vector<int64_t> &stride, int64_t srcOffset,
                 size_t es, cpu::ThreadPool &pool) {
  size_t outer = dims.size() - 1;
  int64_t inner = dims[outer], rows = 1;
  for (size_t d = 0; d < outer; ++d)
    rows *= dims[d];
  if (rows == 0 || inner == 0)
    return;
  int64_t innerStride = stride[outer];
  // About 64 KiB per chunk; one chunk when the pool has no workers.
  int64_t grain =
      pool.numThreads() <= 1
          ? rows
          : std::max<int64_t>(
                1, int64_t(65536 / std::max<size_t>(1, size_t(inner) * es)));
  pool.parallelFor(rows, grain, [&](int64_t b, int64_t e) {
    std::vector<int64_t> idx(outer, 0);
    int64_t off = srcOffset;
    for (int64_t r = b, d = int64_t(outer) - 1; d >= 0; --d) {
      idx[size_t(d)] = r % dims[size_t(d)];
      r /= dims[size_t(d)];
      off += idx[size_t(d)] * stride[size_t(d)];
    }
    for (int64_t r = b; r < e; ++r) {
      gatherStrided(out + size_t(r * inner) * es, src + size_t(off) * es, inner,
                    innerStride, es);
      for (size_t d = outer; d-- > 0;) {
        if (++idx[d] < dims[d]) {
          off += stride[d];
          break;
        }
        off -= (dims[d] - 1) * stride[d];
        idx[d] = 0;
      }
    }
  });
}

Status runTranspose(StepContext &ctx) {
  const Tensor &x = ctx.in(0);
  int64_t r = x.rank();
  std::vector<int64_t> perm = ctx.step.getInts("permutation");
  if (perm.empty())
    for (int64_t i = r - 1; i >= 0; --i)
      perm.push_back(i);
  if (int64_t(perm.size()) != r)
    return ctx.error("perm has " + std::to_string(perm.size()) +
                     " entries for a rank-" + std::to_string(r) + " input");
  std::vector<bool> seen(size_t(r), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= r || seen[size_t(p)])
      return ctx.error("perm is not a permutation");
    seen[size_t(p)] = true;
  }
  Shape shape(static_cast<size_t>(r), 0);
  for (int64_t i = 0; i < r; ++i)
    shape[size_t(i)] = x.shape[size_t(perm[size_t(i)])];
  // Reduce the permutation: dims of size 1 do not move data, and output
  // dims that are neighbours in the input in the same order move as one.
  // The [B, S, H, D] <-> [B, H, S, D] pairs around attention become a
  // [S, H, D] -> [H, S, D] copy of D-element rows, and the decode forms
  // (S = 1) an identity.
  std::vector<int64_t> inStride(size_t(r), 1);
  for (int64_t i = r - 2; i >= 0; --i)
    inStride[size_t(i)] = inStride[size_t(i + 1)] * x.shape[size_t(i + 1)];
  std::vector<int64_t> dims, stride;
  for (int64_t i = 0; i < r; ++i) {
    int64_t p = perm[size_t(i)], n = x.shape[size_t(p)];
    if (n == 1)
      continue;
    if (!dims.empty() && stride.back() == inStride[size_t(p)] * n) {
      dims.back() *= n;
      stride.back() = inStride[size_t(p)];
    } else {
      dims.push_back(n);
      stride.push_back(inStride[size_t(p)]);
    }
  }
  // In input order already: the same bytes under the new shape.
  bool inOrder = true;
  for (size_t i = 1; i < stride.size(); ++i)
    inOrder = inOrder && stride[i - 1] > stride[i];
  if (inOrder) {
    ctx.setResult(0, x.view(shape));
    return Status::ok();
  }
  Tensor out = ctx.output(0, x.type, shape);
  copyStrided(static_cast<const char *>(x.data), static_cast<char *>(out.data),
              dims, stride, 0, plan::elemTypeSize(x.type), ctx.pool);
  ctx.setResult(0, std::move(out));
  return Status::ok();
}

/// folio.reshape: the target shape is static but for at most one -1.
Status runReshape(StepContext &ctx) {
  const Tensor &x = ctx.in(0);
  std::vector<int64_t> shape = ctx.step.getInts("shape");
  int64_t inferred = -1, known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && inferred < 0) {
      inferred = int64_t(i);
      continue;
    }
    // A product past int64 cannot be the input's element count.
    if (shape[i] < 0 || __builtin_mul_overflow(known, shape[i], &known))
      return ctx.error("bad target shape " + shapeString(shape));
  }
  if (inferred >= 0) {
    if (known == 0 || x.numel() % known != 0)
      return ctx.error("cannot reshape " + shapeString(x.shape) + " to " +
                       shapeString(shape));
    shape[size_t(inferred)] = x.numel() / known;
    known = x.numel();
  }
  if (known != x.numel())
    return ctx.error("cannot reshape " + shapeString(x.shape) + " (" +
                     std::to_string(x.numel()) + " elements) to " +
                     shapeString(shape));
  ctx.setResult(0, x.view(shape));
  return Status::ok();
}

/// folio.slice: [start, start + size) of one static dim.
Status runSlice(StepContext &ctx) {
  const Tensor &x = ctx.in(0);
  int64_t r = x.rank();
  int64_t axis = ctx.step.getInt("axis", -1);
  int64_t start = ctx.step.getInt("start", -1);
  int64_t size = ctx.step.getInt("size", -1);
  if (axis < 0 || axis >= r || start < 0 || size < 0 ||
      start > x.shape[size_t(axis)] || size > x.shape[size_t(axis)] - start)
    return ctx.error("range [" + std::to_string(start) + ", +" +
                     std::to_string(size) + ") of axis " +
                     std::to_string(axis) + " is outside " +
                     shapeString(x.shape));
  Shape shape = x.shape;
  shape[size_t(axis)] = size;
  // One outer row (a decode step's slice of stacked q/k/v): the range is
  // contiguous, so the result is a view.
  int64_t outer = numelOf(Shape(x.shape.begin(), x.shape.begin() + axis));
  if (outer == 1) {
    int64_t inner = numelOf(Shape(x.shape.begin() + axis + 1, x.shape.end()));
    Tensor view = x;
    view.shape = shape;
    view.data = static_cast<char *>(x.data) +
                size_t(start * inner) * plan::elemTypeSize(x.type);
    ctx.setResult(0, std::move(view));
    return Status::ok();
  }
  Tensor out = ctx.output(0, x.type, shape);
  // Output dim d walks the input by whole rows of that dim.
  std::vector<int64_t> stride(size_t(r), 1);
  int64_t acc = 1;
  for (int64_t d = r - 1; d >= 0; --d) {
    stride[size_t(d)] = acc;
    acc *= x.shape[size_t(d)];
  }
  copyStrided(static_cast<const char *>(x.data), static_cast<char *>(out.data),
              shape, stride, start * stride[size_t(axis)],
              plan::elemTypeSize(x.type), ctx.pool);
  ctx.setResult(0, std::move(out));
  return Status::ok();
}

} // namespace

const std::vector<StepKernel> &dataMovementStepKernels() {
  static const std::vector<StepKernel> table = {
      {"reshape", runReshape, nullptr, 1, 1},
      {"transpose", runTranspose, nullptr, 1, 1},
      {"slice", runSlice, nullptr, 1, 1},
      {"concat", runConcat, nullptr, 1, 1 << 20},
  };
  return table;
}

} // namespace folio::exec
