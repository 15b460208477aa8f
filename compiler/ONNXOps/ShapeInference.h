//===- ShapeInference.h - Symbolic shape inference for ONNX nodes -*- C++ -*-=//
//
// Runs the op handlers over a graph in order and keeps each value's facts.
// The importer drives it node by node while it builds the module; passes
// re-run it over an imported function (block arguments carry their dim
// names in `folio.dim_names`), so both see the same shapes.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_ONNXOPS_SHAPEINFERENCE_H
#define FOLIO_ONNXOPS_SHAPEINFERENCE_H

#include "compiler/ONNXOps/OpSchema.h"
#include "compiler/ONNXOps/ValueFacts.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir::folio {

/// Argument attribute naming each dim of a function input ("" = unnamed).
inline constexpr llvm::StringLiteral kDimNamesAttrName = "folio.dim_names";

class ONNXShapeInference {
public:
  explicit ONNXShapeInference(MLIRContext *context) : context(context) {}

  MLIRContext *getContext() const { return context; }

  /// The symbol standing for a named dim: one name, one symbol, unless the
  /// name was related to other dims (relateDecoderDims).
  AffineExpr getNamedDim(StringRef name);
  /// Applies the decoder contract (DESIGN.md) to `func`'s inputs, found by
  /// `folio.onnx_name`: attention_mask covers the past and the new tokens,
  /// so its length dim names `past + seq` (`seq` without past inputs)
  /// rather than a symbol of its own. Then a mask sliced past the past
  /// (`mask[:, past:]`, position code) has the new tokens' length. Does
  /// nothing where the names do not give distinct dims. Call before facts
  /// are made for the inputs.
  void relateDecoderDims(func::FuncOp func);
  /// "batch_size * sequence_length + 1": an expression with symbol names.
  std::string describe(AffineExpr expr) const;
  /// "[batch, 4, ?]": dims described as `describe` does.
  std::string describeDims(ArrayRef<AffineExpr> dims) const;

  /// The value's facts. In lazy mode (setLazy), a result of a non-ONNX op
  /// created after run() (a folio op a raise pass made) gets its facts
  /// inferred now from its operands', so facts kept across passes stay
  /// complete.
  const ONNXValueFacts *lookup(Value value) const;
  void setFacts(Value value, ONNXValueFacts facts);
  /// Drops the facts of a value about to disappear (an erased op's result):
  /// a later value may reuse its storage, and so its key.
  void forget(Value value) { facts.erase(value); }
  /// Whether facts are stored for `value` (no lazy inference; the value
  /// need not be alive).
  bool hasFactsFor(Value value) const { return facts.count(value); }
  void setLazy(bool on) { lazy = on; }

  /// Facts of a constant: small integer or float tensors get their values.
  ONNXValueFacts factsForConstant(ElementsAttr value) const;
  /// Facts from a type alone, naming dims from `dimNames` where given.
  ONNXValueFacts factsForType(Type type, ArrayAttr dimNames = {});

  /// Infers the outputs of one node. Fails with a diagnostic at `loc` when
  /// the op is not supported at this opset or its inputs do not fit it.
  LogicalResult inferNode(StringRef domain, StringRef opType, int64_t opset,
                          DictionaryAttr attributes,
                          ArrayRef<const ONNXValueFacts *> inputs,
                          unsigned numOutputs, Location loc,
                          SmallVectorImpl<ONNXValueFacts> &results);

  /// Recomputes the facts of every value in an imported function.
  LogicalResult run(func::FuncOp func);

private:
  const ONNXValueFacts *inferLazily(Value value, unsigned depth);
  /// Fails (at `loc`) when a handler's result could not be a tensor: a rank
  /// over kMaxRank, a negative dim, or more than kMaxElementCount elements.
  LogicalResult checkResultShape(const ONNXValueFacts &out, unsigned index,
                                 StringRef opType, Location loc) const;

  MLIRContext *context;
  bool lazy = false;
  llvm::StringMap<unsigned> symbolIndex;
  /// Named dims that stand for an expression of other named dims.
  llvm::StringMap<AffineExpr> relatedDims;
  std::vector<std::string> symbolNames;
  /// Boxed so that pointers handed to handlers survive later insertions.
  /// Mutable: lazy lookups memoise.
  mutable llvm::DenseMap<Value, std::unique_ptr<ONNXValueFacts>> facts;
};

/// Facts for the result of a folio op (other than onnx_node) or of the
/// tensor/arith reshapes and casts passes insert; nullopt for other ops.
std::optional<ONNXValueFacts> inferNonONNXOp(Operation *op,
                                             ONNXShapeInference &engine);

} // namespace mlir::folio

#endif // FOLIO_ONNXOPS_SHAPEINFERENCE_H
