//===- FolioTensorOps.cpp - Elementwise and data-movement ops -------------===//
//
// Verifiers, folders and canonicalizations of the ops that carry what is
// left of a model outside its big ops: folio.binary, folio.unary,
// folio.cast, folio.reshape, folio.transpose, folio.slice, folio.concat.
// Shapes are checked where they are static; a dynamic dim is the step's
// token count, which the runtime checks when it binds real buffers.
//
//===----------------------------------------------------------------------===//

#include "dialects/Folio/IR/FolioOps.h"
#include "dialects/Folio/IR/VerifierUtils.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::folio;
using namespace mlir::folio::detail;

namespace {

/// Parses `keyword` into an enum attribute through `symbolize`.
template <typename AttrT, typename SymbolizeFn>
ParseResult parseKindKeyword(OpAsmParser &parser, AttrT &kind,
                             SymbolizeFn symbolize, StringRef what) {
  StringRef keyword;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseKeyword(&keyword))
    return failure();
  auto value = symbolize(keyword);
  if (!value)
    return parser.emitError(loc)
           << "unknown " << what << " kind '" << keyword << "'";
  kind = AttrT::get(parser.getContext(), *value);
  return success();
}

/// The number of dynamic dims of a type.
int64_t numDynamic(RankedTensorType t) {
  return llvm::count_if(t.getShape(), ShapedType::isDynamic);
}

/// The product of the static dims.
int64_t staticProduct(RankedTensorType t) {
  int64_t n = 1;
  for (int64_t d : t.getShape())
    if (!ShapedType::isDynamic(d))
      n *= d;
  return n;
}

/// Checks that `out`'s static dims equal `in`'s (same rank assumed).
LogicalResult checkSameDims(Operation *op, RankedTensorType in,
                            RankedTensorType out) {
  for (int64_t i = 0, e = in.getRank(); i < e; ++i) {
    int64_t x = in.getDimSize(i), y = out.getDimSize(i);
    if (!compatible(x, y))
      return op->emitOpError() << "result dim " << i << " (" << y
                               << ") differs from the input's (" << x << ")";
  }
  return success();
}

} // namespace

namespace mlir::folio {

ParseResult parseBinaryKind(OpAsmParser &parser, BinaryKindAttr &kind) {
  return parseKindKeyword(
      parser, kind, [](StringRef s) { return symbolizeBinaryKind(s); },
      "binary");
}
void printBinaryKind(OpAsmPrinter &printer, Operation *, BinaryKindAttr kind) {
  printer << stringifyBinaryKind(kind.getValue());
}
ParseResult parseUnaryKind(OpAsmParser &parser, UnaryKindAttr &kind) {
  return parseKindKeyword(
      parser, kind, [](StringRef s) { return symbolizeUnaryKind(s); }, "unary");
}
void printUnaryKind(OpAsmPrinter &printer, Operation *, UnaryKindAttr kind) {
  printer << stringifyUnaryKind(kind.getValue());
}

} // namespace mlir::folio

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

std::optional<std::string> mlir::folio::checkBroadcast(RankedTensorType a,
                                                       RankedTensorType b,
                                                       RankedTensorType r) {
  int64_t rank = std::max(a.getRank(), b.getRank());
  if (r.getRank() != rank)
    return "result rank " + std::to_string(r.getRank()) +
           " is not the broadcast rank " + std::to_string(rank);
  // NumPy broadcasting: align trailing dims; static dims other than 1 must
  // agree, and the result's static dims must be what broadcasting gives.
  for (int64_t i = 0; i < rank; ++i) {
    auto dimOf = [&](RankedTensorType t) -> int64_t {
      int64_t j = i - (rank - t.getRank());
      return j < 0 ? 1 : t.getDimSize(j);
    };
    int64_t x = dimOf(a), y = dimOf(b), z = r.getDimSize(i);
    bool xs = !ShapedType::isDynamic(x), ys = !ShapedType::isDynamic(y);
    if (xs && ys && x != 1 && y != 1 && x != y)
      return "operand dims " + std::to_string(x) + " and " + std::to_string(y) +
             " (result dim " + std::to_string(i) + ") do not broadcast";
    if (ShapedType::isDynamic(z))
      continue;
    int64_t expected = ShapedType::kDynamic;
    if (xs && ys)
      expected = x == 1 ? y : x;
    else if (xs && x != 1)
      expected = x;
    else if (ys && y != 1)
      expected = y;
    if (!ShapedType::isDynamic(expected) && expected != z)
      return "result dim " + std::to_string(i) + " is " + std::to_string(z) +
             " but the operands broadcast to " + std::to_string(expected);
  }
  return std::nullopt;
}

