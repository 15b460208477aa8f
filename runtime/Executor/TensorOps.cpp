//===- TensorOps.cpp - Views and casts from the tensor/arith dialects
//------===//
//
// page-kv bridges the batch x seq layout of the imported graph and the flat
// token layout of the serving contract with tensor.expand_shape /
// collapse_shape / cast; on row-major data they are views, so they cost
// nothing here.
//
//===----------------------------------------------------------------------===//

#include "runtime/Executor/StepKernel.h"

namespace folio::exec {
namespace {

Status runDim(StepContext &ctx) {
  const Tensor &x = ctx.in(0);
  int64_t d = ctx.in(1).intAt(0);
  if (d < 0 || d >= x.rank())
    return ctx.error("dim " + std::to_string(d) + " of a rank-" +
                     std::to_string(x.rank()) + " tensor");
  Tensor out = Tensor::allocate(ElemType::I64, {});
  out.as<int64_t>()[0] = x.shape[size_t(d)];
  ctx.setResult(0, std::move(out));
  return Status::ok();
}

Status runCast(StepContext &ctx) {
  ctx.setResult(0, ctx.in(0));
  return Status::ok();
}

Status runExpandShape(StepContext &ctx) {
  const Tensor &x = ctx.in(0);
  std::vector<int64_t> shape = ctx.step.getInts("static_output_shape");
  size_t next = 1;
  for (int64_t &d : shape)
    if (d < 0) {
      if (next >= ctx.numOperands())
        return ctx.error("too few dynamic output sizes");
      d = ctx.in(next++).intAt(0);
    }
  if (numelOf(shape) != x.numel())
    return ctx.error("cannot expand " + shapeString(x.shape) + " into " +
                     shapeString(shape));
  ctx.setResult(0, x.view(shape));
  return Status::ok();
}

Status runCollapseShape(StepContext &ctx) {
  const Tensor &x = ctx.in(0);
  std::vector<int64_t> groups = ctx.step.getInts("group_sizes");
  Shape shape;
  size_t d = 0;
  for (int64_t g : groups) {
    int64_t n = 1;
    for (int64_t i = 0; i < g; ++i) {
      if (d >= x.shape.size())
        return ctx.error("reassociation covers more dims than the input has");
      n *= x.shape[d++];
    }
    shape.push_back(n);
  }
  if (d != x.shape.size())
    return ctx.error("reassociation does not cover every input dim");
  ctx.setResult(0, x.view(shape));
  return Status::ok();
}

/// Integer widening/narrowing to the result type named by `to`.
Status runIntCast(StepContext &ctx) {
  const Tensor &x = ctx.in(0);
  std::string to = ctx.step.getString("to", "i64");
  ElemType type = to == "i32" ? ElemType::I32 : ElemType::I64;
  if (x.type != ElemType::I32 && x.type != ElemType::I64)
    return ctx.error("expects an integer tensor");
  Tensor out = Tensor::allocate(type, x.shape);
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    if (type == ElemType::I64)
      out.as<int64_t>()[i] = x.intAt(i);
    else
      out.as<int32_t>()[i] = int32_t(x.intAt(i));
  }
  ctx.setResult(0, std::move(out));
  return Status::ok();
}

} // namespace

const std::vector<StepKernel> &tensorStepKernels() {
  static const std::vector<StepKernel> table = {
      {"tensor.dim", runDim, nullptr, 2, 2},
      {"tensor.cast", runCast, nullptr, 1, 1},
      {"tensor.expand_shape", runExpandShape, nullptr, 1, 1 << 20},
      {"tensor.collapse_shape", runCollapseShape, nullptr, 1, 1},
      {"arith.extsi", runIntCast, nullptr, 1, 1},
      {"arith.trunci", runIntCast, nullptr, 1, 1},
      {"arith.index_cast", runIntCast, nullptr, 1, 1},
  };
  return table;
}

} // namespace folio::exec
