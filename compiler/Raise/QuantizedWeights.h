//===- QuantizedWeights.h - Weights a model brings quantized ----*- C++ -*-===//
//
// ONNX carries already-quantized weights in two forms: QDQ
// (DequantizeLinear over a constant integer weight feeding MatMul; per
// tensor, per output channel, or in blocks along K) and ONNX Runtime's
// com.microsoft MatMulNBits (ONNX Runtime GenAI's model builder and Olive:
// int4 or int8 codes in blocks along K, a scale and optional zero point per
// block), with com.microsoft GatherBlockQuantized for an embedding table
// quantized the same way. The weights become one folio.dequantize over
// constants: signed codes (i8, or i4 for 4 bits; unsigned codes and zero
// points are shifted by 128 or 8, which leaves code - zero unchanged), f32
// scales and zero points of the data's rank, and block_size for blocks. The
// plan stores it packed from those codes (compiler/Plan/StoreWeights.h). An
// embedding gathers from a dequantized f32 copy of its table.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RAISE_QUANTIZEDWEIGHTS_H
#define FOLIO_RAISE_QUANTIZEDWEIGHTS_H

#include "dialects/Folio/IR/ConstantData.h"
#include "dialects/Folio/IR/FolioOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::folio {

/// The weight a DequantizeLinear over a constant rank-2 integer tensor
/// stands for, as a folio.dequantize (f32 result) built before `dq`; null
/// when the node is not of that form (computed input, unsupported types).
Value raiseDequantizeLinearWeight(OpBuilder &b, ONNXNodeOp dq);

/// Replaces a com.microsoft MatMulNBits with constant B, scales, zero
/// points and bias by folio.linear over a folio.dequantize of the [N, K]
/// weight (out_in). Returns false, changing nothing, when an input is not
/// a constant or A is not f32 (the node is then left for the lowering to
/// refuse, by name).
bool raiseMatMulNBits(OpBuilder &b, ONNXNodeOp node);

/// The [rows, K] table a com.microsoft GatherBlockQuantized gathers from
/// (the embedding form its shape inference accepts: constant int4/uint4
/// codes, or uint8 ones packed as MatMulNBits packs B, with constant scales
/// and zero points), in the canonical signed form; nullopt when an input is
/// not such a constant or the result is not f32.
std::optional<QuantizedWeight> readGatherBlockQuantizedTable(ONNXNodeOp node);

/// An f32 constant holding the values of `weight`, a folio.dequantize over
/// constants, transposed when `transpose`, in a resource named `name`:
/// what an embedding gathers from a quantized table (the lookup reads f32
/// rows; the plan stores tables 16-bit). Null if `weight` is not such a
/// rank-2 weight.
Value createDequantizedConstant(OpBuilder &b, Location loc, Value weight,
                                bool transpose, StringRef name);

/// The same for a quantized weight already read (a quantized embedding
/// table that is not in the IR as a folio.dequantize).
Value createDequantizedConstant(OpBuilder &b, Location loc,
                                const QuantizedWeight &weight, bool transpose,
                                StringRef name);

} // namespace mlir::folio

#endif // FOLIO_RAISE_QUANTIZEDWEIGHTS_H
