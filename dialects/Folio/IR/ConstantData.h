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

#include <vector>

namespace mlir::folio {

/// The row-major bytes of a constant of `numElements` elements of
/// `elementSize` bytes each (sub-byte integers take one byte, as MLIR
/// stores them): a resource blob's data, a dense attribute's raw data, or a
/// splat expanded into `splat`. Empty when the size does not match or the
/// attribute holds no data.
ArrayRef<char> getConstantBytes(ElementsAttr value, size_t numElements,
                                size_t elementSize, std::vector<char> &splat);

/// Whether `op` is a folio.dequantize whose operands are all constants: a
/// weight the model stores quantized. Such an op is data, not work: fusion
/// leaves it out of kernels and the plan lowering stores it (packed by
/// compiler/Plan/StoreWeights.h).
bool isWeightDequantize(Operation *op);

} // namespace mlir::folio

#endif // FOLIO_IR_CONSTANTDATA_H
