//===- LowerElementwise.cpp - ONNX pointwise ops to folio.binary/unary ----===//
//
// Pointwise ONNX ops become folio.binary / folio.unary / folio.cast with
// the refined result type; broadcasting stays implicit (NumPy rules on both
// sides). An exporter's written-out activations (GELU's tanh formula, a
// soft-cap's tanh(x / c) * c) become chains of these, for the fuse pass to
// group into one kernel.
//
//===----------------------------------------------------------------------===//

#include "compiler/ONNXOps/Lowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <cmath>

using namespace mlir;
using namespace mlir::folio;

namespace {

std::string typeString(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

template <BinaryKind Kind> LogicalResult lowerBinary(ONNXLoweringContext &ctx) {
  Value lhs = ctx.input(0), rhs = ctx.input(1);
  if (!lhs || !rhs || ctx.getNode().getNumONNXInputs() != 2)
    return ctx.fail("lowers with exactly two inputs");
  Type a = cast<RankedTensorType>(lhs.getType()).getElementType();
  Type b = cast<RankedTensorType>(rhs.getType()).getElementType();
  if (a != b)
    return ctx.fail("inputs of element types " + typeString(a) + " and " +
                    typeString(b) + " (folio.binary takes one type)");
  if (!a.isF32() && !a.isF16() && !a.isBF16() && !a.isSignlessInteger(32) &&
      !a.isSignlessInteger(64))
    return ctx.fail("works on " + typeString(a) +
                    "; folio.binary takes f32, f16, bf16, i32 and i64");
  RankedTensorType type = ctx.resultType(0);
  if (std::optional<std::string> why =
          checkBroadcast(cast<RankedTensorType>(lhs.getType()),
                         cast<RankedTensorType>(rhs.getType()), type))
    return ctx.fail(*why);
  if (Kind == BinaryKind::pow && !isa<FloatType>(a))
    return ctx.fail("raises integers to a power (folio.binary pow takes "
                    "floats)");
  ctx.replaceNode(
      ctx.getRewriter()
          .create<BinaryOp>(ctx.getLoc(), type,
                            BinaryKindAttr::get(type.getContext(), Kind), lhs,
                            rhs)
          ->getResults());
  return success();
}

template <UnaryKind Kind> LogicalResult lowerUnary(ONNXLoweringContext &ctx) {
  Value x = ctx.input(0);
  RankedTensorType type = ctx.resultType(0);
  if (!x || !isa<FloatType>(type.getElementType()))
    return ctx.fail("lowers for float tensors only");
  ctx.replaceNode(
      ctx.getRewriter()
          .create<UnaryOp>(ctx.getLoc(), type,
                           UnaryKindAttr::get(type.getContext(), Kind), x)
          ->getResults());
  return success();
}

LogicalResult lowerCast(ONNXLoweringContext &ctx) {
  Value x = ctx.input(0);
  RankedTensorType type = ctx.resultType(0);
  Type from = cast<RankedTensorType>(x.getType()).getElementType();
  Type to = type.getElementType();
  auto castable = [](Type t) {
    return t.isF32() || t.isF16() || t.isBF16() || t.isSignlessInteger(32) ||
           t.isSignlessInteger(64);
  };
  if (from == to) {
    ctx.replaceNode(createReshape(ctx.getRewriter(), ctx.getLoc(), x, type));
    return success();
  }
  if (!castable(from) || !castable(to) ||
      isa<FloatType>(from) != isa<FloatType>(to))
    return ctx.fail("casts " + typeString(from) + " to " + typeString(to) +
                    "; folio.cast converts within f32/f16/bf16 or within "
                    "i32/i64");
  ctx.replaceNode(
      ctx.getRewriter().create<CastOp>(ctx.getLoc(), type, x)->getResults());
  return success();
}

/// Gelu (opset 20): x * 0.5 * (1 + erf(x / sqrt(2))), or with approximate =
/// "tanh" x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), as a
/// chain of folio.unary / folio.binary for the fuse pass to group (gated MLPs
/// raise their GELU before lowering; a plain MLP's stays).
LogicalResult lowerGelu(ONNXLoweringContext &ctx) {
  Value x = ctx.input(0);
  RankedTensorType type = ctx.resultType(0);
  Type element = type.getElementType();
  if (!x || !isa<FloatType>(element))
    return ctx.fail("lowers for float tensors only");
  // Shape inference admits only "none" and "tanh".
  auto approximate =
      ctx.getNode().getOnnxAttributes().getAs<StringAttr>("approximate");
  bool tanh = approximate && approximate.getValue() == "tanh";
  PatternRewriter &rw = ctx.getRewriter();
  Location loc = ctx.getLoc();
  auto scalar = [&](double v) -> Value {
    auto scalarType = RankedTensorType::get({}, element);
    return rw.create<arith::ConstantOp>(
        loc, DenseElementsAttr::get(scalarType, rw.getFloatAttr(element, v)));
  };
  auto binary = [&](BinaryKind kind, Value a, Value b) -> Value {
    return rw.create<BinaryOp>(
        loc, type, BinaryKindAttr::get(type.getContext(), kind), a, b);
  };
  auto unary = [&](UnaryKind kind, Value a) -> Value {
    return rw.create<UnaryOp>(loc, type,
                              UnaryKindAttr::get(type.getContext(), kind), a);
  };
  Value inner;
  if (tanh) {
    Value cube = binary(BinaryKind::mul, binary(BinaryKind::mul, x, x), x);
    Value poly = binary(BinaryKind::add, x,
                        binary(BinaryKind::mul, cube, scalar(0.044715)));
    inner = unary(UnaryKind::tanh,
                  binary(BinaryKind::mul, poly,
                         scalar(std::sqrt(2.0 / 3.14159265358979323846))));
  } else {
    inner = unary(UnaryKind::erf,
                  binary(BinaryKind::mul, x, scalar(1.0 / std::sqrt(2.0))));
  }
  Value half = binary(BinaryKind::mul, x, scalar(0.5));
  ctx.replaceNode(binary(BinaryKind::mul, half,
                         binary(BinaryKind::add, inner, scalar(1.0))));
  return success();
}

} // namespace

void mlir::folio::appendElementwiseLowerings(std::vector<ONNXLowering> &t) {
  t.push_back({kONNXDomain, "Add", 1, lowerBinary<BinaryKind::add>});
  t.push_back({kONNXDomain, "Sub", 1, lowerBinary<BinaryKind::sub>});
  t.push_back({kONNXDomain, "Mul", 1, lowerBinary<BinaryKind::mul>});
  t.push_back({kONNXDomain, "Div", 1, lowerBinary<BinaryKind::div>});
  t.push_back({kONNXDomain, "Pow", 1, lowerBinary<BinaryKind::pow>});
  t.push_back({kONNXDomain, "Max", 1, lowerBinary<BinaryKind::max>});
  t.push_back({kONNXDomain, "Min", 1, lowerBinary<BinaryKind::min>});
  t.push_back({kONNXDomain, "Neg", 1, lowerUnary<UnaryKind::neg>});
  t.push_back({kONNXDomain, "Exp", 1, lowerUnary<UnaryKind::exp>});
  t.push_back({kONNXDomain, "Sqrt", 1, lowerUnary<UnaryKind::sqrt>});
  t.push_back({kONNXDomain, "Tanh", 1, lowerUnary<UnaryKind::tanh>});
  t.push_back({kONNXDomain, "Erf", 1, lowerUnary<UnaryKind::erf>});
  t.push_back({kONNXDomain, "Sigmoid", 1, lowerUnary<UnaryKind::sigmoid>});
  t.push_back({kONNXDomain, "Relu", 1, lowerUnary<UnaryKind::relu>});
  t.push_back({kONNXDomain, "Abs", 1, lowerUnary<UnaryKind::abs>});
  t.push_back(
      {kONNXDomain, "Reciprocal", 1, lowerUnary<UnaryKind::reciprocal>});
  t.push_back({kONNXDomain, "Cast", 6, lowerCast});
  t.push_back({kONNXDomain, "Gelu", 20, lowerGelu});
}
