//===- InferHelpers.h - Building blocks shared by the handlers --*- C++ -*-===//

#ifndef FOLIO_ONNXOPS_INFERHELPERS_H
#define FOLIO_ONNXOPS_INFERHELPERS_H

#include "compiler/ONNXOps/OpSchema.h"
#include "compiler/ONNXOps/ShapeInference.h"

#include <functional>

namespace mlir::folio::infer {

using Dims = SmallVector<AffineExpr, 4>;

inline AffineExpr cst(ONNXInferenceContext &ctx, int64_t value) {
  return getAffineConstantExpr(value, ctx.getContext());
}

/// Dims that are all constants.
Dims constDims(ONNXInferenceContext &ctx, ArrayRef<int64_t> values);

/// NumPy broadcasting of the present inputs' shapes (nullopt if a rank is
/// unknown). Fails when two constant dims cannot broadcast.
FailureOr<std::optional<Dims>>
broadcastInputs(ONNXInferenceContext &ctx,
                ArrayRef<const ONNXValueFacts *> operands);

/// The dims a 1-D shape input (Expand, Reshape, ConstantOfShape) stands for:
/// its tracked elements, else as many unknown dims as its static length,
/// else nullopt. Fails, naming the input as `what`, when that length is over
/// kMaxRank (a shape vector of 2^62 elements must not become 2^62 dims).
FailureOr<std::optional<Dims>> shapeInputDims(ONNXInferenceContext &ctx,
                                              const ONNXValueFacts &shape,
                                              StringRef what);

/// Copies input `i`'s type and dims to output `o` (values are dropped).
void passThrough(ONNXInferenceContext &ctx, unsigned i = 0, unsigned o = 0);

/// Elementwise ops. The folders see each element pair; a null AffineExpr or
/// nullopt means "unknown".
using IntFold = std::function<AffineExpr(AffineExpr, AffineExpr)>;
using FloatFold = std::function<std::optional<double>(double, double)>;
LogicalResult inferElementwise(ONNXInferenceContext &ctx, Type resultElement,
                               IntFold intFold, FloatFold floatFold);
/// Float-only unary math (Sqrt, Exp, Tanh, ...), folded on constants.
LogicalResult inferUnaryFloat(ONNXInferenceContext &ctx,
                              std::function<double(double)> fn);

/// Requires input `i` to be known as constant integers (an axes or shape
/// input); names the input in the error.
FailureOr<SmallVector<int64_t>> requireConstantInts(ONNXInferenceContext &ctx,
                                                    unsigned i, StringRef what);

/// Whether `expr` is >= 0 for every value of its symbols. Symbols stand
/// for named dims, which are sizes, so sums and products of symbols and
/// non-negative constants qualify (`batch - 1` does not).
bool isProvablyNonNegative(AffineExpr expr);

/// The sign of a - b where it holds for every value of the symbols: -1, 0
/// or 1; nullopt when it depends on them or either is unknown. Lets
/// Equal(batch, -1), the test exporters write for expand(-1), fold.
std::optional<int> compareDims(AffineExpr a, AffineExpr b);

/// True for integer (incl. bool) element types.
inline bool isIntegerLike(Type type) { return isa<IntegerType>(type); }

/// Fails unless input `i` is a float tensor.
LogicalResult requireFloat(ONNXInferenceContext &ctx, unsigned i,
                           StringRef what);

/// The element type an ONNX `to`/`dtype` number denotes, or null.
Type elementTypeFromONNX(MLIRContext *context, int64_t onnxType);

} // namespace mlir::folio::infer

#endif // FOLIO_ONNXOPS_INFERHELPERS_H
