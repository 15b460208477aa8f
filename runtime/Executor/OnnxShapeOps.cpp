//===- OnnxShapeOps.cpp - Reference ONNX data-movement ops ----------------===//
//
// The ONNX nodes that page-kv leaves around the folio ops: shape arithmetic
// on small int tensors (Shape, Gather, Unsqueeze, Concat) and data movement
// (Reshape, Transpose, Slice, Split). They run as ordinary steps with shapes
// computed from the actual inputs, so dynamic dims need no symbolic
// machinery at run time. Data movement copies whole rows (memcpy) wherever
// the innermost dim stays contiguous, and splits big copies over the pool.
//
//===----------------------------------------------------------------------===//

#include "runtime/Executor/StepKernel.h"

#include <algorithm>
#include <cstring>

namespace folio::exec {
namespace {

bool isInt(ElemType t) { return t == ElemType::I64 || t == ElemType::I32; }

Status normAxis(const StepContext &ctx, int64_t &axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    return ctx.error("axis " + std::to_string(axis) +
                     " is out of range for rank " + std::to_string(rank));
  if (axis < 0)
    axis += rank;
  return Status::ok();
}

Tensor fromInts(const std::vector<int64_t> &v, Shape shape) {
  Tensor t = Tensor::allocate(ElemType::I64, std::move(shape));
  std::copy(v.begin(), v.end(), t.as<int64_t>());
  return t;
}

Status runShape(StepContext &ctx) {
  const Tensor &x = ctx.in(0);
  int64_t r = x.rank();
  int64_t start = ctx.step.getInt("start", 0);
  int64_t end = ctx.step.getInt("end", r);
  if (start < 0)
    start += r;
  if (end < 0)
    end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, start, r);
  std::vector<int64_t> dims(x.shape.begin() + start, x.shape.begin() + end);
  ctx.setResult(0, fromInts(dims, {int64_t(dims.size())}));
  return Status::ok();
}

Status runGather(StepContext &ctx) {
  const Tensor &data = ctx.in(0);
  const Tensor &idx = ctx.in(1);
  if (!isInt(idx.type))
    return ctx.error("indices must be integers");
  int64_t axis = ctx.step.getInt("axis", 0);
  if (Status s = normAxis(ctx, axis, data.rank()); !s)
    return s;
  int64_t outer = numelOf(Shape(data.shape.begin(), data.shape.begin() + axis));
  int64_t n = data.shape[size_t(axis)];
  int64_t inner =
      numelOf(Shape(data.shape.begin() + axis + 1, data.shape.end()));
  Shape outShape(data.shape.begin(), data.shape.begin() + axis);
  outShape.insert(outShape.end(), idx.shape.begin(), idx.shape.end());
  outShape.insert(outShape.end(), data.shape.begin() + axis + 1,
                  data.shape.end());
  Tensor out = Tensor::empty(data.type, outShape);
  size_t es = plan::elemTypeSize(data.type);
  int64_t numIdx = idx.numel();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < numIdx; ++j) {
      int64_t i = idx.intAt(j);
      if (i < 0)
        i += n;
      if (i < 0 || i >= n)
        return ctx.error("index " + std::to_string(idx.intAt(j)) +
                         " is out of range for a dim of " + std::to_string(n));
      std::memcpy(static_cast<char *>(out.data) +
                      size_t((o * numIdx + j) * inner) * es,
                  static_cast<const char *>(data.data) +
                      size_t((o * n + i) * inner) * es,
                  size_t(inner) * es);
    }
  ctx.setResult(0, std::move(out));
  return Status::ok();
}

/// Axes from the second operand (opset 13) or the `axes` attribute.
std::vector<int64_t> axesOf(const StepContext &ctx) {
  if (ctx.has(1))
    return ctx.in(1).ints();
  return ctx.step.getInts("axes");
}

