//===- Lowering.h - ONNX nodes to folio ops, per handler ---------*- C++
//-*-===//
//
// The lowering hooks of the ONNX op table: keyed like the inference
// handlers by (domain, op type, since-version), resolved the same way (the
// largest since-version not above the model's opset). A hook rewrites one
// `folio.onnx_node` into the closed set of folio ops (folio.binary, unary,
// cast, reshape, transpose, slice, concat) using the shape facts inference
// gave its values, so every shape it emits is static but for the token
// count. A hook that cannot lower its node says why; the node then stays
// and folio-verify-lowered reports it, naming node, op and opset.
//
// Shape arithmetic (Shape, Gather, Concat of shape vectors) has no hook on
// purpose: once the reshapes it fed are lowered with static shapes it is
// dead, and if it is still used, the model computes a shape at run time
// that Folio could not fold. Hooks that rewrite integer tensors (an
// Unsqueeze of position ids) carry the values' facts over to the new ops,
// so a later hook still sees their constant elements.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_ONNXOPS_LOWERING_H
#define FOLIO_ONNXOPS_LOWERING_H

#include "compiler/ONNXOps/ShapeInference.h"
#include "dialects/Folio/IR/FolioOps.h"

#include "mlir/IR/PatternMatch.h"

#include <optional>
#include <string>

namespace mlir::folio {

/// What a lowering hook sees of one node.
class ONNXLoweringContext {
public:
  /// Reasons for failures go to `reasons` (not onto the node: a pattern
  /// that fails must leave the IR as it found it).
  ONNXLoweringContext(ONNXNodeOp node, PatternRewriter &rewriter,
                      ONNXShapeInference &inference,
                      llvm::DenseMap<Operation *, std::string> &reasons)
      : node(node), rewriter(rewriter), inference(inference), reasons(reasons) {
  }

  ONNXNodeOp getNode() const { return node; }
  PatternRewriter &getRewriter() const { return rewriter; }
  Location getLoc() const { return node.getLoc(); }
  StringRef getOpType() const { return node.getOpType(); }

  /// The operand at ONNX input position `i`, null when absent.
  Value input(unsigned i) const;
  /// The facts shape inference has for `v` (null if none).
  const ONNXValueFacts *facts(Value v) const { return inference.lookup(v); }
  /// The elements of the small integer tensor at ONNX input `i`, when all
  /// are constants.
  std::optional<SmallVector<int64_t, 4>> constantInts(unsigned i) const;
  /// Result `i`'s type with every dim inference proved constant made
  /// static (the node's declared type where inference knows less).
  RankedTensorType resultType(unsigned i) const;
  /// The same for any value.
  RankedTensorType refinedType(Value v) const;

  /// Integer attribute `name`, or `dflt`.
  int64_t getInt(StringRef name, int64_t dflt) const;
  /// Integer list attribute `name` (empty when missing).
  SmallVector<int64_t> getInts(StringRef name) const;

  /// Replaces the node by `values` (one per result), carrying the facts
  /// inference had for its results over to them: a later hook may ask for
  /// the constant elements of a value this one made.
  void replaceNode(ValueRange values) const;

  /// Records why the node stays unlowered and fails.
  LogicalResult fail(const Twine &reason) const;

private:
  mutable ONNXNodeOp node;
  PatternRewriter &rewriter;
  ONNXShapeInference &inference;
  llvm::DenseMap<Operation *, std::string> &reasons;
};

using ONNXLowerFn = LogicalResult (*)(ONNXLoweringContext &);

struct ONNXLowering {
  StringRef domain;
  StringRef opType;
  int64_t sinceVersion;
  ONNXLowerFn lower;
};

/// The hook for `opType` in `domain` at `opset`, or nullptr.
const ONNXLowering *lookupONNXLowering(StringRef domain, StringRef opType,
                                       int64_t opset);
/// "Add, Concat, ...": the ops of `domain` that lower, for messages.
std::string listLoweredONNXOps(StringRef domain);

/// Registration, one function per file of hooks.
void appendElementwiseLowerings(std::vector<ONNXLowering> &table);
void appendDataMovementLowerings(std::vector<ONNXLowering> &table);

/// `type` with the dims `facts` proves constant made static.
RankedTensorType refineType(RankedTensorType type, const ONNXValueFacts *facts);

/// The hook of every op that only reinterprets elements (Reshape,
/// Unsqueeze, Squeeze, Flatten, a Cast to the same type): a folio.reshape
/// to the proven result type, refused when it would need two dynamic dims.
LogicalResult lowerReshapeLike(ONNXLoweringContext &ctx);

/// A reshape of `value` to `type`, or `value` itself when the types agree.
Value createReshape(PatternRewriter &rewriter, Location loc, Value value,
                    RankedTensorType type);

} // namespace mlir::folio

#endif // FOLIO_ONNXOPS_LOWERING_H
