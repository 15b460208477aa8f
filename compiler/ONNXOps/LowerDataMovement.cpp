//===- LowerDataMovement.cpp - ONNX reshapes, slices, transposes to folio -===//
//
// Reshape, Unsqueeze, Squeeze and Flatten all become folio.reshape to the
// result type shape inference proved: the Shape -> Gather -> Concat chains
// that computed the target shape at run time are dead afterwards. Slice and
// Split become one folio.slice per range (static dims only; slicing the
// token dim would not be token-wise), Transpose folio.transpose, Concat of
// float tensors folio.concat.
//
//===----------------------------------------------------------------------===//

#include "compiler/ONNXOps/Lowering.h"

#include <algorithm>
#include <array>

using namespace mlir;
using namespace mlir::folio;

static std::string shapeString(RankedTensorType t) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(t.getShape()))
    s += (i ? ", " : "") +
         (ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d));
  return s + "]";
}

/// Everything that only reinterprets the elements.
LogicalResult mlir::folio::lowerReshapeLike(ONNXLoweringContext &ctx) {
  Value x = ctx.input(0);
  RankedTensorType type = ctx.resultType(0);
  RankedTensorType in = cast<RankedTensorType>(x.getType());
  if (type == in) {
    ctx.replaceNode(x);
    return success();
  }
  int64_t dynamic = llvm::count_if(type.getShape(), ShapedType::isDynamic);
  if (dynamic > 1)
    return ctx.fail("its result shape " + shapeString(type) + " has " +
                    std::to_string(dynamic) +
                    " dims unknown at compile time; folio.reshape needs all "
                    "but the token dim static");
  if (llvm::count_if(in.getShape(), ShapedType::isDynamic) > 0 && dynamic == 0)
    return ctx.fail("reshapes a tensor of run-time size to the static shape " +
                    shapeString(type));
  ctx.replaceNode(createReshape(ctx.getRewriter(), ctx.getLoc(), x, type));
  return success();
}

namespace {

LogicalResult lowerIdentity(ONNXLoweringContext &ctx) {
  Value x = ctx.input(0);
  if (x.getType() != ctx.getNode().getResult(0).getType() &&
      x.getType() != ctx.resultType(0))
    return lowerReshapeLike(ctx);
  ctx.replaceNode(x);
  return success();
}

LogicalResult lowerTranspose(ONNXLoweringContext &ctx) {
  Value x = ctx.input(0);
  auto in = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> perm = ctx.getInts("perm");
  if (perm.empty())
    for (int64_t i = in.getRank() - 1; i >= 0; --i)
      perm.push_back(i);
  if (int64_t(perm.size()) != in.getRank())
    return ctx.fail("perm has " + std::to_string(perm.size()) +
                    " entries for a rank-" + std::to_string(in.getRank()) +
                    " input");
  SmallVector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= int64_t(perm.size()) || seen[p])
      return ctx.fail("perm is not a permutation of the input's dims");
    seen[p] = true;
  }
  ctx.replaceNode(
      ctx.getRewriter()
          .create<TransposeOp>(ctx.getLoc(), ctx.resultType(0), x, perm)
          ->getResults());
  return success();
}

/// One folio.slice of `x` along `axis`, [start, start + size).
Value createSlice(ONNXLoweringContext &ctx, Value x, int64_t axis,
                  int64_t start, int64_t size) {
  auto in = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(in.getShape());
  shape[axis] = size;
  auto type = RankedTensorType::get(shape, in.getElementType());
  PatternRewriter &b = ctx.getRewriter();
  return b.create<SliceOp>(ctx.getLoc(), type, x, b.getI64IntegerAttr(axis),
                           b.getI64IntegerAttr(start),
                           b.getI64IntegerAttr(size));
}

