//===- DefaultDomainAtoF.cpp - ai.onnx ops A to F -------------------------===//

#include "compiler/ONNXOps/InferHelpers.h"

#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using namespace mlir::folio;
using namespace mlir::folio::infer;

namespace {

LogicalResult inferAdd(ONNXInferenceContext &ctx) {
  return inferElementwise(
      ctx, ctx.input(0).elementType,
      [](AffineExpr a, AffineExpr b) { return a + b; },
      [](double a, double b) -> std::optional<double> { return a + b; });
}

LogicalResult inferDiv(ONNXInferenceContext &ctx) {
  return inferElementwise(
      ctx, ctx.input(0).elementType,
      [](AffineExpr a, AffineExpr b) -> AffineExpr {
        // ONNX integer Div truncates; dims are non-negative, so floor
        // division agrees whenever the divisor is a positive constant.
        std::optional<int64_t> divisor = getConstantDim(b);
        if (!divisor || *divisor <= 0)
          return AffineExpr();
        std::optional<int64_t> dividend = getConstantDim(a);
        if (dividend && *dividend < 0)
          return getAffineConstantExpr(*dividend / *divisor, a.getContext());
        return a.floorDiv(*divisor);
      },
      [](double a, double b) -> std::optional<double> { return a / b; });
}

LogicalResult inferLogical(ONNXInferenceContext &ctx, bool isAnd) {
  for (unsigned i = 0; i < 2; ++i)
    if (!ctx.input(i).elementType.isInteger(1))
      return ctx.emitError() << "input " << i << " must be bool";
  return inferElementwise(
      ctx, IntegerType::get(ctx.getContext(), 1),
      [isAnd](AffineExpr a, AffineExpr b) -> AffineExpr {
        std::optional<int64_t> ca = getConstantDim(a), cb = getConstantDim(b);
        if (!ca || !cb)
          return AffineExpr();
        bool value = isAnd ? (*ca && *cb) : (*ca || *cb);
        return getAffineConstantExpr(value, a.getContext());
      },
      nullptr);
}

LogicalResult inferAnd(ONNXInferenceContext &ctx) {
  return inferLogical(ctx, /*isAnd=*/true);
}

LogicalResult inferCast(ONNXInferenceContext &ctx) {
  FailureOr<int64_t> to = ctx.getInt("to");
  if (failed(to))
    return failure();
  Type element = elementTypeFromONNX(ctx.getContext(), *to);
  if (!element)
    return ctx.emitError() << "unsupported target type " << *to
                           << " (supported: float, float16, bfloat16, double, "
                              "int8..int64, uint8..uint64, bool, fp8)";
  passThrough(ctx);
  ONNXValueFacts &out = ctx.output(0);
  out.elementType = element;
  const ONNXValueFacts &in = ctx.input(0);
  if (isIntegerLike(element)) {
    if (in.ints && element.isInteger(1)) {
      out.ints.emplace();
      for (AffineExpr v : *in.ints) {
        std::optional<int64_t> c = getConstantDim(v);
        out.ints->push_back(c ? cst(ctx, *c != 0) : AffineExpr());
      }
    } else if (in.ints) {
      out.ints = in.ints;
    } else if (in.floats && in.floats->size() <= 1) {
      out.ints.emplace();
      // A value outside int64 (or NaN) has no defined conversion: it stays
      // unknown rather than folding to whatever the host's cast gives.
      for (double v : *in.floats)
        out.ints->push_back(v >= -0x1p63 && v < 0x1p63
                                ? cst(ctx, int64_t(std::trunc(v)))
                                : AffineExpr());
    }
  } else if (isa<FloatType>(element) && in.ints) {
    std::optional<SmallVector<int64_t, 4>> values = in.getConstantInts();
    if (values)
      out.floats = SmallVector<double, 4>(values->begin(), values->end());
  } else if (isa<FloatType>(element)) {
    out.floats = in.floats;
  }
  return success();
}

LogicalResult inferConcat(ONNXInferenceContext &ctx) {
  FailureOr<int64_t> axisAttr = ctx.getInt("axis");
  if (failed(axisAttr))
    return failure();
  const ONNXValueFacts &first = ctx.input(0);
  ONNXValueFacts &out = ctx.output(0);
  out.elementType = first.elementType;
  std::optional<int64_t> rank;
  for (unsigned i = 0; i < ctx.getNumInputs(); ++i) {
    if (!ctx.hasInput(i))
      continue;
    if (ctx.input(i).elementType != first.elementType)
      return ctx.emitError() << "input " << i << " has element type "
                             << ctx.input(i).elementType << ", input 0 has "
                             << first.elementType;
    if (std::optional<int64_t> r = ctx.input(i).getRank()) {
      if (rank && *rank != *r)
        return ctx.emitError() << "inputs have different ranks (" << *rank
                               << " and " << *r << ")";
      rank = r;
    }
  }
  if (!rank)
    return success();
  FailureOr<int64_t> axis = ctx.normalizeAxis(*axisAttr, *rank, "axis");
  if (failed(axis))
    return failure();
  Dims dims;
  AffineExpr total = cst(ctx, 0);
  bool valuesKnown = *rank == 1;
  SmallVector<AffineExpr, 4> values;
  for (unsigned i = 0; i < ctx.getNumInputs(); ++i) {
    const ONNXValueFacts &in = ctx.input(i);
    if (!in.dims) {
      total = AffineExpr();
      valuesKnown = false;
      continue;
    }
    if (dims.empty())
      dims = *in.dims;
    // ONNX requires the inputs to agree off the axis: a constant dim of one
    // input is that dim of all (GenAI's past names its head dim,
    // kv_cache_dim, that the new keys have as a constant).
    for (int64_t d = 0; d < *rank; ++d)
      if (d != *axis && (*in.dims)[d] &&
          (!dims[d] ||
           (!getConstantDim(dims[d]) && getConstantDim((*in.dims)[d]))))
        dims[d] = (*in.dims)[d];
    AffineExpr piece = (*in.dims)[*axis];
    total = total && piece ? total + piece : AffineExpr();
    if (valuesKnown && in.ints)
      values.append(in.ints->begin(), in.ints->end());
    else
      valuesKnown = false;
  }
  dims[*axis] = total;
  out.dims = dims;
  if (valuesKnown && values.size() <= size_t(kMaxTrackedElements))
    out.ints = values;
  return success();
}

LogicalResult inferConstant(ONNXInferenceContext &ctx) {
  ONNXValueFacts &out = ctx.output(0);
  Builder b(ctx.getContext());
  auto setScalars = [&](Type element, SmallVector<int64_t> shape) {
    out.elementType = element;
    out.dims = constDims(ctx, shape);
  };
  if (ctx.hasAttr("value")) {
    FailureOr<ElementsAttr> value = ctx.getTensor("value");
    if (failed(value))
      return failure();
    out = ctx.getEngine().factsForConstant(*value);
    return success();
  }
  if (ctx.hasAttr("value_int")) {
    FailureOr<int64_t> v = ctx.getInt("value_int");
    if (failed(v))
      return failure();
    setScalars(b.getI64Type(), {});
    out.ints = Dims{cst(ctx, *v)};
    return success();
  }
  if (ctx.hasAttr("value_ints")) {
    FailureOr<SmallVector<int64_t>> v = ctx.getInts("value_ints");
    if (failed(v))
      return failure();
    setScalars(b.getI64Type(), {int64_t(v->size())});
    if (v->size() <= size_t(kMaxTrackedElements))
      out.ints = constDims(ctx, *v);
    return success();
  }
  if (ctx.hasAttr("value_float")) {
    FailureOr<double> v = ctx.getFloat("value_float");
    if (failed(v))
      return failure();
    setScalars(b.getF32Type(), {});
    out.floats = SmallVector<double, 4>{*v};
    return success();
  }
  if (auto floats =
          ctx.getAttributes().getAs<DenseF32ArrayAttr>("value_floats")) {
    setScalars(b.getF32Type(), {int64_t(floats.size())});
    if (floats.size() <= kMaxTrackedElements)
      out.floats = SmallVector<double, 4>(floats.asArrayRef().begin(),
                                          floats.asArrayRef().end());
    return success();
  }
  return ctx.emitError() << "needs one of the attributes value, value_int, "
                            "value_ints, value_float, value_floats (strings "
                            "and sparse tensors are not supported)";
}

LogicalResult inferConstantOfShape(ONNXInferenceContext &ctx) {
  const ONNXValueFacts &shape = ctx.input(0);
  if (!isIntegerLike(shape.elementType) || shape.getRank() != 1)
    return ctx.emitError() << "input must be a 1-D int64 shape";
  ONNXValueFacts &out = ctx.output(0);
  out.elementType = Builder(ctx.getContext()).getF32Type();
  // The fill value, kept as an integer for integer outputs: a double holds
  // int64 exactly only up to 2^53.
  std::optional<double> fill = 0.0;
  std::optional<int64_t> intFill = 0;
  if (ctx.hasAttr("value")) {
    FailureOr<ElementsAttr> value = ctx.getTensor("value");
    if (failed(value))
      return failure();
    ONNXValueFacts valueFacts = ctx.getEngine().factsForConstant(*value);
    out.elementType = valueFacts.elementType;
    intFill.reset();
    fill.reset();
    if (valueFacts.floats && valueFacts.floats->size() == 1) {
      fill = (*valueFacts.floats)[0];
    } else if (valueFacts.ints && valueFacts.ints->size() == 1) {
      intFill = getConstantDim((*valueFacts.ints)[0]);
      if (intFill)
        fill = double(*intFill);
    }
  }
  FailureOr<std::optional<Dims>> dims =
      shapeInputDims(ctx, shape, "shape input");
  if (failed(dims))
    return failure();
  out.dims = *dims;
  // Small fills are tracked so that mask and shape arithmetic folds.
  std::optional<int64_t> count = out.getStaticNumElements();
  if (count && *count <= kMaxTrackedElements && out.dims->size() <= 1) {
    if (isIntegerLike(out.elementType) && intFill)
      out.ints = Dims(*count, cst(ctx, *intFill));
    else if (!isIntegerLike(out.elementType) && fill)
      out.floats = SmallVector<double, 4>(*count, *fill);
  }
  return success();
}

LogicalResult inferCos(ONNXInferenceContext &ctx) {
  return inferUnaryFloat(ctx, [](double x) { return std::cos(x); });
}

LogicalResult inferCumSum(ONNXInferenceContext &ctx) {
  const ONNXValueFacts &axis = ctx.input(1);
  if (!isIntegerLike(axis.elementType) ||
      (axis.getRank() && *axis.getRank() > 1))
    return ctx.emitError() << "axis input must be an integer scalar";
  passThrough(ctx);
  return success();
}

LogicalResult inferEqual(ONNXInferenceContext &ctx) {
  if (ctx.input(0).elementType != ctx.input(1).elementType)
    return ctx.emitError() << "inputs have different element types ("
                           << ctx.input(0).elementType << " and "
                           << ctx.input(1).elementType << ")";
  return inferElementwise(
      ctx, IntegerType::get(ctx.getContext(), 1),
      [](AffineExpr a, AffineExpr b) -> AffineExpr {
        std::optional<int> sign = compareDims(a, b);
        if (!sign)
          return AffineExpr();
        return getAffineConstantExpr(*sign == 0, a.getContext());
      },
      nullptr);
}

LogicalResult inferErf(ONNXInferenceContext &ctx) {
  return inferUnaryFloat(ctx, [](double x) { return std::erf(x); });
}

LogicalResult inferExp(ONNXInferenceContext &ctx) {
  return inferUnaryFloat(ctx, [](double x) { return std::exp(x); });
}

LogicalResult inferAbs(ONNXInferenceContext &ctx) {
  passThrough(ctx);
  if (ctx.input(0).floats) {
    SmallVector<double, 4> values;
    for (double v : *ctx.input(0).floats)
      values.push_back(std::fabs(v));
    ctx.output(0).floats = values;
  }
  return success();
}

LogicalResult inferExpand(ONNXInferenceContext &ctx) {
  const ONNXValueFacts &shape = ctx.input(1);
  if (!isIntegerLike(shape.elementType) || shape.getRank() != 1)
    return ctx.emitError() << "shape input must be a 1-D int64 tensor";
  ONNXValueFacts target;
  target.elementType = ctx.input(0).elementType;
  FailureOr<std::optional<Dims>> shapeDims =
      shapeInputDims(ctx, shape, "shape input");
  if (failed(shapeDims))
    return failure();
  target.dims = *shapeDims;
  FailureOr<std::optional<Dims>> dims =
      broadcastInputs(ctx, {&ctx.input(0), &target});
  if (failed(dims))
    return failure();
  ctx.output(0).elementType = ctx.input(0).elementType;
  ctx.output(0).dims = *dims;
  return success();
}

LogicalResult inferFlatten(ONNXInferenceContext &ctx) {
  ctx.output(0).elementType = ctx.input(0).elementType;
  const ONNXValueFacts &in = ctx.input(0);
  if (!in.dims)
    return success();
  FailureOr<int64_t> axisAttr = ctx.getInt("axis", 1);
  if (failed(axisAttr))
    return failure();
  int64_t rank = in.dims->size();
  int64_t axis = *axisAttr < 0 ? *axisAttr + rank : *axisAttr;
  if (axis < 0 || axis > rank)
    return ctx.emitError() << "axis " << *axisAttr
                           << " is out of range for rank " << rank;
  AffineExpr outer = cst(ctx, 1), inner = cst(ctx, 1);
  for (int64_t d = 0; d < rank; ++d) {
    AffineExpr &acc = d < axis ? outer : inner;
    AffineExpr dim = (*in.dims)[d];
    acc = acc && dim ? acc * dim : AffineExpr();
  }
  ctx.output(0).dims = Dims{outer, inner};
  return success();
}

/// DequantizeLinear: y = (x - x_zero_point) * x_scale, x's shape, the
/// scale's float type. Per tensor, per axis (opset 13) or blocked along
/// the axis (opset 21 block_size). Folio takes it over constant weights
/// (folio-raise-linear makes it a folio.dequantize the plan stores packed);
/// on activations, statically quantized graphs put a QuantizeLinear before
/// it, which the import refuses.
LogicalResult inferDequantizeLinear(ONNXInferenceContext &ctx) {
  const ONNXValueFacts &x = ctx.input(0), &scale = ctx.input(1);
  if (!isa<IntegerType>(x.elementType) && !isa<FloatType>(x.elementType))
    return ctx.emitError() << "x must be an integer or float8 tensor";
  if (!isa<FloatType>(scale.elementType))
    return ctx.emitError() << "x_scale must be a float tensor";
  if (ctx.getNumInputs() > 2 && ctx.hasInput(2) &&
      ctx.input(2).elementType != x.elementType)
    return ctx.emitError() << "x_zero_point must have x's element type";
  FailureOr<int64_t> axis = ctx.getInt("axis", 1);
  FailureOr<int64_t> blockSize = ctx.getInt("block_size", 0);
  FailureOr<int64_t> outputDtype = ctx.getInt("output_dtype", 0);
  if (failed(axis) || failed(blockSize) || failed(outputDtype))
    return failure();
  if (*blockSize < 0)
    return ctx.emitError() << "block_size must be >= 0, got " << *blockSize;
  if (*outputDtype != 0 &&
      elementTypeFromONNX(ctx.getContext(), *outputDtype) != scale.elementType)
    return ctx.emitError() << "output_dtype " << *outputDtype
                           << " differs from x_scale's type; Folio takes "
                              "the scale's type (output_dtype 0)";
  ctx.output(0).elementType = scale.elementType;
  ctx.output(0).dims = x.dims;
  return success();
}

} // namespace

