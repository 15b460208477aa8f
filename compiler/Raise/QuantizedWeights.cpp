//===- QuantizedWeights.cpp - Weights a model brings quantized ------------===//

#include "compiler/Raise/QuantizedWeights.h"

#include "compiler/ONNXOps/Match.h"
#include "dialects/Folio/IR/ConstantData.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringExtras.h"

#include <cstring>

using namespace mlir;
using namespace mlir::folio;

namespace {

RankedTensorType staticTensor(Value v) {
  auto t = dyn_cast_or_null<RankedTensorType>(v ? v.getType() : Type());
  return t && t.hasStaticShape() ? t : RankedTensorType();
}

ElementsAttr constantOf(Value v) {
  auto c = v ? v.getDefiningOp<arith::ConstantOp>() : arith::ConstantOp();
  return c ? dyn_cast<ElementsAttr>(c.getValue()) : ElementsAttr();
}

/// The elements of a constant 8- or 4-bit integer tensor as bytes (MLIR
/// stores 4-bit integers a byte each).
std::optional<std::vector<uint8_t>> readBytes(Value v) {
  RankedTensorType t = staticTensor(v);
  ElementsAttr attr = constantOf(v);
  if (!t || !attr ||
      !(t.getElementType().isInteger(8) || t.getElementType().isInteger(4)))
    return std::nullopt;
  std::vector<char> splat;
  ArrayRef<char> raw =
      getConstantBytes(attr, size_t(t.getNumElements()), 1, splat);
  if (raw.size() != size_t(t.getNumElements()))
    return std::nullopt;
  return std::vector<uint8_t>(raw.begin(), raw.end());
}

/// The elements of a constant f32, f16 or bf16 tensor, widened to f32.
std::optional<std::vector<float>> readFloats(Value v) {
  ElementsAttr attr = constantOf(v);
  if (!staticTensor(v) || !attr)
    return std::nullopt;
  return readFloatElements(attr);
}

/// A resource-backed constant of `type` holding `bytes` (codes: one byte
/// per element, as MLIR stores sub-byte integers).
Value byteConstant(OpBuilder &b, Location loc, RankedTensorType type,
                   ArrayRef<int8_t> bytes, StringRef name) {
  AsmResourceBlob blob = HeapAsmResourceBlob::allocate(bytes.size(), 64);
  std::memcpy(blob.getMutableData().data(), bytes.data(), bytes.size());
  return b.create<arith::ConstantOp>(
      loc,
      DenseResourceElementsAttr::get(type, resourceKey(name), std::move(blob)));
}

Value floatConstant(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                    ArrayRef<float> values) {
  auto type = RankedTensorType::get(shape, b.getF32Type());
  return b.create<arith::ConstantOp>(loc, DenseElementsAttr::get(type, values));
}

/// Element `i` of a row of uint8 codes packed as MatMulNBits packs B (and
/// its zero points): 4 bits two a byte, low nibble first, or 8 bits a byte.
int packedCode(const uint8_t *row, int64_t i, int64_t bits) {
  if (bits == 8)
    return row[i];
  return i % 2 ? row[i / 2] >> 4 : row[i / 2] & 0xf;
}

std::string baseName(ONNXNodeOp node) {
  std::string name = node.getNodeName().str();
  return name.empty() ? "quantized_weight" : name;
}

} // namespace

