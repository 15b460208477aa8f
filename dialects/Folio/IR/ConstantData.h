//===- ConstantData.h - What weight constants hold --------------*- C++ -*-===//
//
// Weights reach the compiler's back half as arith.constant tensors (dense,
// or resource blobs mapped from the model file) and, for weights a model
// stores quantized, as a folio.dequantize over such constants. Raising,
// fusion and the plan lowering all need to recognise and read them.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_IR_CONSTANTDATA_H
#define FOLIO_IR_CONSTANTDATA_H

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::folio {

/// The row-major bytes of a constant of `numElements` elements of
/// `elementSize` bytes each (sub-byte integers take one byte, as MLIR
/// stores them): a resource blob's data, a dense attribute's raw data, or a
/// splat expanded into `splat`. Empty when the size does not match or the
/// attribute holds no data.
ArrayRef<char> getConstantBytes(ElementsAttr value, size_t numElements,
                                size_t elementSize, std::vector<char> &splat);

/// `name` as a resource blob key: resource keys print bare, so they must
/// lex as identifiers ("onnx::MatMul_12" would not; the resource manager
/// uniquifies collisions).
std::string resourceKey(StringRef name);

/// Whether `op` is a folio.dequantize whose operands are all constants: a
/// weight the model stores quantized. Such an op is data, not work: fusion
/// leaves it out of kernels and the plan lowering stores it (packed by
/// compiler/Plan/StoreWeights.h).
bool isWeightDequantize(Operation *op);

/// What a folio.dequantize over constants holds, as a rank-2 weight:
/// element (i, j) is (codes[i, j] - zero) * scale, with the scale and zero
/// of block (i / rowBlock, j / colBlock) of [scaleRows, scaleCols].
struct QuantizedWeight {
  int64_t rows = 0, cols = 0;
  int bits = 8;              ///< 4: codes in [-8, 7]; 8: in [-128, 127]
  std::vector<int8_t> codes; ///< [rows, cols]
  int64_t rowBlock = 1, colBlock = 1;
  int64_t scaleRows = 1, scaleCols = 1;
  std::vector<float> scales; ///< [scaleRows, scaleCols]
  std::vector<int8_t> zeros; ///< [scaleRows, scaleCols]; empty: all 0
  /// The dequantize's int8_activations: consumers may round their input
  /// to int8 per block.
  bool int8Activations = false;

  size_t blockOf(int64_t i, int64_t j) const {
    return size_t((i / rowBlock) * scaleCols + j / colBlock);
  }
  float scaleAt(int64_t i, int64_t j) const { return scales[blockOf(i, j)]; }
  int zeroAt(int64_t i, int64_t j) const {
    return zeros.empty() ? 0 : zeros[blockOf(i, j)];
  }
  float valueAt(int64_t i, int64_t j) const {
    return float(codes[size_t(i * cols + j)] - zeroAt(i, j)) * scaleAt(i, j);
  }
};

/// Reads a weight dequantize (isWeightDequantize) of a static rank-2 f32
/// result from i8 or i4 codes with f32 scales; failure (with `why` set)
/// for any other form.
FailureOr<QuantizedWeight> readQuantizedWeight(Operation *op, std::string &why);

} // namespace mlir::folio

#endif // FOLIO_IR_CONSTANTDATA_H
