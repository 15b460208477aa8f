//===- RaiseUtils.h - Shared pieces of the attention raise passes -*- C++ -*-=//
//
// Graph-input roles, symbolic dim queries and a builder for the few ONNX
// nodes the passes insert (head split/merge around fused ops, KV concat).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RAISEATTENTION_RAISEUTILS_H
#define FOLIO_RAISEATTENTION_RAISEUTILS_H

#include "compiler/ONNXOps/ShapeInference.h"
#include "dialects/Folio/IR/FolioOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <optional>
#include <string>

namespace mlir::folio {

class ONNXEvaluator;

/// The decoder inputs of the model contract (DESIGN.md), found by name.
struct GraphInputs {
  Value inputIds, attentionMask, positionIds;
  SmallVector<Value> past;
  /// The dim symbols of batch, new tokens, past tokens and the mask length.
  AffineExpr batch, seq, pastLen, total;
  /// Named dims of the past inputs off the sequence axis that the graph
  /// proves constant: Concat(past, new) on the sequence axis needs equal
  /// heads and head sizes, so ONNX Runtime GenAI's `kv_cache_dim` is the
  /// new keys' head size. Bound with the rest, so that Shape(past) is known.
  SmallVector<std::pair<AffineExpr, int64_t>> fixedDims;

  static GraphInputs find(func::FuncOp func, ONNXShapeInference &inference);

  /// Binds the contract's dims in `evaluator`: batch, new tokens, past
  /// tokens, the mask length past + seq, and fixedDims.
  void bindDims(ONNXEvaluator &evaluator, int64_t batchSize, int64_t newTokens,
                int64_t pastTokens) const;
};

/// The node's ONNX name, or its op type when it has none.
std::string describeNode(Operation *op);

/// The dims shape inference knows for `value`; nullopt if its rank is not.
std::optional<SmallVector<AffineExpr, 4>> getDims(ONNXShapeInference &inf,
                                                  Value value);
/// The constant value of dim `i` of `value`, if known.
std::optional<int64_t> getConstDim(ONNXShapeInference &inf, Value value,
                                   int64_t i);
/// True if both values have the same known dims, symbol by symbol.
bool haveSameDims(ONNXShapeInference &inf, Value a, Value b);

/// True if both values have the same rank and no dim known for both
/// differs (broadcasts through unknown shape arithmetic lose dims).
bool haveCompatibleDims(ONNXShapeInference &inf, Value a, Value b);

/// The normalised `axis` input or attribute of a node against `rank`.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// Creates ONNX nodes typed by shape inference, so that later matching in
/// the same pass still sees symbolic dims.
class ONNXNodeBuilder {
public:
  ONNXNodeBuilder(OpBuilder &builder, ONNXShapeInference &inference,
                  int64_t opset)
      : builder(builder), inference(inference), opset(opset) {}

  /// A node with one result; null (with a diagnostic at `loc`) if inference
  /// rejects it.
  Value create(Location loc, StringRef opType, StringRef nodeName,
               ValueRange inputs, ArrayRef<NamedAttribute> attributes = {});
  /// An i64 constant of rank 1 (or rank 0 with `scalar`).
  Value constI64(Location loc, ArrayRef<int64_t> values, bool scalar = false);
  Value constant(Location loc, DenseElementsAttr value);

  /// [B, S, H*D] -> [B, H, S, D]; reuses the 4-D value when `value` is the
  /// merge of one (as left by an earlier rewrite).
  Value splitHeads(Location loc, StringRef name, Value value, int64_t heads);
  /// [B, H, S, D] -> [B, S, H*D].
  Value mergeHeads(Location loc, StringRef name, Value value);
  /// Transpose with `perm`.
  Value transpose(Location loc, StringRef name, Value value,
                  ArrayRef<int64_t> perm);

  OpBuilder &getBuilder() { return builder; }
  ONNXShapeInference &getInference() { return inference; }

private:
  OpBuilder &builder;
  ONNXShapeInference &inference;
  int64_t opset;
};

/// The default-domain opset the module was imported with (17 if unknown).
int64_t getDefaultOpset(Operation *op);

} // namespace mlir::folio

#endif // FOLIO_RAISEATTENTION_RAISEUTILS_H