Value mlir::folio::raiseDequantizeLinearWeight(OpBuilder &b, ONNXNodeOp dq) {
  Value x = getONNXInput(dq, 0), scale = getONNXInput(dq, 1),
        zero = getONNXInput(dq, 2);
  RankedTensorType xType = staticTensor(x), scaleType = staticTensor(scale),
                   outType = staticTensor(dq.getResult(0));
  if (!xType || xType.getRank() != 2 || !scaleType || !outType ||
      !outType.getElementType().isF32())
    return {};
  auto xInt = dyn_cast<IntegerType>(xType.getElementType());
  if (!xInt || (xInt.getWidth() != 8 && xInt.getWidth() != 4))
    return {};
  unsigned bits = xInt.getWidth();
  bool isUnsigned = xInt.isUnsigned();
  // Unsigned codes and zero points shift by 2^(bits-1).
  int offset = isUnsigned ? 1 << (bits - 1) : 0;
  std::optional<std::vector<uint8_t>> codes = readBytes(x);
  std::optional<std::vector<float>> scales = readFloats(scale);
  if (!codes || !scales)
    return {};
  std::optional<std::vector<uint8_t>> zeros;
  if (zero) {
    zeros = readBytes(zero);
    if (!zeros || staticTensor(zero).getShape() != scaleType.getShape())
      return {};
  }
  // The scale's shape as one of the data's rank: per tensor (rank 0), per
  // axis (rank 1 along `axis`), or blocked along `axis` (rank 2).
  int64_t blockSize = getONNXIntAttr(dq, "block_size", 0);
  int64_t axis = getONNXIntAttr(dq, "axis", 1);
  if (axis < 0)
    axis += 2;
  if (axis < 0 || axis > 1)
    return {};
  SmallVector<int64_t, 2> scaleShape;
  if (scaleType.getRank() == 0) {
    if (blockSize != 0)
      return {};
  } else if (scaleType.getRank() == 1 && blockSize == 0) {
    if (scaleType.getDimSize(0) != xType.getDimSize(axis))
      return {};
    scaleShape = {1, 1};
    scaleShape[axis] = xType.getDimSize(axis);
  } else if (scaleType.getRank() == 2 && blockSize > 0) {
    for (int64_t d = 0; d < 2; ++d) {
      int64_t want = d == axis
                         ? (xType.getDimSize(d) + blockSize - 1) / blockSize
                         : xType.getDimSize(d);
      if (scaleType.getDimSize(d) != want)
        return {};
    }
    scaleShape.assign(scaleType.getShape().begin(), scaleType.getShape().end());
  } else {
    return {};
  }
  // Signed codes: an unsigned code q and zero z are q - 2^(bits-1) and
  // z - 2^(bits-1) (an absent unsigned zero point is 0). Signed 4-bit
  // values arrive sign-extended to a byte.
  std::vector<int8_t> signedCodes(codes->size()), signedZeros;
  for (size_t i = 0; i < codes->size(); ++i)
    signedCodes[i] = int8_t(int((*codes)[i]) - offset);
  if (zeros || isUnsigned) {
    signedZeros.assign(scales->size(), int8_t(-offset));
    if (zeros)
      for (size_t i = 0; i < zeros->size(); ++i)
        signedZeros[i] = int8_t(int((*zeros)[i]) - offset);
  }
  Location loc = dq.getLoc();
  Type codeType = b.getIntegerType(bits);
  std::string name = baseName(dq);
  Value codeValue =
      byteConstant(b, loc, RankedTensorType::get(xType.getShape(), codeType),
                   signedCodes, name + "_codes");
  Value scaleValue = floatConstant(b, loc, scaleShape, *scales);
  Value zeroValue;
  if (!signedZeros.empty())
    zeroValue =
        byteConstant(b, loc, RankedTensorType::get(scaleShape, codeType),
                     signedZeros, name + "_zero_points");
  return b.create<DequantizeOp>(loc, outType, codeValue, scaleValue, zeroValue,
                                b.getI64IntegerAttr(blockSize));
}

