//===- Evaluator.h - Run small ONNX subgraphs on concrete inputs -*- C++
//-*-===//
//
// Masks and rotary angles are recognised by what they compute, not by the
// shape of the subgraph that computes them: exporters write causal masks with
// Trilu, Range/LessOrEqual, Where with -inf or finfo.min, and rotary tables as
// inv_freq products or gathered caches. The raise passes run those subgraphs
// on a few small concrete inputs with this evaluator and compare the result
// with what the folio op would compute.
//
// Values are held as doubles whatever their element type: the inputs are
// small, and an exact float32 emulation is not needed to tell 0 from
// finfo.min or to read back an angle.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RAISEATTENTION_EVALUATOR_H
#define FOLIO_RAISEATTENTION_EVALUATOR_H

#include "compiler/ONNXOps/ShapeInference.h"

#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <vector>

namespace mlir::folio {

/// A dense tensor of concrete values.
struct ConcreteTensor {
  enum class Kind { Float, Int, Bool };
  Kind kind = Kind::Float;
  SmallVector<int64_t, 4> shape;
  std::vector<double> data;

  int64_t getNumElements() const;
  int64_t getRank() const { return shape.size(); }
  /// The shape as "[2, 1, 5]", for messages.
  std::string describeShape() const;
  /// The element at `index` (one entry per dim); a dim of size 1 broadcasts,
  /// so any index reads its only element.
  double at(ArrayRef<int64_t> index) const;

  static ConcreteTensor filled(Kind kind, ArrayRef<int64_t> shape,
                               double value);
};

/// Evaluates folio.onnx_node and arith.constant producers of a value. Block
/// arguments and any other value can be bound to a concrete tensor; `Shape`
/// reads dims from the symbolic facts of shape inference when every symbol
/// in them is bound, so that a mask's Shape(hidden_states) does not force
/// evaluating the whole network.
class ONNXEvaluator {
public:
  explicit ONNXEvaluator(ONNXShapeInference &inference)
      : inference(inference) {}

  void bind(Value value, ConcreteTensor tensor);
  /// Binds the named dim symbol `name` (a graph input's dim name).
  void bindSymbol(AffineExpr symbol, int64_t value);

  /// The value computed for `value`, or null with getError() saying which
  /// node could not be evaluated and why.
  const ConcreteTensor *evaluate(Value value);

  const std::string &getError() const { return error; }
  /// The operation the error is about (may be null).
  Operation *getErrorOp() const { return errorOp; }
  /// Whether the error is the graph's own: inputs whose shapes ONNX does
  /// not broadcast (ONNX Runtime fails there too), rather than something
  /// the evaluator cannot compute.
  bool isUndefined() const { return undefined; }

  /// The dims of `value` from its facts, if all are known under the current
  /// symbol bindings.
  std::optional<SmallVector<int64_t, 4>> getConcreteDims(Value value) const;

private:
  LogicalResult evaluateOp(Operation *op);
  LogicalResult fail(Operation *op, const Twine &message);
  std::optional<int64_t> evaluateExpr(AffineExpr expr) const;

  ONNXShapeInference &inference;
  llvm::DenseMap<Value, ConcreteTensor> values;
  llvm::DenseMap<unsigned, int64_t> symbols;
  std::string error;
  Operation *errorOp = nullptr;
  bool undefined = false;
};

} // namespace mlir::folio

#endif // FOLIO_RAISEATTENTION_EVALUATOR_H