Status runUnsqueeze(StepContext &ctx) {
  const Tensor &x = ctx.in(0);
  std::vector<int64_t> axes = axesOf(ctx);
  int64_t outRank = x.rank() + int64_t(axes.size());
  for (int64_t &a : axes)
    if (Status s = normAxis(ctx, a, outRank); !s)
      return s;
  std::sort(axes.begin(), axes.end());
  Shape shape;
  size_t src = 0;
  for (int64_t d = 0; d < outRank; ++d) {
    if (std::binary_search(axes.begin(), axes.end(), d))
      shape.push_back(1);
    else if (src < x.shape.size())
      shape.push_back(x.shape[src++]);
    else
      return ctx.error("repeated axes");
  }
  ctx.setResult(0, x.view(shape));
  return Status::ok();
}

Status runSqueeze(StepContext &ctx) {
  const Tensor &x = ctx.in(0);
  std::vector<int64_t> axes = axesOf(ctx);
  for (int64_t &a : axes)
    if (Status s = normAxis(ctx, a, x.rank()); !s)
      return s;
  Shape shape;
  for (int64_t d = 0; d < x.rank(); ++d) {
    bool listed = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (listed && x.shape[size_t(d)] != 1)
      return ctx.error("cannot squeeze dim " + std::to_string(d) + " of size " +
                       std::to_string(x.shape[size_t(d)]));
    if (!(listed || (axes.empty() && x.shape[size_t(d)] == 1)))
      shape.push_back(x.shape[size_t(d)]);
  }
  ctx.setResult(0, x.view(shape));
  return Status::ok();
}

Status runConcat(StepContext &ctx) {
  const Tensor &first = ctx.in(0);
  int64_t axis = ctx.step.getInt("axis", 0);
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
  Tensor out = Tensor::empty(first.type, shape);
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

Status runReshape(StepContext &ctx) {
  const Tensor &x = ctx.in(0);
  std::vector<int64_t> target = ctx.in(1).ints();
  bool allowZero = ctx.step.getInt("allowzero", 0) != 0;
  Shape shape;
  int64_t inferred = -1, known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == 0 && !allowZero) {
      if (i >= x.shape.size())
        return ctx.error("a 0 in the shape names a missing input dim");
      d = x.shape[i];
    }
    if (d == -1) {
      if (inferred >= 0)
        return ctx.error("more than one -1 in the shape");
      inferred = int64_t(i);
      d = 1;
    } else if (d < 0) {
      return ctx.error("negative dim " + std::to_string(d) + " in the shape");
    }
    known *= d;
    shape.push_back(d);
  }
  if (inferred >= 0) {
    if (known == 0 || x.numel() % known != 0)
      return ctx.error("cannot reshape " + shapeString(x.shape) + " to " +
                       shapeString(target));
    shape[size_t(inferred)] = x.numel() / known;
  }
  if (numelOf(shape) != x.numel())
    return ctx.error("cannot reshape " + shapeString(x.shape) + " (" +
                     std::to_string(x.numel()) + " elements) to " +
                     shapeString(shape));
  ctx.setResult(0, x.view(shape));
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
  std::vector<int64_t> perm = ctx.step.getInts("perm");
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
  Tensor out = Tensor::empty(x.type, shape);
  copyStrided(static_cast<const char *>(x.data), static_cast<char *>(out.data),
              dims, stride, 0, plan::elemTypeSize(x.type), ctx.pool);
  ctx.setResult(0, std::move(out));
  return Status::ok();
}

