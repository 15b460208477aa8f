//===- RotaryMatch.cpp - The decomposed rotary pattern --------------------===//

#include "compiler/RaiseAttention/RotaryMatch.h"

#include "compiler/RaiseAttention/RaiseUtils.h"

#include "compiler/ONNXOps/Match.h"

using namespace mlir;
using namespace mlir::folio;

namespace {
/// A Slice along the last axis: x[..., start:end:step] with start/end
/// clamped to the (static) last dim.
struct LastAxisSlice {
  Value source;
  int64_t start, end, step, dim;
};
} // namespace

static std::optional<int64_t> singleConstant(Value value) {
  if (!value)
    return std::nullopt;
  std::optional<SmallVector<int64_t>> ints = getIntConstants(value);
  if (!ints || ints->size() != 1)
    return std::nullopt;
  return ints->front();
}

static std::optional<LastAxisSlice>
matchLastAxisSlice(Value value, ONNXShapeInference &inf) {
  ONNXNodeOp slice = matchONNX(value, "Slice");
  if (!slice || slice.getOpset() < 10)
    return std::nullopt;
  Value data = getONNXInput(slice, 0);
  std::optional<int64_t> start = singleConstant(getONNXInput(slice, 1));
  std::optional<int64_t> end = singleConstant(getONNXInput(slice, 2));
  if (!data || !start || !end)
    return std::nullopt;
  std::optional<SmallVector<AffineExpr, 4>> dims = getDims(inf, data);
  if (!dims || dims->empty())
    return std::nullopt;
  int64_t rank = dims->size();
  int64_t axis = 0, step = 1;
  if (Value axes = getONNXInput(slice, 3)) {
    std::optional<int64_t> a = singleConstant(axes);
    if (!a)
      return std::nullopt;
    axis = *a;
  }
  if (Value steps = getONNXInput(slice, 4)) {
    std::optional<int64_t> s = singleConstant(steps);
    if (!s)
      return std::nullopt;
    step = *s;
  }
  if (normalizeAxis(axis, rank) != rank - 1 || step <= 0)
    return std::nullopt;
  std::optional<int64_t> dim = getConstantDim(dims->back());
  if (!dim)
    return std::nullopt;
  auto clamp = [&](int64_t v) {
    if (v < 0)
      v += *dim;
    return std::clamp<int64_t>(v, 0, *dim);
  };
  return LastAxisSlice{data, clamp(*start), clamp(*end), step, *dim};
}

/// The axis of a node's single-axis attribute or constant input.
static std::optional<int64_t> getAxesOperand(ONNXNodeOp node) {
  if (Value axes = getONNXInput(node, 1))
    return singleConstant(axes);
  auto attr = node.getOnnxAttributes().getAs<DenseI64ArrayAttr>("axes");
  if (attr && attr.size() == 1)
    return attr[0];
  return std::nullopt;
}

static bool isLastAxisConcat(ONNXNodeOp concat, ONNXShapeInference &inf) {
  std::optional<SmallVector<AffineExpr, 4>> dims =
      getDims(inf, concat.getResult(0));
  if (!dims)
    return false;
  return normalizeAxis(getONNXIntAttr(concat, "axis", 0), dims->size()) ==
         int64_t(dims->size()) - 1;
}

/// rotate_half(x) = Concat(-x[..., h:], x[..., :h]) -> x.
static Value matchRotateHalf(Value value, ONNXShapeInference &inf) {
  ONNXNodeOp concat = matchONNX(value, "Concat");
  if (!concat || concat.getInputs().size() != 2 ||
      !isLastAxisConcat(concat, inf))
    return {};
  ONNXNodeOp neg = matchONNX(concat.getInputs()[0], "Neg");
  if (!neg)
    return {};
  std::optional<LastAxisSlice> hi = matchLastAxisSlice(neg.getInputs()[0], inf);
  std::optional<LastAxisSlice> lo =
      matchLastAxisSlice(concat.getInputs()[1], inf);
  if (!hi || !lo || hi->source != lo->source || hi->step != 1 || lo->step != 1)
    return {};
  int64_t half = hi->dim / 2;
  if (hi->dim % 2 != 0 || lo->start != 0 || lo->end != half ||
      hi->start != half || hi->end != hi->dim)
    return {};
  return lo->source;
}

/// Strips Unsqueeze(v, -1) (the stack axis of rotate_every_two).
static Value stripTrailingUnsqueeze(Value value, ONNXShapeInference &inf) {
  ONNXNodeOp unsqueeze = matchONNX(value, "Unsqueeze");
  if (!unsqueeze)
    return {};
  std::optional<SmallVector<AffineExpr, 4>> dims =
      getDims(inf, unsqueeze.getResult(0));
  std::optional<int64_t> axis = getAxesOperand(unsqueeze);
  if (!dims || !axis ||
      normalizeAxis(*axis, dims->size()) != int64_t(dims->size()) - 1)
    return {};
  return unsqueeze.getInputs()[0];
}

