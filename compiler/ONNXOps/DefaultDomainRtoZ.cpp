//===- DefaultDomainRtoZ.cpp - ai.onnx ops R to Z -------------------------===//

#include "compiler/ONNXOps/InferHelpers.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/MathExtras.h"

#include <climits>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::folio;
using namespace mlir::folio::infer;

namespace {

/// A product of dims split into a constant coefficient and the symbolic
/// factors, so that Reshape's -1 can cancel b * s against b * s.
struct Product {
  int64_t coefficient = 1;
  SmallVector<AffineExpr, 4> factors;
  bool known = true;

  void multiply(AffineExpr dim) {
    if (!dim) {
      known = false;
      return;
    }
    // A dim that is itself a product (4 * s, from an earlier -1) splits
    // into its factors, so that a later Reshape can cancel them.
    if (auto mul = dyn_cast<AffineBinaryOpExpr>(dim);
        mul && mul.getKind() == AffineExprKind::Mul) {
      multiply(mul.getLHS());
      multiply(mul.getRHS());
      return;
    }
    if (std::optional<int64_t> c = getConstantDim(dim)) {
      // An overflowing product is no size at all: leave the dim unknown
      // (the result's own check then names the shape).
      std::optional<int64_t> product = checkedMul(coefficient, *c);
      known &= product.has_value();
      coefficient = product.value_or(1);
    } else
      factors.push_back(dim);
  }
};

/// numerator / denominator when the symbolic factors cancel exactly.
AffineExpr divideProducts(MLIRContext *context, Product numerator,
                          const Product &denominator) {
  if (!numerator.known || !denominator.known || denominator.coefficient == 0)
    return AffineExpr();
  for (AffineExpr factor : denominator.factors) {
    auto it = llvm::find(numerator.factors, factor);
    if (it == numerator.factors.end())
      return AffineExpr();
    numerator.factors.erase(it);
  }
  if (numerator.coefficient % denominator.coefficient != 0)
    return AffineExpr();
  AffineExpr result = getAffineConstantExpr(
      numerator.coefficient / denominator.coefficient, context);
  for (AffineExpr factor : numerator.factors)
    result = result * factor;
  return result;
}

LogicalResult inferRange(ONNXInferenceContext &ctx) {
  for (unsigned i = 0; i < 3; ++i)
    if (ctx.input(i).getRank() && *ctx.input(i).getRank() != 0)
      return ctx.emitError() << "input " << i << " must be a scalar";
  ONNXValueFacts &out = ctx.output(0);
  out.elementType = ctx.input(0).elementType;
  AffineExpr length;
  auto scalarInt = [&](unsigned i) -> AffineExpr {
    const ONNXValueFacts &in = ctx.input(i);
    if (in.ints && in.ints->size() == 1)
      return (*in.ints)[0];
    return AffineExpr();
  };
  AffineExpr start = scalarInt(0), limit = scalarInt(1), delta = scalarInt(2);
  std::optional<int64_t> cStart = getConstantDim(start),
                         cLimit = getConstantDim(limit),
                         cDelta = getConstantDim(delta);
  if (cStart && cLimit && cDelta && *cDelta != 0) {
    // ceil((limit - start) / delta), computed without overflow.
    int64_t span;
    if (llvm::SubOverflow(*cLimit, *cStart, span) ||
        !checkedAdd(span, *cDelta + (*cDelta > 0 ? -1 : 1)))
      return ctx.emitError()
             << "start " << *cStart << ", limit " << *cLimit << " and delta "
             << *cDelta << " give a length that overflows int64";
    int64_t numerator = span + (*cDelta + (*cDelta > 0 ? -1 : 1));
    int64_t n = *cDelta == -1
                    ? (numerator == std::numeric_limits<int64_t>::min()
                           ? std::numeric_limits<int64_t>::max()
                           : -numerator)
                    : numerator / *cDelta;
    n = std::max<int64_t>(n, 0);
    length = cst(ctx, n);
    if (n <= kMaxTrackedElements && isIntegerLike(out.elementType)) {
      Dims values;
      for (int64_t i = 0; i < n; ++i)
        values.push_back(cst(ctx, *cStart + i * *cDelta));
      out.ints = values;
    }
  } else if (start && limit && cDelta == 1) {
    length = limit - start;
  }
  out.dims = Dims{length};
  return success();
}

LogicalResult inferReciprocal(ONNXInferenceContext &ctx) {
  return inferUnaryFloat(ctx, [](double x) { return 1.0 / x; });
}

/// ReduceMean/Sum/Max: axes from the attribute (older opsets) or the input.
LogicalResult inferReduce(ONNXInferenceContext &ctx) {
  const ONNXValueFacts &data = ctx.input(0);
  FailureOr<int64_t> keepDims = ctx.getInt("keepdims", 1);
  FailureOr<int64_t> noopWithEmpty = ctx.getInt("noop_with_empty_axes", 0);
  if (failed(keepDims) || failed(noopWithEmpty))
    return failure();
  SmallVector<int64_t> axes;
  if (ctx.hasInput(1)) {
    FailureOr<SmallVector<int64_t>> fromInput =
        requireConstantInts(ctx, 1, "axes");
    if (failed(fromInput))
      return failure();
    axes = *fromInput;
  } else if (ctx.hasAttr("axes")) {
    FailureOr<SmallVector<int64_t>> fromAttr = ctx.getInts("axes");
    if (failed(fromAttr))
      return failure();
    axes = *fromAttr;
  }
  ONNXValueFacts &out = ctx.output(0);
  out.elementType = data.elementType;
  if (!data.dims)
    return success();
  int64_t rank = data.dims->size();
  if (axes.empty() && *noopWithEmpty) {
    out.dims = data.dims;
    return success();
  }
  SmallVector<bool> reduced(rank, axes.empty());
  for (int64_t axis : axes) {
    FailureOr<int64_t> a = ctx.normalizeAxis(axis, rank, "axis");
    if (failed(a))
      return failure();
    reduced[*a] = true;
  }
  Dims dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d])
      dims.push_back((*data.dims)[d]);
    else if (*keepDims)
      dims.push_back(cst(ctx, 1));
  }
  out.dims = dims;
  return success();
}