// Since-versions are the first opset with today's semantics; Folio loads
// opset 13 and newer.
void mlir::folio::appendDefaultDomainAtoF(std::vector<ONNXOpSchema> &table) {
  auto add = [&](StringRef op, int64_t since, unsigned minIn, unsigned maxIn,
                 ONNXInferFn fn) {
    table.push_back({kONNXDomain, op, since, minIn, maxIn, 1, 1, fn});
  };
  add("Abs", 6, 1, 1, inferAbs);
  add("Add", 7, 2, 2, inferAdd);
  add("And", 7, 2, 2, inferAnd);
  add("Cast", 6, 1, 1, inferCast);
  add("Concat", 11, 1, ~0u, inferConcat);
  add("Constant", 9, 0, 0, inferConstant);
  add("ConstantOfShape", 9, 1, 1, inferConstantOfShape);
  add("Cos", 7, 1, 1, inferCos);
  add("DequantizeLinear", 13, 2, 3, inferDequantizeLinear);
  add("CumSum", 11, 2, 2, inferCumSum);
  add("Div", 7, 2, 2, inferDiv);
  add("Equal", 7, 2, 2, inferEqual);
  add("Erf", 9, 1, 1, inferErf);
  add("Exp", 6, 1, 1, inferExp);
  add("Expand", 8, 2, 2, inferExpand);
  add("Flatten", 11, 1, 1, inferFlatten);
}