/// rotate_every_two(x) = flatten(stack(-x[..., 1::2], x[..., ::2]), -2) -> x.
static Value matchRotateEveryTwo(Value value, ONNXShapeInference &inf) {
  ONNXNodeOp reshape = matchONNX(value, "Reshape");
  if (!reshape)
    return {};
  ONNXNodeOp concat = matchONNX(reshape.getInputs()[0], "Concat");
  if (!concat || concat.getInputs().size() != 2 ||
      !isLastAxisConcat(concat, inf))
    return {};
  // The negation may sit before or after the Unsqueeze.
  Value first = concat.getInputs()[0];
  Value odd;
  if (ONNXNodeOp neg = matchONNX(first, "Neg"))
    odd = stripTrailingUnsqueeze(neg.getInputs()[0], inf);
  else if (Value inner = stripTrailingUnsqueeze(first, inf))
    if (ONNXNodeOp neg = matchONNX(inner, "Neg"))
      odd = neg.getInputs()[0];
  Value even = stripTrailingUnsqueeze(concat.getInputs()[1], inf);
  if (!odd || !even)
    return {};
  std::optional<LastAxisSlice> o = matchLastAxisSlice(odd, inf);
  std::optional<LastAxisSlice> e = matchLastAxisSlice(even, inf);
  if (!o || !e || o->source != e->source || o->step != 2 || e->step != 2 ||
      o->start != 1 || e->start != 0 || o->end != o->dim || e->end != e->dim ||
      o->dim % 2 != 0)
    return {};
  if (!haveCompatibleDims(inf, reshape.getResult(0), e->source))
    return {};
  return e->source;
}

std::optional<RotaryMatch>
mlir::folio::matchDecomposedRotary(ONNXNodeOp add, ONNXShapeInference &inf) {
  if (add.getOpType() != "Add" || !add.getDomain().empty() ||
      add.getInputs().size() != 2)
    return std::nullopt;
  ONNXNodeOp lhs = matchONNX(add.getInputs()[0], "Mul");
  ONNXNodeOp rhs = matchONNX(add.getInputs()[1], "Mul");
  if (!lhs || !rhs)
    return std::nullopt;
  for (auto [plain, rotated] : {std::pair(lhs, rhs), std::pair(rhs, lhs)}) {
    for (unsigned r = 0; r < 2; ++r) {
      Value rotatedInput = rotated.getInputs()[r];
      RopeStyle style = RopeStyle::half_split;
      Value x = matchRotateHalf(rotatedInput, inf);
      if (!x) {
        x = matchRotateEveryTwo(rotatedInput, inf);
        style = RopeStyle::interleaved;
      }
      if (!x)
        continue;
      for (unsigned p = 0; p < 2; ++p) {
        if (plain.getInputs()[p] != x)
          continue;
        std::optional<SmallVector<AffineExpr, 4>> dims = getDims(inf, x);
        if (!dims || dims->size() != 4 ||
            !haveCompatibleDims(inf, add.getResult(0), x))
          return std::nullopt;
        RotaryMatch match;
        match.root = add;
        match.input = x;
        match.rotaryDim = *getConstantDim(dims->back());
        match.style = style;
        match.cos = plain.getInputs()[1 - p];
        match.sin = rotated.getInputs()[1 - r];

        // Partial rotary: x = full[..., :d], result = Concat(rot, full[d:]).
        std::optional<LastAxisSlice> head = matchLastAxisSlice(x, inf);
        if (!head || head->start != 0 || head->step != 1 ||
            head->end != match.rotaryDim || head->dim <= match.rotaryDim ||
            !add.getResult(0).hasOneUse())
          return match;
        auto concat = dyn_cast<ONNXNodeOp>(*add.getResult(0).user_begin());
        if (!concat || concat.getOpType() != "Concat" ||
            concat.getInputs().size() != 2 ||
            concat.getInputs()[0] != add.getResult(0) ||
            !isLastAxisConcat(concat, inf))
          return match;
        std::optional<LastAxisSlice> tail =
            matchLastAxisSlice(concat.getInputs()[1], inf);
        if (!tail || tail->source != head->source || tail->step != 1 ||
            tail->start != match.rotaryDim || tail->end != tail->dim)
          return match;
        match.root = concat;
        match.input = head->source;
        return match;
      }
    }
  }
  return std::nullopt;
}