LogicalResult inferRelu(ONNXInferenceContext &ctx) {
  passThrough(ctx);
  return success();
}

LogicalResult inferReshape(ONNXInferenceContext &ctx) {
  const ONNXValueFacts &data = ctx.input(0), &shape = ctx.input(1);
  if (!isIntegerLike(shape.elementType) || shape.getRank() != 1)
    return ctx.emitError() << "shape input must be a 1-D int64 tensor";
  FailureOr<int64_t> allowZero = ctx.getInt("allowzero", 0);
  if (failed(allowZero))
    return failure();
  ONNXValueFacts &out = ctx.output(0);
  out.elementType = data.elementType;
  if (!shape.ints) {
    FailureOr<std::optional<Dims>> dims =
        shapeInputDims(ctx, shape, "shape input");
    if (failed(dims))
      return failure();
    out.dims = *dims;
    return success();
  }
  Dims dims;
  int64_t inferred = -1;
  for (auto [i, element] : llvm::enumerate(*shape.ints)) {
    std::optional<int64_t> c = getConstantDim(element);
    if (c == -1) {
      if (inferred >= 0)
        return ctx.emitError() << "shape has more than one -1";
      inferred = i;
      dims.push_back(AffineExpr());
    } else if (c == 0 && !*allowZero) {
      if (!data.dims || i >= data.dims->size())
        dims.push_back(AffineExpr());
      else
        dims.push_back((*data.dims)[i]);
    } else if (c && *c < -1) {
      return ctx.emitError() << "shape element " << i << " is " << *c;
    } else {
      dims.push_back(element);
    }
  }
  if (inferred >= 0 && data.dims) {
    Product total, others;
    for (AffineExpr dim : *data.dims)
      total.multiply(dim);
    for (auto [i, dim] : llvm::enumerate(dims))
      if (int64_t(i) != inferred)
        others.multiply(dim);
    dims[inferred] = divideProducts(ctx.getContext(), total, others);
  }
  out.dims = dims;
  if (data.ints && dims.size() <= 1)
    out.ints = data.ints;
  return success();
}