LogicalResult BinaryOp::verify() {
  RankedTensorType a = tensorOf(getLhs()), b = tensorOf(getRhs()),
                   r = tensorOf(getResult());
  if (a.getElementType() != b.getElementType() ||
      a.getElementType() != r.getElementType())
    return emitOpError() << "operands and result must share one element "
                            "type, got "
                         << a.getElementType() << ", " << b.getElementType()
                         << " -> " << r.getElementType();
  Type elem = a.getElementType();
  if (!elem.isF32() && !elem.isF16() && !elem.isBF16() &&
      !elem.isSignlessInteger(32) && !elem.isSignlessInteger(64))
    return emitOpError() << "element type " << elem
                         << " is not one of f32, f16, bf16, i32, i64";
  if (getKind() == BinaryKind::pow && !isa<FloatType>(elem))
    return emitOpError() << "pow needs a float element type";
  if (std::optional<std::string> why = checkBroadcast(a, b, r))
    return emitOpError() << *why;
  return success();
}

LogicalResult UnaryOp::verify() {
  RankedTensorType in = tensorOf(getInput()), out = tensorOf(getResult());
  if (in.getElementType() != out.getElementType() ||
      in.getRank() != out.getRank())
    return emitOpError() << "result type " << out
                         << " must have the input's element type and rank ("
                         << in << ")";
  return checkSameDims(*this, in, out);
}

//===----------------------------------------------------------------------===//
// folio.cast
//===----------------------------------------------------------------------===//

static bool isCastable(Type t) {
  return t.isF32() || t.isF16() || t.isBF16() || t.isSignlessInteger(32) ||
         t.isSignlessInteger(64);
}

LogicalResult CastOp::verify() {
  RankedTensorType in = tensorOf(getInput()), out = tensorOf(getResult());
  if (!isCastable(in.getElementType()) || !isCastable(out.getElementType()))
    return emitOpError() << "casts between f32, f16, bf16, i32 and i64 only, "
                            "got "
                         << in.getElementType() << " to "
                         << out.getElementType();
  if (isa<FloatType>(in.getElementType()) !=
      isa<FloatType>(out.getElementType()))
    return emitOpError() << "casts within floats or within integers only, got "
                         << in.getElementType() << " to "
                         << out.getElementType();
  if (in.getRank() != out.getRank())
    return emitOpError() << "result rank " << out.getRank()
                         << " differs from the input's " << in.getRank();
  return checkSameDims(*this, in, out);
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// folio.reshape
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  RankedTensorType in = tensorOf(getInput()), out = tensorOf(getResult());
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "result element type " << out.getElementType()
                         << " differs from the input's " << in.getElementType();
  if (numDynamic(out) > 1)
    return emitOpError() << "result type " << out
                         << " has more than one dynamic dim; all but one "
                            "must be known at compile time";
  if (numDynamic(in) == 0 && numDynamic(out) == 0 &&
      in.getNumElements() != out.getNumElements())
    return emitOpError() << "reshapes " << in.getNumElements()
                         << " elements into " << out.getNumElements();
  if (numDynamic(in) == 0 && numDynamic(out) == 1 && staticProduct(out) != 0 &&
      in.getNumElements() % staticProduct(out) != 0)
    return emitOpError() << in.getNumElements()
                         << " elements do not fill whole rows of "
                         << staticProduct(out);
  if (numDynamic(in) > 0 && numDynamic(out) == 0)
    return emitOpError() << "a dynamic input cannot reshape to the static "
                         << out;
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

namespace {
/// reshape(reshape(x)) -> reshape(x): views compose.
struct ComposeReshapes : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<ReshapeOp>();
    if (!inner)
      return failure();
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), inner.getInput());
    return success();
  }
};
} // namespace

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                            MLIRContext *context) {
  patterns.add<ComposeReshapes>(context);
}