Status runSlice(StepContext &ctx) {
  const Tensor &x = ctx.in(0);
  std::vector<int64_t> starts = ctx.in(1).ints(), ends = ctx.in(2).ints();
  std::vector<int64_t> axes, steps;
  if (ctx.has(3))
    axes = ctx.in(3).ints();
  else
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(int64_t(i));
  if (ctx.has(4))
    steps = ctx.in(4).ints();
  else
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return ctx.error("starts, ends, axes and steps differ in length");
  int64_t r = x.rank();
  std::vector<int64_t> begin(size_t(r), 0), step(size_t(r), 1);
  Shape shape = x.shape;
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = axes[i];
    if (Status s = normAxis(ctx, a, r); !s)
      return s;
    int64_t dim = x.shape[size_t(a)], st = steps[i];
    if (st == 0)
      return ctx.error("slice step 0");
    int64_t b = starts[i], e = ends[i];
    if (b < 0)
      b += dim;
    if (e < 0)
      e += dim;
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      shape[size_t(a)] = e > b ? (e - b + st - 1) / st : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      shape[size_t(a)] = b > e ? (b - e - st - 1) / -st : 0;
    }
    begin[size_t(a)] = b;
    step[size_t(a)] = st;
  }
  Tensor out = Tensor::empty(x.type, shape);
  // Output dim d walks the input from begin[d] by step[d] rows of that dim.
  std::vector<int64_t> dims(shape), stride(size_t(r), 1);
  int64_t offset = 0, acc = 1;
  for (int64_t d = r - 1; d >= 0; --d) {
    stride[size_t(d)] = acc * step[size_t(d)];
    offset += begin[size_t(d)] * acc;
    acc *= x.shape[size_t(d)];
  }
  if (r == 0) { // a scalar slices to itself
    dims = {1};
    stride = {1};
  }
  copyStrided(static_cast<const char *>(x.data), static_cast<char *>(out.data),
              dims, stride, offset, plan::elemTypeSize(x.type), ctx.pool);
  ctx.setResult(0, std::move(out));
  return Status::ok();
}

Status runSplit(StepContext &ctx) {
  const Tensor &x = ctx.in(0);
  int64_t axis = ctx.step.getInt("axis", 0);
  if (Status s = normAxis(ctx, axis, x.rank()); !s)
    return s;
  size_t numOut = ctx.step.results.size();
  int64_t dim = x.shape[size_t(axis)];
  std::vector<int64_t> sizes;
  if (ctx.has(1)) {
    sizes = ctx.in(1).ints();
  } else {
    sizes = ctx.step.getInts("split");
    if (sizes.empty()) {
      int64_t chunk = (dim + int64_t(numOut) - 1) / int64_t(numOut);
      for (size_t i = 0; i < numOut; ++i)
        sizes.push_back(std::min(chunk, dim - chunk * int64_t(i)));
    }
  }
  int64_t total = 0;
  for (int64_t s : sizes)
    total += s;
  if (sizes.size() != numOut || total != dim)
    return ctx.error("split sizes do not cover dim " + std::to_string(dim));
  int64_t outer = numelOf(Shape(x.shape.begin(), x.shape.begin() + axis));
  int64_t inner = numelOf(Shape(x.shape.begin() + axis + 1, x.shape.end()));
  size_t es = plan::elemTypeSize(x.type);
  int64_t startRow = 0;
  for (size_t i = 0; i < numOut; ++i) {
    Shape shape = x.shape;
    shape[size_t(axis)] = sizes[i];
    Tensor out = Tensor::empty(x.type, shape);
    size_t chunk = size_t(sizes[i] * inner) * es;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<char *>(out.data) + size_t(o) * chunk,
                  static_cast<const char *>(x.data) +
                      size_t((o * dim + startRow) * inner) * es,
                  chunk);
    startRow += sizes[i];
    ctx.setResult(i, std::move(out));
  }
  return Status::ok();
}

} // namespace

const std::vector<StepKernel> &onnxShapeStepKernels();
const std::vector<StepKernel> &onnxShapeStepKernels() {
  static const std::vector<StepKernel> table = {
      {"onnx.Shape", runShape, nullptr, 1, 1},
      {"onnx.Gather", runGather, nullptr, 2, 2},
      {"onnx.Unsqueeze", runUnsqueeze, nullptr, 1, 2},
      {"onnx.Squeeze", runSqueeze, nullptr, 1, 2},
      {"onnx.Concat", runConcat, nullptr, 1, 1 << 20},
      {"onnx.Reshape", runReshape, nullptr, 2, 2},
      {"onnx.Transpose", runTranspose, nullptr, 1, 1},
      {"onnx.Slice", runSlice, nullptr, 3, 5},
      {"onnx.Split", runSplit, nullptr, 1, 2},
  };
  return table;
}

} // namespace folio::exec