LogicalResult inferShape(ONNXInferenceContext &ctx) {
  const ONNXValueFacts &data = ctx.input(0);
  ONNXValueFacts &out = ctx.output(0);
  out.elementType = IntegerType::get(ctx.getContext(), 64);
  if (!data.dims) {
    out.dims = Dims{AffineExpr()};
    return success();
  }
  int64_t rank = data.dims->size();
  FailureOr<int64_t> startAttr = ctx.getInt("start", 0);
  FailureOr<int64_t> endAttr = ctx.getInt("end", rank);
  if (failed(startAttr) || failed(endAttr))
    return failure();
  auto clampIndex = [rank](int64_t v) {
    if (v < 0)
      v += rank;
    return std::clamp<int64_t>(v, 0, rank);
  };
  int64_t start = clampIndex(*startAttr), end = clampIndex(*endAttr);
  Dims values;
  for (int64_t d = start; d < end; ++d)
    values.push_back((*data.dims)[d]);
  out.dims = Dims{cst(ctx, int64_t(values.size()))};
  out.ints = values;
  return success();
}

/// ScatterND: data's shape, with indices [..., k] naming slices of data's
/// first k dims and updates holding one slice per index tuple. Exporters
/// write it for in-place slice assignment (mask[:, :, :, :n] = ...);
/// Folio evaluates it where it builds a mask and lowers it nowhere else.
LogicalResult inferScatterND(ONNXInferenceContext &ctx) {
  const ONNXValueFacts &data = ctx.input(0), &indices = ctx.input(1),
                       &updates = ctx.input(2);
  if (!isIntegerLike(indices.elementType))
    return ctx.emitError() << "indices must be integers, got "
                           << indices.elementType;
  if (updates.elementType != data.elementType)
    return ctx.emitError() << "updates (" << updates.elementType
                           << ") and data (" << data.elementType
                           << ") have different element types";
  FailureOr<std::string> reduction = ctx.getString("reduction", "none");
  if (failed(reduction))
    return failure();
  if (*reduction != "none")
    return ctx.emitError() << "reduction '" << *reduction
                           << "' is not supported (only 'none')";
  if (data.dims && indices.dims && updates.dims) {
    std::optional<int64_t> depth = indices.dims->empty()
                                       ? std::nullopt
                                       : getConstantDim(indices.dims->back());
    int64_t rank = data.dims->size(), irank = indices.dims->size();
    if (depth && (*depth < 1 || *depth > rank))
      return ctx.emitError() << "indices' last dim " << *depth
                             << " must be in [1, " << rank << "]";
    if (depth && int64_t(updates.dims->size()) != irank - 1 + rank - *depth)
      return ctx.emitError() << "updates have rank " << updates.dims->size()
                             << ", expected " << irank - 1 + rank - *depth;
  }
  passThrough(ctx);
  return success();
}