bool mlir::folio::raiseMatMulNBits(OpBuilder &b, ONNXNodeOp node) {
  Value a = getONNXInput(node, 0), packed = getONNXInput(node, 1),
        scale = getONNXInput(node, 2), zero = getONNXInput(node, 3),
        bias = getONNXInput(node, 5);
  auto aType = dyn_cast<RankedTensorType>(a.getType());
  auto outType = dyn_cast<RankedTensorType>(node.getResult(0).getType());
  if (!aType || !aType.getElementType().isF32() || !outType ||
      getONNXInput(node, 4))
    return false;
  int64_t k = getONNXIntAttr(node, "K", 0), n = getONNXIntAttr(node, "N", 0),
          bits = getONNXIntAttr(node, "bits", 4),
          blockSize = getONNXIntAttr(node, "block_size", 0);
  if (k <= 0 || n <= 0 || (bits != 4 && bits != 8) || blockSize < 16)
    return false;
  int64_t blocks = (k + blockSize - 1) / blockSize;
  int64_t blobBytes = blockSize * bits / 8;
  std::optional<std::vector<uint8_t>> b8 = readBytes(packed);
  std::optional<std::vector<float>> scales = readFloats(scale);
  if (!b8 || int64_t(b8->size()) != n * blocks * blobBytes || !scales ||
      int64_t(scales->size()) != n * blocks)
    return false;
  std::optional<std::vector<uint8_t>> zeros;
  int64_t zeroRowBytes = (blocks * bits + 7) / 8;
  if (zero) {
    zeros = readBytes(zero);
    if (!zeros || int64_t(zeros->size()) != n * zeroRowBytes)
      return false;
  }
  std::optional<std::vector<float>> biasValues;
  if (bias) {
    biasValues = readFloats(bias);
    if (!biasValues || int64_t(biasValues->size()) != n)
      return false;
  }
  // Codes of the [N, K] weight, signed: 4-bit q stands for q - 8 (the
  // default zero point 8 becomes 0), 8-bit q for q - 128.
  int offset = bits == 4 ? 8 : 128;
  std::vector<int8_t> codes(size_t(n * k));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c) {
      int64_t blk = c / blockSize, i = c % blockSize;
      const uint8_t *blob = b8->data() + (r * blocks + blk) * blobBytes;
      codes[size_t(r * k + c)] = int8_t(packedCode(blob, i, bits) - offset);
    }
  std::vector<int8_t> zeroCodes;
  if (zeros) {
    zeroCodes.resize(size_t(n * blocks));
    for (int64_t r = 0; r < n; ++r)
      for (int64_t blk = 0; blk < blocks; ++blk) {
        const uint8_t *row = zeros->data() + r * zeroRowBytes;
        zeroCodes[size_t(r * blocks + blk)] =
            int8_t(packedCode(row, blk, bits) - offset);
      }
  }
  Location loc = node.getLoc();
  b.setInsertionPoint(node);
  Type codeType = b.getIntegerType(unsigned(bits));
  std::string name = baseName(node);
  Value codeValue = byteConstant(
      b, loc, RankedTensorType::get({n, k}, codeType), codes, name + "_codes");
  Value scaleValue = floatConstant(b, loc, {n, blocks}, *scales);
  Value zeroValue;
  if (zeros)
    zeroValue =
        byteConstant(b, loc, RankedTensorType::get({n, blocks}, codeType),
                     zeroCodes, name + "_zero_points");
  auto weightType = RankedTensorType::get({n, k}, b.getF32Type());
  auto weight =
      b.create<DequantizeOp>(loc, weightType, codeValue, scaleValue, zeroValue,
                             b.getI64IntegerAttr(blockSize));
  // accuracy_level 4 lets ONNX Runtime compute with int8 activations; the
  // other levels (0 unset, 1 f32, 2 f16, 3 bf16) are above what Folio's
  // kernels keep, f32.
  if (getONNXIntAttr(node, "accuracy_level", 0) == 4)
    weight.setInt8Activations(true);
  Value biasValue =
      biasValues ? floatConstant(b, loc, {n}, *biasValues) : Value();
  auto linear = b.create<LinearOp>(
      loc, outType, a, weight, biasValue,
      WeightLayoutAttr::get(b.getContext(), WeightLayout::out_in));
  node.getResult(0).replaceAllUsesWith(linear.getResult());
  return true;
}

