//===- ElementType.cpp - ONNX tensor element types ------------------------===//

#include "compiler/Import/ONNX/ElementType.h"

#include "llvm/Support/ErrorHandling.h"

namespace folio::onnx {

std::optional<ElementType> elementTypeFromOnnx(int64_t value) {
  if (value < static_cast<int64_t>(ElementType::Undefined) ||
      value > static_cast<int64_t>(ElementType::Float4E2M1))
    return std::nullopt;
  return static_cast<ElementType>(value);
}

llvm::StringRef getElementTypeName(ElementType type) {
  switch (type) {
  case ElementType::Undefined:
    return "undefined";
  case ElementType::Float:
    return "float";
  case ElementType::UInt8:
    return "uint8";
  case ElementType::Int8:
    return "int8";
  case ElementType::UInt16:
    return "uint16";
  case ElementType::Int16:
    return "int16";
  case ElementType::Int32:
    return "int32";
  case ElementType::Int64:
    return "int64";
  case ElementType::String:
    return "string";
  case ElementType::Bool:
    return "bool";
  case ElementType::Float16:
    return "float16";
  case ElementType::Double:
    return "double";
  case ElementType::UInt32:
    return "uint32";
  case ElementType::UInt64:
    return "uint64";
  case ElementType::Complex64:
    return "complex64";
  case ElementType::Complex128:
    return "complex128";
  case ElementType::BFloat16:
    return "bfloat16";
  case ElementType::Float8E4M3FN:
    return "float8e4m3fn";
  case ElementType::Float8E4M3FNUZ:
    return "float8e4m3fnuz";
  case ElementType::Float8E5M2:
    return "float8e5m2";
  case ElementType::Float8E5M2FNUZ:
    return "float8e5m2fnuz";
  case ElementType::UInt4:
    return "uint4";
  case ElementType::Int4:
    return "int4";
  case ElementType::Float4E2M1:
    return "float4e2m1";
  }
  llvm_unreachable("unknown ElementType");
}

unsigned getElementByteSize(ElementType type) {
  switch (type) {
  case ElementType::Bool:
  case ElementType::UInt8:
  case ElementType::Int8:
  case ElementType::Float8E4M3FN:
  case ElementType::Float8E4M3FNUZ:
  case ElementType::Float8E5M2:
  case ElementType::Float8E5M2FNUZ:
    return 1;
  case ElementType::UInt16:
  case ElementType::Int16:
  case ElementType::Float16:
  case ElementType::BFloat16:
    return 2;
  case ElementType::Float:
  case ElementType::Int32:
  case ElementType::UInt32:
    return 4;
  case ElementType::Double:
  case ElementType::Int64:
  case ElementType::UInt64:
    return 8;
  // ONNX packs 4-bit integers two per byte; the loader unpacks them to a
  // byte each (int4 sign-extended), the storage MLIR gives i4.
  case ElementType::UInt4:
  case ElementType::Int4:
    return 1;
  case ElementType::Undefined:
  case ElementType::String:
  case ElementType::Complex64:
  case ElementType::Complex128:
  case ElementType::Float4E2M1:
    return 0;
  }
  llvm_unreachable("unknown ElementType");
}

bool isSupportedElementType(ElementType type) {
  return getElementByteSize(type) != 0;
}

std::string getSupportedElementTypeNames() {
  std::string names;
  for (int32_t i = 0; i <= static_cast<int32_t>(ElementType::Float4E2M1); ++i) {
    auto type = static_cast<ElementType>(i);
    if (!isSupportedElementType(type))
      continue;
    if (!names.empty())
      names += ", ";
    names += getElementTypeName(type);
  }
  return names;
}

} // namespace folio::onnx