LogicalResult lowerSlice(ONNXLoweringContext &ctx) {
  Value x = ctx.input(0);
  auto in = ctx.refinedType(x);
  int64_t rank = in.getRank();
  bool attrForm = ctx.getNode().getOpset() < 10;
  std::optional<SmallVector<int64_t, 4>> starts, ends, axes, steps;
  if (attrForm) {
    auto ints = [&](StringRef name) {
      SmallVector<int64_t> v = ctx.getInts(name);
      return SmallVector<int64_t, 4>(v.begin(), v.end());
    };
    starts = ints("starts");
    ends = ints("ends");
    if (!ctx.getInts("axes").empty())
      axes = ints("axes");
  } else {
    starts = ctx.constantInts(1);
    ends = ctx.constantInts(2);
    if (ctx.input(3))
      axes = ctx.constantInts(3);
    if (ctx.input(4))
      steps = ctx.constantInts(4);
    if (!starts || !ends || (ctx.input(3) && !axes) || (ctx.input(4) && !steps))
      return ctx.fail("its starts, ends, axes or steps are computed at run "
                      "time; Folio slices static ranges only");
  }
  if (!axes) {
    axes.emplace();
    for (size_t i = 0; i < starts->size(); ++i)
      axes->push_back(int64_t(i));
  }
  if (!steps)
    steps.emplace(starts->size(), 1);
  if (ends->size() != starts->size() || axes->size() != starts->size() ||
      steps->size() != starts->size())
    return ctx.fail("starts, ends, axes and steps differ in length");
  // Check every range before building anything: a failing hook leaves
  // the IR as it found it.
  SmallVector<std::array<int64_t, 3>> ranges; // axis, start, size
  for (size_t i = 0; i < starts->size(); ++i) {
    int64_t axis = (*axes)[i] < 0 ? (*axes)[i] + rank : (*axes)[i];
    if (axis < 0 || axis >= rank)
      return ctx.fail("axis " + std::to_string((*axes)[i]) +
                      " is out of range for rank " + std::to_string(rank));
    int64_t dim = in.getDimSize(axis);
    if (ShapedType::isDynamic(dim))
      return ctx.fail("slices dim " + std::to_string(axis) +
                      ", whose size is known only at run time");
    if ((*steps)[i] != 1)
      return ctx.fail("slices with step " + std::to_string((*steps)[i]) +
                      "; folio.slice takes contiguous ranges (step 1)");
    int64_t b = (*starts)[i], e = (*ends)[i];
    if (b < 0)
      b += dim;
    if (e < 0)
      e += dim;
    b = std::clamp<int64_t>(b, 0, dim);
    e = std::clamp<int64_t>(e, 0, dim);
    if (b != 0 || e != dim)
      ranges.push_back({axis, b, std::max<int64_t>(e - b, 0)});
  }
  Value result = createReshape(ctx.getRewriter(), ctx.getLoc(), x, in);
  for (auto [axis, start, size] : ranges)
    result = createSlice(ctx, result, axis, start, size);
  ctx.replaceNode(result);
  return success();
}

/// Gather with constant indices that pick a contiguous ascending run of a
/// static dim (Falcon's fused_qkv[..., [-2], :]) is a slice, reshaped to
/// the indices' shape; any other gather moves data by run-time indices.
LogicalResult lowerGather(ONNXLoweringContext &ctx) {
  Value x = ctx.input(0);
  auto in = ctx.refinedType(x);
  int64_t rank = in.getRank();
  int64_t axis = ctx.getInt("axis", 0);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return ctx.fail("axis is out of range for rank " + std::to_string(rank));
  int64_t dim = in.getDimSize(axis);
  std::optional<SmallVector<int64_t, 4>> indices = ctx.constantInts(1);
  if (!indices || indices->empty() || ShapedType::isDynamic(dim))
    return ctx.fail("gathers by indices computed at run time or along a dim "
                    "known only at run time; Folio lowers a Gather of "
                    "constant, contiguous indices along a static dim (a "
                    "slice)");
  SmallVector<int64_t, 4> picks;
  for (int64_t i : *indices) {
    if (i < -dim || i >= dim)
      return ctx.fail("index " + std::to_string(i) +
                      " is out of range for a dim of size " +
                      std::to_string(dim));
    picks.push_back(i < 0 ? i + dim : i);
  }
  for (size_t i = 1; i < picks.size(); ++i)
    if (picks[i] != picks[0] + int64_t(i))
      return ctx.fail("its indices are not a contiguous ascending run; "
                      "Folio lowers a Gather that is a slice");
  Value source = createReshape(ctx.getRewriter(), ctx.getLoc(), x, in);
  Value slice = createSlice(ctx, source, axis, picks[0], picks.size());
  ctx.replaceNode(
      createReshape(ctx.getRewriter(), ctx.getLoc(), slice, ctx.resultType(0)));
  return success();
}

