//===- InferHelpers.cpp - Building blocks shared by the handlers ----------===//

#include "compiler/ONNXOps/InferHelpers.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::folio;
using namespace mlir::folio::infer;

Dims infer::constDims(ONNXInferenceContext &ctx, ArrayRef<int64_t> values) {
  Dims dims;
  for (int64_t v : values)
    dims.push_back(cst(ctx, v));
  return dims;
}

bool infer::isProvablyNonNegative(AffineExpr expr) {
  if (!expr)
    return false;
  if (auto c = dyn_cast<AffineConstantExpr>(expr))
    return c.getValue() >= 0;
  if (isa<AffineSymbolExpr, AffineDimExpr>(expr))
    return true;
  auto bin = cast<AffineBinaryOpExpr>(expr);
  switch (expr.getKind()) {
  case AffineExprKind::Add:
  case AffineExprKind::Mul:
    return isProvablyNonNegative(bin.getLHS()) &&
           isProvablyNonNegative(bin.getRHS());
  case AffineExprKind::FloorDiv:
  case AffineExprKind::CeilDiv:
  case AffineExprKind::Mod: {
    std::optional<int64_t> d = getConstantDim(bin.getRHS());
    return d && *d > 0 && isProvablyNonNegative(bin.getLHS());
  }
  default:
    return false;
  }
}

std::optional<int> infer::compareDims(AffineExpr a, AffineExpr b) {
  if (!a || !b)
    return std::nullopt;
  if (a == b)
    return 0;
  AffineExpr one = getAffineConstantExpr(1, a.getContext());
  if (isProvablyNonNegative(a - b - one))
    return 1;
  if (isProvablyNonNegative(b - a - one))
    return -1;
  return std::nullopt;
}

/// Broadcasts two dims; `failed` for two different constants other than 1.
static FailureOr<AffineExpr> broadcastDim(AffineExpr a, AffineExpr b) {
  std::optional<int64_t> ca = getConstantDim(a), cb = getConstantDim(b);
  if (ca == 1)
    return b;
  if (cb == 1)
    return a;
  if (a && b && a == b)
    return a;
  if (ca && cb)
    return failure();
  // A constant other than 1 decides it; two unknowns stay unknown.
  if (ca)
    return a;
  if (cb)
    return b;
  return AffineExpr();
}

FailureOr<std::optional<Dims>>
infer::broadcastInputs(ONNXInferenceContext &ctx,
                       ArrayRef<const ONNXValueFacts *> operands) {
  Dims result;
  for (const ONNXValueFacts *operand : operands) {
    if (!operand)
      continue;
    if (!operand->dims)
      return std::optional<Dims>();
    const Dims &dims = *operand->dims;
    if (dims.size() > result.size())
      result.insert(result.begin(), dims.size() - result.size(), cst(ctx, 1));
    size_t offset = result.size() - dims.size();
    for (size_t i = 0; i < dims.size(); ++i) {
      FailureOr<AffineExpr> merged = broadcastDim(result[offset + i], dims[i]);
      if (failed(merged))
        return ctx.emitError()
               << "inputs cannot be broadcast: dim " << offset + i << " is "
               << ctx.getEngine().describe(result[offset + i]) << " vs "
               << ctx.getEngine().describe(dims[i]);
      result[offset + i] = *merged;
    }
  }
  return std::optional<Dims>(result);
}

FailureOr<std::optional<Dims>>
infer::shapeInputDims(ONNXInferenceContext &ctx, const ONNXValueFacts &shape,
                      StringRef what) {
  if (shape.ints)
    return std::optional<Dims>(*shape.ints);
  if (!shape.dims || shape.dims->size() != 1)
    return std::optional<Dims>();
  std::optional<int64_t> length = getConstantDim(shape.dims->front());
  if (!length)
    return std::optional<Dims>();
  if (*length < 0 || *length > kMaxRank)
    return ctx.emitError() << what << " has " << *length
                           << " elements, so the result would have rank "
                           << *length << "; Folio supports ranks up to "
                           << kMaxRank;
  return std::optional<Dims>(Dims(*length, AffineExpr()));
}

void infer::passThrough(ONNXInferenceContext &ctx, unsigned i, unsigned o) {
  ctx.output(o).elementType = ctx.input(i).elementType;
  ctx.output(o).dims = ctx.input(i).dims;
}