LogicalResult inferSigmoid(ONNXInferenceContext &ctx) {
  return inferUnaryFloat(ctx,
                         [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
}

LogicalResult inferSin(ONNXInferenceContext &ctx) {
  return inferUnaryFloat(ctx, [](double x) { return std::sin(x); });
}

/// True for expressions over dims (which are >= 0) built from non-negative
/// constants with +, * and divisions.
bool isKnownNonNegative(AffineExpr expr) {
  if (std::optional<int64_t> c = getConstantDim(expr))
    return *c >= 0;
  if (isa<AffineSymbolExpr, AffineDimExpr>(expr))
    return true;
  if (auto binary = dyn_cast<AffineBinaryOpExpr>(expr))
    return isKnownNonNegative(binary.getLHS()) &&
           isKnownNonNegative(binary.getRHS());
  return false;
}

/// The length of data[start:end:step] along a dim, symbolically where the
/// exporters' common forms allow (x[a:], x[:b], x[a:b]).
AffineExpr sliceLength(ONNXInferenceContext &ctx, AffineExpr dim,
                       AffineExpr start, AffineExpr end, int64_t step) {
  std::optional<int64_t> cDim = getConstantDim(dim),
                         cStart = getConstantDim(start),
                         cEnd = getConstantDim(end);
  if (cDim && cStart && cEnd) {
    int64_t n = *cDim;
    auto clampIndex = [&](int64_t v, bool isEnd) {
      if (v < 0)
        v += n;
      if (step > 0)
        return std::clamp<int64_t>(v, 0, n);
      return std::clamp<int64_t>(v, isEnd ? -1 : 0, n - 1);
    };
    int64_t s = clampIndex(*cStart, false), e = clampIndex(*cEnd, true);
    int64_t length =
        step > 0 ? (e - s + step - 1) / step : (s - e + (-step) - 1) / (-step);
    return cst(ctx, std::max<int64_t>(length, 0));
  }
  if (step != 1 || !dim)
    return AffineExpr();
  // A symbolic index is "from the start" when it is provably >= 0 (dims
  // are), "from the end" when its negation is (x[:, -seq:]).
  auto resolve = [&](AffineExpr index) -> AffineExpr {
    if (!index)
      return AffineExpr();
    if (std::optional<int64_t> c = getConstantDim(index))
      return *c < 0 ? dim + index : index;
    if (isKnownNonNegative(index))
      return index;
    if (isKnownNonNegative(-index))
      return dim + index;
    return AffineExpr();
  };
  // An end at or past the dim (INT64_MAX, or the dim itself) means "to the
  // end".
  bool toEnd = (cEnd && *cEnd >= INT_MAX) || (end && end == dim);
  AffineExpr from = resolve(start);
  AffineExpr to = toEnd ? dim : resolve(end);
  if (!from || !to)
    return AffineExpr();
  return to - from;
}

LogicalResult inferSlice(ONNXInferenceContext &ctx) {
  const ONNXValueFacts &data = ctx.input(0);
  ONNXValueFacts &out = ctx.output(0);
  out.elementType = data.elementType;
  if (!data.dims)
    return success();
  int64_t rank = data.dims->size();
  const ONNXValueFacts &starts = ctx.input(1), &ends = ctx.input(2);
  if (!starts.ints || !ends.ints) {
    // Without the bounds only the sliced axes are unknown; which ones needs
    // `axes`.
    std::optional<SmallVector<int64_t, 4>> axes =
        ctx.hasInput(3) ? ctx.input(3).getConstantInts() : std::nullopt;
    Dims dims = *data.dims;
    if (axes) {
      for (int64_t axis : *axes)
        if (axis >= -rank && axis < rank)
          dims[axis < 0 ? axis + rank : axis] = AffineExpr();
    } else {
      dims.assign(rank, AffineExpr());
    }
    out.dims = dims;
    return success();
  }
  size_t n = starts.ints->size();
  if (ends.ints->size() != n)
    return ctx.emitError() << "starts and ends have different lengths (" << n
                           << " and " << ends.ints->size() << ")";
  SmallVector<int64_t> axes, steps(n, 1);
  for (size_t i = 0; i < n; ++i)
    axes.push_back(i);
  if (ctx.hasInput(3)) {
    FailureOr<SmallVector<int64_t>> given = requireConstantInts(ctx, 3, "axes");
    if (failed(given))
      return failure();
    axes = *given;
  }
  if (ctx.hasInput(4)) {
    FailureOr<SmallVector<int64_t>> given =
        requireConstantInts(ctx, 4, "steps");
    if (failed(given))
      return failure();
    steps = *given;
  }
  if (axes.size() != n || steps.size() != n)
    return ctx.emitError() << "starts, ends, axes and steps must have the "
                              "same length";
  Dims dims = *data.dims;
  for (size_t i = 0; i < n; ++i) {
    FailureOr<int64_t> axis = ctx.normalizeAxis(axes[i], rank, "axes element");
    if (failed(axis))
      return failure();
    if (steps[i] == 0)
      return ctx.emitError() << "steps must not be 0";
    dims[*axis] = sliceLength(ctx, (*data.dims)[*axis], (*starts.ints)[i],
                              (*ends.ints)[i], steps[i]);
  }
  out.dims = dims;
  // Slicing a tracked 1-D vector with constant bounds.
  std::optional<SmallVector<int64_t, 4>> s = starts.getConstantInts(),
                                         e = ends.getConstantInts();
  if (rank == 1 && n == 1 && data.ints && s && e && steps[0] > 0) {
    int64_t len = data.ints->size();
    int64_t from =
        std::clamp<int64_t>((*s)[0] < 0 ? (*s)[0] + len : (*s)[0], 0, len);
    int64_t to =
        std::clamp<int64_t>((*e)[0] < 0 ? (*e)[0] + len : (*e)[0], 0, len);
    Dims values;
    for (int64_t i = from; i < to; i += steps[0])
      values.push_back((*data.ints)[i]);
    out.ints = values;
  }
  return success();
}

LogicalResult inferSoftmax(ONNXInferenceContext &ctx) {
  if (failed(requireFloat(ctx, 0, "input")))
    return failure();
  FailureOr<int64_t> axis = ctx.getInt("axis", -1);
  if (failed(axis))
    return failure();
  if (std::optional<int64_t> rank = ctx.input(0).getRank())
    if (failed(ctx.normalizeAxis(*axis, *rank, "axis")))
      return failure();
  passThrough(ctx);
  return success();
}

LogicalResult inferSplit(ONNXInferenceContext &ctx) {
  const ONNXValueFacts &data = ctx.input(0);
  unsigned numOutputs = ctx.getNumOutputs();
  for (unsigned o = 0; o < numOutputs; ++o)
    ctx.output(o).elementType = data.elementType;
  if (!data.dims)
    return success();
  FailureOr<int64_t> axisAttr = ctx.getInt("axis", 0);
  if (failed(axisAttr))
    return failure();
  FailureOr<int64_t> axis =
      ctx.normalizeAxis(*axisAttr, data.dims->size(), "axis");
  if (failed(axis))
    return failure();
  Dims sizes;
  if (ctx.hasInput(1)) {
    const ONNXValueFacts &split = ctx.input(1);
    if (!split.ints)
      return ctx.emitError() << "split sizes must be known at compile time";
    sizes = *split.ints;
  } else if (ctx.hasAttr("split")) {
    FailureOr<SmallVector<int64_t>> split = ctx.getInts("split");
    if (failed(split))
      return failure();
    sizes = constDims(ctx, *split);
  } else {
    AffineExpr dim = (*data.dims)[*axis];
    std::optional<int64_t> c = getConstantDim(dim);
    for (unsigned o = 0; o < numOutputs; ++o) {
      if (c) {
        int64_t chunk = (*c + numOutputs - 1) / numOutputs;
        int64_t remaining = std::max<int64_t>(*c - int64_t(o) * chunk, 0);
        sizes.push_back(cst(ctx, std::min(chunk, remaining)));
      } else {
        sizes.push_back(dim ? dim.floorDiv(numOutputs) : AffineExpr());
      }
    }
  }
  if (sizes.size() != numOutputs)
    return ctx.emitError() << "has " << numOutputs << " outputs but "
                           << sizes.size() << " split sizes";
  for (unsigned o = 0; o < numOutputs; ++o) {
    Dims dims = *data.dims;
    dims[*axis] = sizes[o];
    ctx.output(o).dims = dims;
  }
  return success();
}

LogicalResult inferSqrt(ONNXInferenceContext &ctx) {
  return inferUnaryFloat(ctx, [](double x) { return std::sqrt(x); });
}

/// Axes from the input (opset >= 13) or the attribute (older models).
FailureOr<SmallVector<int64_t>> getAxes(ONNXInferenceContext &ctx,
                                        bool required) {
  if (ctx.hasInput(1))
    return requireConstantInts(ctx, 1, "axes");
  if (ctx.hasAttr("axes"))
    return ctx.getInts("axes");
  if (required)
    return ctx.emitError() << "needs axes";
  return SmallVector<int64_t>();
}

LogicalResult inferSqueeze(ONNXInferenceContext &ctx) {
  const ONNXValueFacts &data = ctx.input(0);
  ONNXValueFacts &out = ctx.output(0);
  out.elementType = data.elementType;
  FailureOr<SmallVector<int64_t>> axes = getAxes(ctx, /*required=*/false);
  if (failed(axes))
    return failure();
  if (!data.dims)
    return success();
  int64_t rank = data.dims->size();
  SmallVector<bool> drop(rank, false);
  if (axes->empty()) {
    for (int64_t d = 0; d < rank; ++d) {
      std::optional<int64_t> c = getConstantDim((*data.dims)[d]);
      if (!c)
        return success(); // The rank depends on run-time sizes.
      drop[d] = *c == 1;
    }
  }
  for (int64_t axis : *axes) {
    FailureOr<int64_t> a = ctx.normalizeAxis(axis, rank, "axes element");
    if (failed(a))
      return failure();
    std::optional<int64_t> c = getConstantDim((*data.dims)[*a]);
    if (c && *c != 1)
      return ctx.emitError()
             << "cannot squeeze axis " << *a << " of size " << *c;
    drop[*a] = true;
  }
  Dims dims;
  for (int64_t d = 0; d < rank; ++d)
    if (!drop[d])
      dims.push_back((*data.dims)[d]);
  out.dims = dims;
  if (data.ints && dims.size() <= 1)
    out.ints = data.ints;
  if (data.floats)
    out.floats = data.floats;
  return success();
}

LogicalResult inferSub(ONNXInferenceContext &ctx) {
  return inferElementwise(
      ctx, ctx.input(0).elementType,
      [](AffineExpr a, AffineExpr b) { return a - b; },
      [](double a, double b) -> std::optional<double> { return a - b; });
}

LogicalResult inferTanh(ONNXInferenceContext &ctx) {
  return inferUnaryFloat(ctx, [](double x) { return std::tanh(x); });
}

LogicalResult inferTile(ONNXInferenceContext &ctx) {
  const ONNXValueFacts &data = ctx.input(0), &repeats = ctx.input(1);
  ONNXValueFacts &out = ctx.output(0);
  out.elementType = data.elementType;
  if (!data.dims)
    return success();
  if (!repeats.ints) {
    out.dims = Dims(data.dims->size(), AffineExpr());
    return success();
  }
  if (repeats.ints->size() != data.dims->size())
    return ctx.emitError() << "repeats has " << repeats.ints->size()
                           << " entries for a rank-" << data.dims->size()
                           << " input";
  Dims dims;
  for (auto [i, pair] : llvm::enumerate(llvm::zip(*data.dims, *repeats.ints))) {
    auto [dim, repeat] = pair;
    std::optional<int64_t> cDim = getConstantDim(dim),
                           cRepeat = getConstantDim(repeat);
    if (cRepeat && *cRepeat < 0)
      return ctx.emitError() << "repeats[" << i << "] is " << *cRepeat;
    if (cDim && cRepeat && !checkedMul(*cDim, *cRepeat))
      return ctx.emitError()
             << "dim " << i << " (" << *cDim << ") times "
             << "repeats[" << i << "] (" << *cRepeat << ") overflows int64";
    dims.push_back(dim && repeat ? dim * repeat : AffineExpr());
  }
  out.dims = dims;
  return success();
}

LogicalResult inferTranspose(ONNXInferenceContext &ctx) {
  const ONNXValueFacts &data = ctx.input(0);
  ONNXValueFacts &out = ctx.output(0);
  out.elementType = data.elementType;
  if (!data.dims)
    return success();
  int64_t rank = data.dims->size();
  SmallVector<int64_t> reversed;
  for (int64_t d = rank - 1; d >= 0; --d)
    reversed.push_back(d);
  FailureOr<SmallVector<int64_t>> perm =
      ctx.getInts("perm", ArrayRef<int64_t>(reversed));
  if (failed(perm))
    return failure();
  if (int64_t(perm->size()) != rank)
    return ctx.emitError() << "perm has " << perm->size()
                           << " entries for a rank-" << rank << " input";
  SmallVector<bool> seen(rank, false);
  Dims dims;
  for (int64_t p : *perm) {
    if (p < 0 || p >= rank || seen[p])
      return ctx.emitError() << "perm is not a permutation of 0.." << rank - 1;
    seen[p] = true;
    dims.push_back((*data.dims)[p]);
  }
  out.dims = dims;
  return success();
}

LogicalResult inferTrilu(ONNXInferenceContext &ctx) {
  if (std::optional<int64_t> rank = ctx.input(0).getRank(); rank && *rank < 2)
    return ctx.emitError() << "input must have rank >= 2";
  passThrough(ctx);
  return success();
}

LogicalResult inferUnsqueeze(ONNXInferenceContext &ctx) {
  const ONNXValueFacts &data = ctx.input(0);
  ONNXValueFacts &out = ctx.output(0);
  out.elementType = data.elementType;
  FailureOr<SmallVector<int64_t>> axes = getAxes(ctx, /*required=*/true);
  if (failed(axes))
    return failure();
  if (!data.dims)
    return success();
  int64_t rank = data.dims->size() + axes->size();
  SmallVector<bool> inserted(rank, false);
  for (int64_t axis : *axes) {
    FailureOr<int64_t> a = ctx.normalizeAxis(axis, rank, "axes element");
    if (failed(a))
      return failure();
    if (inserted[*a])
      return ctx.emitError() << "axes repeats " << *a;
    inserted[*a] = true;
  }
  Dims dims;
  auto next = data.dims->begin();
  for (int64_t d = 0; d < rank; ++d)
    dims.push_back(inserted[d] ? cst(ctx, 1) : *next++);
  out.dims = dims;
  if (data.ints && rank <= 1)
    out.ints = data.ints;
  if (data.floats)
    out.floats = data.floats;
  return success();
}

LogicalResult inferWhere(ONNXInferenceContext &ctx) {
  const ONNXValueFacts &cond = ctx.input(0), &x = ctx.input(1),
                       &y = ctx.input(2);
  if (!cond.elementType.isInteger(1))
    return ctx.emitError() << "condition must be bool";
  if (x.elementType != y.elementType)
    return ctx.emitError() << "X and Y have different element types ("
                           << x.elementType << " and " << y.elementType << ")";
  FailureOr<std::optional<Dims>> dims = broadcastInputs(ctx, {&cond, &x, &y});
  if (failed(dims))
    return failure();
  ONNXValueFacts &out = ctx.output(0);
  out.elementType = x.elementType;
  out.dims = *dims;
  // where(c, a, b) over tracked vectors (exporters build shapes this way).
  if (cond.ints && x.ints && y.ints && out.dims && out.dims->size() <= 1) {
    size_t n = std::max({cond.ints->size(), x.ints->size(), y.ints->size()});
    Dims values;
    for (size_t i = 0; i < n; ++i) {
      auto at = [&](const Dims &v) { return v[v.size() == 1 ? 0 : i]; };
      if ((cond.ints->size() != 1 && cond.ints->size() != n) ||
          (x.ints->size() != 1 && x.ints->size() != n) ||
          (y.ints->size() != 1 && y.ints->size() != n))
        return success();
      std::optional<int64_t> c = getConstantDim(at(*cond.ints));
      values.push_back(c ? (*c ? at(*x.ints) : at(*y.ints)) : AffineExpr());
    }
    out.ints = values;
  }
  return success();
}

} // namespace

void mlir::folio::appendDefaultDomainRtoZ(std::vector<ONNXOpSchema> &table) {
  auto add = [&](StringRef op, int64_t since, unsigned minIn, unsigned maxIn,
                 ONNXInferFn fn, unsigned minOut = 1, unsigned maxOut = 1) {
    table.push_back({kONNXDomain, op, since, minIn, maxIn, minOut, maxOut, fn});
  };
  add("Range", 11, 3, 3, inferRange);
  add("Reciprocal", 6, 1, 1, inferReciprocal);
  add("ReduceMax", 13, 1, 2, inferReduce);
  add("ReduceMean", 13, 1, 2, inferReduce);
  add("ReduceSum", 13, 1, 2, inferReduce);
  add("Relu", 6, 1, 1, inferRelu);
  add("Reshape", 5, 2, 2, inferReshape);
  add("ScatterND", 16, 3, 3, inferScatterND);
  add("Shape", 1, 1, 1, inferShape);
  add("Sigmoid", 6, 1, 1, inferSigmoid);
  add("Sin", 7, 1, 1, inferSin);
  add("Slice", 10, 3, 5, inferSlice);
  add("Softmax", 13, 1, 1, inferSoftmax);
  add("Split", 13, 1, 2, inferSplit, 1, ~0u);
  add("Sqrt", 6, 1, 1, inferSqrt);
  add("Squeeze", 13, 1, 2, inferSqueeze);
  add("Sub", 7, 2, 2, inferSub);
  add("Tanh", 6, 1, 1, inferTanh);
  add("Tile", 6, 2, 2, inferTile);
  add("Transpose", 1, 1, 1, inferTranspose);
  add("Trilu", 14, 1, 2, inferTrilu);
  add("Unsqueeze", 13, 1, 2, inferUnsqueeze);
  add("Where", 9, 3, 3, inferWhere);
}