LogicalResult lowerSplit(ONNXLoweringContext &ctx) {
  Value x = ctx.input(0);
  auto in = ctx.refinedType(x);
  int64_t axis = ctx.getInt("axis", 0);
  if (axis < 0)
    axis += in.getRank();
  if (axis < 0 || axis >= in.getRank())
    return ctx.fail("axis is out of range for rank " +
                    std::to_string(in.getRank()));
  int64_t dim = in.getDimSize(axis);
  if (ShapedType::isDynamic(dim))
    return ctx.fail("splits dim " + std::to_string(axis) +
                    ", whose size is known only at run time");
  unsigned n = ctx.getNode().getNumResults();
  SmallVector<int64_t> sizes;
  if (ctx.input(1)) {
    std::optional<SmallVector<int64_t, 4>> s = ctx.constantInts(1);
    if (!s)
      return ctx.fail("its split sizes are computed at run time");
    sizes.assign(s->begin(), s->end());
  } else {
    sizes = ctx.getInts("split");
    if (sizes.empty()) {
      int64_t chunk = (dim + n - 1) / n;
      for (unsigned i = 0; i < n; ++i)
        sizes.push_back(std::min(chunk, dim - chunk * int64_t(i)));
    }
  }
  int64_t total = 0;
  for (int64_t s : sizes)
    total += s;
  if (sizes.size() != n || total != dim)
    return ctx.fail("its split sizes do not cover dim " + std::to_string(axis) +
                    " of size " + std::to_string(dim));
  Value source = createReshape(ctx.getRewriter(), ctx.getLoc(), x, in);
  SmallVector<Value> parts;
  int64_t start = 0;
  for (int64_t size : sizes) {
    parts.push_back(createSlice(ctx, source, axis, start, size));
    start += size;
  }
  ctx.replaceNode(parts);
  return success();
}

LogicalResult lowerConcat(ONNXLoweringContext &ctx) {
  RankedTensorType type = ctx.resultType(0);
  if (!isa<FloatType>(type.getElementType()))
    return ctx.fail("joins integer tensors at run time (shape arithmetic "
                    "Folio could not fold)");
  int64_t axis = ctx.getInt("axis", 0);
  if (axis < 0)
    axis += type.getRank();
  if (axis < 0 || axis >= type.getRank())
    return ctx.fail("axis is out of range for rank " +
                    std::to_string(type.getRank()));
  for (Value v : ctx.getNode().getInputs())
    if (ShapedType::isDynamic(ctx.refinedType(v).getDimSize(axis)))
      return ctx.fail("joins along dim " + std::to_string(axis) +
                      ", whose size is known only at run time");
  SmallVector<Value> inputs;
  for (Value v : ctx.getNode().getInputs())
    inputs.push_back(
        createReshape(ctx.getRewriter(), ctx.getLoc(), v, ctx.refinedType(v)));
  if (inputs.size() == 1) {
    ctx.replaceNode(inputs[0]);
    return success();
  }
  PatternRewriter &b = ctx.getRewriter();
  ctx.replaceNode(
      b.create<ConcatOp>(ctx.getLoc(), type, inputs, b.getI64IntegerAttr(axis))
          ->getResults());
  return success();
}

} // namespace

void mlir::folio::appendDataMovementLowerings(std::vector<ONNXLowering> &t) {
  t.push_back({kONNXDomain, "Reshape", 5, lowerReshapeLike});
  t.push_back({kONNXDomain, "Unsqueeze", 1, lowerReshapeLike});
  t.push_back({kONNXDomain, "Squeeze", 1, lowerReshapeLike});
  t.push_back({kONNXDomain, "Flatten", 1, lowerReshapeLike});
  t.push_back({kONNXDomain, "Identity", 1, lowerIdentity});
  t.push_back({kONNXDomain, "Transpose", 1, lowerTranspose});
  t.push_back({kONNXDomain, "Slice", 1, lowerSlice});
  t.push_back({kONNXDomain, "Gather", 1, lowerGather});
  t.push_back({kONNXDomain, "Split", 2, lowerSplit});
  t.push_back({kONNXDomain, "Concat", 4, lowerConcat});
}