/// `fn` applied to the vectors' elements under broadcasting: a length-1
/// vector repeats; the others must have one length, which may be 0 (an
/// empty operand gives an empty result); nullopt if they differ.
template <typename T>
static std::optional<SmallVector<T, 4>>
zipBroadcast(ArrayRef<const SmallVector<T, 4> *> vectors,
             std::function<std::optional<T>(ArrayRef<T>)> fn) {
  std::optional<size_t> length;
  for (const auto *v : vectors) {
    if (v->size() == 1)
      continue;
    if (length && *length != v->size())
      return std::nullopt;
    length = v->size();
  }
  size_t n = length.value_or(1);
  SmallVector<T, 4> out;
  for (size_t i = 0; i < n; ++i) {
    SmallVector<T, 4> args;
    for (const auto *v : vectors)
      args.push_back((*v)[v->size() == 1 ? 0 : i]);
    std::optional<T> value = fn(args);
    if (!value)
      return std::nullopt;
    out.push_back(*value);
  }
  return out;
}

LogicalResult infer::inferElementwise(ONNXInferenceContext &ctx,
                                      Type resultElement, IntFold intFold,
                                      FloatFold floatFold) {
  SmallVector<const ONNXValueFacts *> operands;
  for (unsigned i = 0; i < ctx.getNumInputs(); ++i)
    if (ctx.hasInput(i))
      operands.push_back(&ctx.input(i));
  FailureOr<std::optional<Dims>> dims = broadcastInputs(ctx, operands);
  if (failed(dims))
    return failure();
  ONNXValueFacts &out = ctx.output(0);
  out.elementType = resultElement;
  out.dims = *dims;
  if (operands.size() != 2 || !out.dims || out.dims->size() > 1)
    return success();
  const ONNXValueFacts &a = *operands[0], &b = *operands[1];
  if (intFold && a.ints && b.ints) {
    out.ints = zipBroadcast<AffineExpr>(
        {&*a.ints, &*b.ints},
        [&](ArrayRef<AffineExpr> xs) -> std::optional<AffineExpr> {
          if (!xs[0] || !xs[1])
            return AffineExpr();
          return intFold(xs[0], xs[1]);
        });
  } else if (floatFold && a.floats && b.floats) {
    out.floats = zipBroadcast<double>(
        {&*a.floats, &*b.floats},
        [&](ArrayRef<double> xs) { return floatFold(xs[0], xs[1]); });
  }
  return success();
}

LogicalResult infer::inferUnaryFloat(ONNXInferenceContext &ctx,
                                     std::function<double(double)> fn) {
  if (failed(requireFloat(ctx, 0, "input")))
    return failure();
  passThrough(ctx);
  if (ctx.input(0).floats) {
    SmallVector<double, 4> values;
    for (double v : *ctx.input(0).floats)
      values.push_back(fn(v));
    ctx.output(0).floats = values;
  }
  return success();
}

FailureOr<SmallVector<int64_t>>
infer::requireConstantInts(ONNXInferenceContext &ctx, unsigned i,
                           StringRef what) {
  std::optional<SmallVector<int64_t, 4>> values =
      ctx.hasInput(i) ? ctx.input(i).getConstantInts() : std::nullopt;
  if (!values)
    return ctx.emitError() << what
                           << " must be a constant (or computable from "
                              "shapes) integer tensor";
  return SmallVector<int64_t>(values->begin(), values->end());
}

LogicalResult infer::requireFloat(ONNXInferenceContext &ctx, unsigned i,
                                  StringRef what) {
  if (isa<FloatType>(ctx.input(i).elementType))
    return success();
  return ctx.emitError() << what << " must be a float tensor, got element type "
                         << ctx.input(i).elementType;
}

Type infer::elementTypeFromONNX(MLIRContext *context, int64_t onnxType) {
  Builder b(context);
  switch (onnxType) {
  case 1:
    return b.getF32Type();
  case 2:
    return IntegerType::get(context, 8, IntegerType::Unsigned);
  case 3:
    return b.getIntegerType(8);
  case 4:
    return IntegerType::get(context, 16, IntegerType::Unsigned);
  case 5:
    return b.getIntegerType(16);
  case 6:
    return b.getIntegerType(32);
  case 7:
    return b.getIntegerType(64);
  case 9:
    return b.getI1Type();
  case 10:
    return b.getF16Type();
  case 11:
    return b.getF64Type();
  case 12:
    return IntegerType::get(context, 32, IntegerType::Unsigned);
  case 13:
    return IntegerType::get(context, 64, IntegerType::Unsigned);
  case 16:
    return b.getBF16Type();
  case 17:
    return b.getFloat8E4M3FNType();
  case 19:
    return b.getFloat8E5M2Type();
  case 21:
    return IntegerType::get(context, 4, IntegerType::Unsigned);
  case 22:
    return b.getIntegerType(4);
  default:
    return Type();
  }
}
