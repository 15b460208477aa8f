//===- FusedKernels.cpp - Fused kernels of the CPU executor ---------------===//
//
// add_rms_norm / add_layer_norm: the residual add and the norm in one pass
// over the rows (codegen/CPU addRmsNorm). linear_epilogue,
// gather_rows_linear and elementwise: the leading steps (gather, norm,
// linear) as usual, then the trailing pointwise chain in one pass over its
// output instead of one pass per op (a written-out GELU is eight).
//
//===----------------------------------------------------------------------===//

#include "runtime/Executor/FusedKernels.h"

#include "codegen/CPU/Norm.h"

namespace folio::exec {

Status FusedContext::error(const std::string &message) const {
  return Status::invalidArgument("kernel '" + kernel.kind + "': " + message);
}

namespace {

const plan::Step &stepAt(const plan::Plan &p, int32_t i) {
  return p.steps[size_t(i)];
}

int32_t prepareAddNorm(const plan::Plan &p, const plan::Kernel &k) {
  if (k.numSteps != 2)
    return -1;
  const plan::Step &add = stepAt(p, k.firstStep);
  const plan::Step &norm = stepAt(p, k.firstStep + 1);
  bool rms = norm.kind == "rms_norm";
  bool ok = add.kind == "binary" && add.getString("kind", "") == "add" &&
            add.operands.size() == 2 && add.operands[0] >= 0 &&
            add.operands[1] >= 0 && add.results.size() == 1 &&
            (rms || norm.kind == "layer_norm") && !norm.operands.empty() &&
            norm.operands[0] == add.results[0] && norm.operands.size() >= 2 &&
            norm.operands[1] >= 0 && norm.results.size() == 1;
  return ok ? k.firstStep : -1;
}

Status runAddNorm(FusedContext &ctx) {
  const plan::Plan &p = ctx.plan;
  const plan::Step &add = stepAt(p, ctx.kernel.firstStep);
  const plan::Step &norm = stepAt(p, ctx.kernel.firstStep + 1);
  const Tensor &a = ctx.values[size_t(add.operands[0])];
  const Tensor &b = ctx.values[size_t(add.operands[1])];
  const Tensor &w = ctx.values[size_t(norm.operands[1])];
  int64_t dim = w.numel();
  const Tensor *bias = norm.kind == "layer_norm" && norm.operands.size() > 2 &&
                               norm.operands[2] >= 0
                           ? &ctx.values[size_t(norm.operands[2])]
                           : nullptr;
  // The fused form: same shapes (no broadcast), f32, whole rows; anything
  // else runs step by step, where each kernel checks its operands.
  if (a.type != ElemType::F32 || b.type != ElemType::F32 ||
      a.shape != b.shape || w.type != ElemType::F32 || a.rank() < 1 ||
      dim <= 0 || a.shape.back() != dim ||
      (bias && (bias->type != ElemType::F32 || bias->numel() != dim))) {
    for (int32_t i = ctx.kernel.firstStep;
         i < ctx.kernel.firstStep + ctx.kernel.numSteps; ++i)
      if (Status s = ctx.runStep(size_t(i)); !s)
        return s;
    return Status::ok();
  }
  auto output = [&](int32_t id) {
    return ctx.arena ? ctx.arena->make(id, ElemType::F32, a.shape)
                     : Tensor::empty(ElemType::F32, a.shape);
  };
  Tensor sum = output(add.results[0]);
  Tensor y = output(norm.results[0]);
  int64_t rows = a.numel() / dim;
  float eps = float(norm.getFloat("epsilon", 1e-5));
  cpu::Status s =
      norm.kind == "rms_norm"
          ? cpu::addRmsNorm(a.as<float>(), b.as<float>(), sum.as<float>(),
                            w.as<float>(), y.as<float>(), rows, dim, eps,
                            float(norm.getFloat("weight_offset", 0.0)),
                            ctx.pool)
          : cpu::addLayerNorm(a.as<float>(), b.as<float>(), sum.as<float>(),
                              w.as<float>(), bias ? bias->as<float>() : nullptr,
                              y.as<float>(), rows, dim, eps, ctx.pool);
  if (!s.ok())
    return ctx.error(s.message());
  ctx.values[size_t(add.results[0])] = std::move(sum);
  ctx.values[size_t(norm.results[0])] = std::move(y);
  return Status::ok();
}

/// The first step of the trailing pointwise chain, or -1 when there is
/// none worth fusing (fewer than two ops).
int32_t prepareWithChain(const plan::Plan &p, const plan::Kernel &k) {
  int32_t end = k.firstStep + k.numSteps, first = end;
  while (first > k.firstStep && isPointwiseChain(p, first - 1, first))
    --first;
  return end - first >= 2 ? first : -1;
}

Status runWithChain(FusedContext &ctx) {
  const plan::Kernel &k = ctx.kernel;
  int32_t first = ctx.fusedFirst, end = k.firstStep + k.numSteps;
  for (int32_t i = k.firstStep; i < first; ++i)
    if (Status s = ctx.runStep(size_t(i)); !s)
      return s;
  bool done = false;
  if (Status s = runPointwiseChain(ctx, first, end, done); !s)
    return s;
  if (!done)
    for (int32_t i = first; i < end; ++i)
      if (Status s = ctx.runStep(size_t(i)); !s)
        return s;
  return Status::ok();
}

const FusedKernel kFused[] = {
    {"add_rms_norm", prepareAddNorm, runAddNorm},
    {"add_layer_norm", prepareAddNorm, runAddNorm},
    {"linear_epilogue", prepareWithChain, runWithChain},
    {"gather_rows_linear", prepareWithChain, runWithChain},
    {"elementwise", prepareWithChain, runWithChain},
};

} // namespace

const FusedKernel *findFusedCPUKernel(const plan::Plan &plan,
                                      const plan::Kernel &kernel,
                                      int32_t *fusedFirst) {
  for (const FusedKernel &f : kFused) {
    if (kernel.kind != f.kind)
      continue;
    int32_t first = f.prepare(plan, kernel);
    if (first < 0)
      continue;
    if (fusedFirst)
      *fusedFirst = first;
    return &f;
  }
  return nullptr;
}

} // namespace folio::exec
