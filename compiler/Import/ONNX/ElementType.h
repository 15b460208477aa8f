//===- ElementType.h - ONNX tensor element types ----------------*- C++ -*-===//
//
// The element types a Folio model may use, numbered as ONNX numbers them so
// that conversion from the protobuf is a range check, not a table.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_IMPORT_ONNX_ELEMENTTYPE_H
#define FOLIO_IMPORT_ONNX_ELEMENTTYPE_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace folio::onnx {

/// ONNX `TensorProto.DataType`, with the same numbers.
enum class ElementType : int32_t {
  Undefined = 0,
  Float = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  UInt32 = 12,
  UInt64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
  Float8E4M3FN = 17,
  Float8E4M3FNUZ = 18,
  Float8E5M2 = 19,
  Float8E5M2FNUZ = 20,
  UInt4 = 21,
  Int4 = 22,
  Float4E2M1 = 23,
};

/// Maps an ONNX data-type number to the enum; nullopt for numbers ONNX has
/// not defined (as of IR version 11).
std::optional<ElementType> elementTypeFromOnnx(int64_t value);

/// The lower-case ONNX name ("float", "bfloat16", "float8e4m3fn", ...).
llvm::StringRef getElementTypeName(ElementType type);

/// Folio handles numeric types: strings and complex numbers have no use in
/// a decoder, nor has float4e2m1 yet. int4 and uint4 (quantized weights)
/// are unpacked to a byte per element when loaded.
bool isSupportedElementType(ElementType type);

/// Bytes per element of a supported type as TensorData holds it (1 for the
/// unpacked 4-bit types); 0 for unsupported ones.
unsigned getElementByteSize(ElementType type);

/// Whether the type is int4 or uint4, stored two per byte in ONNX.
inline bool isPacked4Bit(ElementType type) {
  return type == ElementType::UInt4 || type == ElementType::Int4;
}

/// "float, float16, ...": the supported types, for error messages.
std::string getSupportedElementTypeNames();

} // namespace folio::onnx

#endif // FOLIO_IMPORT_ONNX_ELEMENTTYPE_H