//===----------------------------------------------------------------------===//
// folio.transpose
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::verify() {
  RankedTensorType in = tensorOf(getInput()), out = tensorOf(getResult());
  ArrayRef<int64_t> perm = getPermutation();
  if (int64_t(perm.size()) != in.getRank() || out.getRank() != in.getRank())
    return emitOpError() << "permutation of " << perm.size()
                         << " entries for an input of rank " << in.getRank()
                         << " and a result of rank " << out.getRank();
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "result element type " << out.getElementType()
                         << " differs from the input's " << in.getElementType();
  SmallVector<bool> seen(perm.size(), false);
  for (auto [i, p] : llvm::enumerate(perm)) {
    if (p < 0 || p >= int64_t(perm.size()) || seen[p])
      return emitOpError() << "permutation is not a permutation of 0.."
                           << perm.size() - 1;
    seen[p] = true;
    int64_t x = in.getDimSize(p), y = out.getDimSize(i);
    if (!compatible(x, y))
      return emitOpError() << "result dim " << i << " (" << y
                           << ") is not input dim " << p << " (" << x << ")";
  }
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  for (auto [i, p] : llvm::enumerate(getPermutation()))
    if (int64_t(i) != p)
      return {};
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// folio.slice / folio.concat
//===----------------------------------------------------------------------===//

LogicalResult SliceOp::verify() {
  RankedTensorType in = tensorOf(getInput()), out = tensorOf(getResult());
  int64_t axis = getAxis(), start = getStart(), size = getSize();
  if (in.getElementType() != out.getElementType() ||
      in.getRank() != out.getRank())
    return emitOpError() << "result type " << out
                         << " must have the input's element type and rank ("
                         << in << ")";
  if (axis < 0 || axis >= in.getRank())
    return emitOpError() << "axis " << axis << " is out of range for rank "
                         << in.getRank();
  int64_t dim = in.getDimSize(axis);
  if (ShapedType::isDynamic(dim))
    return emitOpError() << "slices dim " << axis
                         << ", which is dynamic (the token dim)";
  if (start < 0 || size < 0 || start + size > dim)
    return emitOpError() << "range [" << start << ", " << start + size
                         << ") is outside dim " << axis << " of size " << dim;
  for (int64_t i = 0, e = in.getRank(); i < e; ++i) {
    int64_t expected = i == axis ? size : in.getDimSize(i);
    int64_t actual = out.getDimSize(i);
    if (!compatible(expected, actual))
      return emitOpError() << "result dim " << i << " is " << actual
                           << ", expected " << expected;
  }
  return success();
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  RankedTensorType out = tensorOf(getResult());
  int64_t rank = out.getRank(), axis = getAxis();
  if (axis < 0 || axis >= rank)
    return emitOpError() << "axis " << axis << " is out of range for rank "
                         << rank;
  int64_t sum = 0;
  for (auto [n, v] : llvm::enumerate(getInputs())) {
    RankedTensorType t = tensorOf(v);
    if (t.getElementType() != out.getElementType() || t.getRank() != rank)
      return emitOpError() << "input " << n << " (" << t
                           << ") must have the result's element type and "
                              "rank";
    int64_t d = t.getDimSize(axis);
    if (ShapedType::isDynamic(d))
      return emitOpError() << "input " << n << " is dynamic along axis " << axis
                           << " (the token dim)";
    sum += d;
    for (int64_t i = 0; i < rank; ++i) {
      int64_t x = t.getDimSize(i), y = out.getDimSize(i);
      if (i != axis && !compatible(x, y))
        return emitOpError()
               << "input " << n << " dim " << i << " (" << dimString(x)
               << ") differs from the result's (" << dimString(y) << ")";
    }
  }
  int64_t d = out.getDimSize(axis);
  if (!ShapedType::isDynamic(d) && d != sum)
    return emitOpError() << "result dim " << axis << " is " << d
                         << " but the inputs add up to " << sum;
  return success();
}
