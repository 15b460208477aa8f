//===- RowProgram.h - The ops of a fused row kernel -------------*- C++ -*-===//
//
// A fused row kernel (residual add + norm, activations, gated activations,
// soft-caps, scalings, ...) is a straight-line program over the elements of
// one token's row, with norms as the only row-wide ops. The compiler's
// folio.kernel regions become such programs (runtime/Device/PlanLaunches
// translates plan steps), and the expression emitter (RowEmitter.cpp)
// turns any program into CUDA C++: a new combination of ops needs no new
// template. Values are f32.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CUDA_ROWPROGRAM_H
#define FOLIO_CODEGEN_CUDA_ROWPROGRAM_H

#include <string>
#include <vector>

namespace folio::cuda {

/// How a kernel input is laid out.
enum class RowInputKind {
  Row,    ///< [rows, dim], a runtime row stride (a slice of a wider row)
  Vector, ///< [dim], the same for every row (a norm weight, a bias)
  Scalar, ///< [1], the same for every element (a runtime scale)
};

enum class RowOpKind {
  Input,     ///< element d of input `index`
  Constant,  ///< `value`, baked into the code
  Unary,     ///< fn(a)
  Binary,    ///< fn(a, b)
  RmsNorm,   ///< a / sqrt(mean(a^2) + eps) * (weightOffset + b); b may be -1
  LayerNorm, ///< (a - mean) / sqrt(var + eps) * b + c; b, c may be -1
  Output,    ///< writes a to output `index`
};

/// One op; operands (a, b, c) are indices of earlier ops.
struct RowOp {
  RowOpKind kind = RowOpKind::Input;
  /// Unary: neg, abs, exp, tanh, erf, sqrt, reciprocal, sigmoid, relu,
  /// silu, gelu_erf, gelu_tanh. Binary: add, sub, mul, div, pow, max, min.
  std::string fn;
  int a = -1, b = -1, c = -1;
  int index = -1;
  double value = 0.0; ///< Constant: the value; norms: epsilon
  double weightOffset = 0.0;
};

/// The most inputs and outputs a row kernel takes (RowArgs' arrays).
constexpr int kMaxRowInputs = 8;
constexpr int kMaxRowOutputs = 4;

/// The unary and binary functions the emitter knows, for diagnostics.
const std::vector<std::string> &rowUnaryFunctions();
const std::vector<std::string> &rowBinaryFunctions();

} // namespace folio::cuda

#endif // FOLIO_CODEGEN_CUDA_ROWPROGRAM_H
