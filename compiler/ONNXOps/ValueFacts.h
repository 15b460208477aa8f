//===- ValueFacts.h - What shape inference knows about a value --*- C++ -*-===//
//
// Exported decoders compute shapes at run time (Shape -> Gather -> Concat ->
// Reshape) from dims that are symbolic (batch, sequence, past). Raising and
// page-kv need those shapes in terms of the symbols, so every value carries
// its dims as affine expressions over named dim symbols, and small integer
// tensors (shape vectors, axes, scalars) carry their elements the same way.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_ONNXOPS_VALUEFACTS_H
#define FOLIO_ONNXOPS_VALUEFACTS_H

#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::folio {

/// Small integer and float tensors up to this many elements have their
/// elements tracked (shape vectors, axes, scales).
inline constexpr int64_t kMaxTrackedElements = 64;

/// Bounds on what inference accepts of a value, so that hostile shapes get
/// an error instead of an overflow or a huge allocation: a value's constant
/// dims may multiply to at most kMaxElementCount elements (the loader bounds
/// graph inputs the same way), and a rank read from a shape vector's length
/// may be at most kMaxRank.
inline constexpr int64_t kMaxElementCount = int64_t(1) << 40;
inline constexpr int64_t kMaxRank = 64;

struct ONNXValueFacts {
  /// Always set once a value is inferred.
  Type elementType;
  /// nullopt: the rank is unknown. A null entry: that dim is unknown.
  std::optional<SmallVector<AffineExpr, 4>> dims;
  /// For integer (and bool) tensors of rank <= 1 with a known, small size:
  /// every element as a constant, a symbolic expression, or null (unknown).
  std::optional<SmallVector<AffineExpr, 4>> ints;
  /// For float tensors with a known, small number of elements whose values
  /// are all known: the values, row-major.
  std::optional<SmallVector<double, 4>> floats;

  /// A tensor type with the constant dims static and the others dynamic.
  TensorType getType() const;
  std::optional<int64_t> getRank() const {
    return dims ? std::optional<int64_t>(dims->size()) : std::nullopt;
  }
  /// The element count when every dim is a constant; nullopt also when a
  /// dim is negative or the product overflows.
  std::optional<int64_t> getStaticNumElements() const;
  /// True if every tracked integer element is a constant.
  bool hasConstantInts() const;
  /// The integer elements as constants; nullopt if any is not constant.
  std::optional<SmallVector<int64_t, 4>> getConstantInts() const;
};

/// The constant value of a dim expression, if it is one.
std::optional<int64_t> getConstantDim(AffineExpr expr);

/// a * b, or nullopt on overflow.
std::optional<int64_t> checkedMul(int64_t a, int64_t b);
/// a + b, or nullopt on overflow.
std::optional<int64_t> checkedAdd(int64_t a, int64_t b);

} // namespace mlir::folio

#endif // FOLIO_ONNXOPS_VALUEFACTS_H