std::optional<QuantizedWeight>
mlir::folio::readGatherBlockQuantizedTable(ONNXNodeOp node) {
  Value data = getONNXInput(node, 0), scale = getONNXInput(node, 2),
        zero = getONNXInput(node, 3);
  RankedTensorType dataType = staticTensor(data);
  auto outType = dyn_cast<RankedTensorType>(node.getResult(0).getType());
  if (!dataType || dataType.getRank() != 2 || !outType ||
      !outType.getElementType().isF32())
    return std::nullopt;
  auto dataInt = dyn_cast<IntegerType>(dataType.getElementType());
  if (!dataInt)
    return std::nullopt;
  bool packed = dataInt.isUnsigned() && dataInt.getWidth() == 8;
  int64_t bits = packed ? getONNXIntAttr(node, "bits", 4) : 4;
  int64_t blockSize = getONNXIntAttr(node, "block_size", 128);
  if ((!packed && dataInt.getWidth() != 4) || (bits != 4 && bits != 8) ||
      blockSize < 16)
    return std::nullopt;
  int64_t rows = dataType.getDimSize(0), stored = dataType.getDimSize(1);
  int64_t k = packed ? stored * 8 / bits : stored;
  int64_t blocks = (k + blockSize - 1) / blockSize;
  std::optional<std::vector<uint8_t>> raw = readBytes(data);
  std::optional<std::vector<float>> scales = readFloats(scale);
  if (!raw || !scales || int64_t(scales->size()) != rows * blocks)
    return std::nullopt;
  std::optional<std::vector<uint8_t>> zeros;
  int64_t zeroRowBytes = packed ? (blocks * bits + 7) / 8 : blocks;
  if (zero) {
    zeros = readBytes(zero);
    if (!zeros || int64_t(zeros->size()) != rows * zeroRowBytes)
      return std::nullopt;
  }
  // Signed codes as everywhere else (QuantizedWeights.h): unsigned values
  // and zero points shift by 2^(bits-1). Packed uint8 data's absent zero
  // point is 2^(bits-1), which becomes 0; uint4's is 0, which becomes -8.
  bool isUnsigned = dataInt.isUnsigned();
  int offset = isUnsigned ? 1 << (bits - 1) : 0;
  // int4/uint4 data holds one code per byte (its low 4 bits, as MLIR
  // stores sub-byte integers; int4 sign-extended from them).
  int64_t packing = packed ? bits : 8;
  auto value = [&](const uint8_t *row, int64_t i) {
    int v = packedCode(row, i, packing);
    return packed || isUnsigned ? v : ((v & 0xf) ^ 8) - 8;
  };
  QuantizedWeight q;
  q.rows = rows;
  q.cols = k;
  q.bits = int(bits);
  q.colBlock = blockSize;
  q.scaleRows = rows;
  q.scaleCols = blocks;
  q.scales = std::move(*scales);
  q.codes.resize(size_t(rows * k));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < k; ++c)
      q.codes[size_t(r * k + c)] =
          int8_t(value(raw->data() + r * stored, c) - offset);
  if (zeros || (isUnsigned && !packed)) {
    q.zeros.assign(size_t(rows * blocks), int8_t(-offset));
    if (zeros)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < blocks; ++j)
          q.zeros[size_t(r * blocks + j)] =
              int8_t(value(zeros->data() + r * zeroRowBytes, j) - offset);
  }
  return q;
}

Value mlir::folio::createDequantizedConstant(OpBuilder &b, Location loc,
                                             Value weight, bool transpose,
                                             StringRef name) {
  std::string why;
  FailureOr<QuantizedWeight> q =
      readQuantizedWeight(weight.getDefiningOp(), why);
  if (failed(q))
    return {};
  return createDequantizedConstant(b, loc, *q, transpose, name);
}

Value mlir::folio::createDequantizedConstant(OpBuilder &b, Location loc,
                                             const QuantizedWeight &q,
                                             bool transpose, StringRef name) {
  int64_t rows = transpose ? q.cols : q.rows,
          cols = transpose ? q.rows : q.cols;
  AsmResourceBlob blob =
      HeapAsmResourceBlob::allocate(size_t(rows * cols) * 4, 64);
  auto *out = reinterpret_cast<float *>(blob.getMutableData().data());
  for (int64_t i = 0; i < q.rows; ++i)
    for (int64_t j = 0; j < q.cols; ++j)
      out[transpose ? j * q.rows + i : i * q.cols + j] = q.valueAt(i, j);
  auto type = RankedTensorType::get({rows, cols}, b.getF32Type());
  return b.create<arith::ConstantOp>(
      loc,
      DenseResourceElementsAttr::get(type, resourceKey(name), std::move(blob)));
}
