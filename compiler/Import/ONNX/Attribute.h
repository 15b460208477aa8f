//===- Attribute.h - A node attribute of one ONNX type ----------*- C++ -*-===//
//
// The attribute kinds a decoder graph uses. Graph-valued attributes (If, Loop,
// Scan bodies), sparse tensors, type protos and tensor lists are refused by
// the loader, so every Attribute here holds one of these seven kinds.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_IMPORT_ONNX_ATTRIBUTE_H
#define FOLIO_IMPORT_ONNX_ATTRIBUTE_H

#include "compiler/Import/ONNX/TensorData.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace folio::onnx {

class Attribute {
public:
  /// In the order of the variant alternatives below.
  enum class Kind { Int, Float, String, Tensor, Ints, Floats, Strings };

  Attribute(std::string name, int64_t value);
  Attribute(std::string name, float value);
  Attribute(std::string name, std::string value);
  Attribute(std::string name, TensorData value);
  Attribute(std::string name, std::vector<int64_t> values);
  Attribute(std::string name, std::vector<float> values);
  Attribute(std::string name, std::vector<std::string> values);

  llvm::StringRef getName() const { return name; }
  Kind getKind() const { return static_cast<Kind>(value.index()); }

  /// Each accessor asserts the kind; Node's typed getters check it and
  /// return an error instead.
  int64_t getInt() const;
  float getFloat() const;
  llvm::StringRef getString() const;
  const TensorData &getTensor() const;
  llvm::ArrayRef<int64_t> getInts() const;
  llvm::ArrayRef<float> getFloats() const;
  llvm::ArrayRef<std::string> getStrings() const;

private:
  std::string name;
  std::variant<int64_t, float, std::string, TensorData, std::vector<int64_t>,
               std::vector<float>, std::vector<std::string>>
      value;
};

/// "int", "float", "string", "tensor", "ints", "floats", "strings".
llvm::StringRef getAttributeKindName(Attribute::Kind kind);

} // namespace folio::onnx

#endif // FOLIO_IMPORT_ONNX_ATTRIBUTE_H
