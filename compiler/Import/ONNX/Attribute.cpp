//===- Attribute.cpp - A node attribute of one ONNX type ------------------===//

#include "compiler/Import/ONNX/Attribute.h"

#include "llvm/Support/ErrorHandling.h"

#include <cassert>

namespace folio::onnx {

// The variant's alternatives must stay in Kind's order: getKind() relies on
// it.
static_assert(static_cast<int>(Attribute::Kind::Strings) == 6);

Attribute::Attribute(std::string name, int64_t value)
    : name(std::move(name)), value(value) {}
Attribute::Attribute(std::string name, float value)
    : name(std::move(name)), value(value) {}
Attribute::Attribute(std::string name, std::string value)
    : name(std::move(name)), value(std::move(value)) {}
Attribute::Attribute(std::string name, TensorData value)
    : name(std::move(name)), value(std::move(value)) {}
Attribute::Attribute(std::string name, std::vector<int64_t> values)
    : name(std::move(name)), value(std::move(values)) {}
Attribute::Attribute(std::string name, std::vector<float> values)
    : name(std::move(name)), value(std::move(values)) {}
Attribute::Attribute(std::string name, std::vector<std::string> values)
    : name(std::move(name)), value(std::move(values)) {}

int64_t Attribute::getInt() const {
  assert(getKind() == Kind::Int && "not an int attribute");
  return std::get<int64_t>(value);
}

float Attribute::getFloat() const {
  assert(getKind() == Kind::Float && "not a float attribute");
  return std::get<float>(value);
}

llvm::StringRef Attribute::getString() const {
  assert(getKind() == Kind::String && "not a string attribute");
  return std::get<std::string>(value);
}

const TensorData &Attribute::getTensor() const {
  assert(getKind() == Kind::Tensor && "not a tensor attribute");
  return std::get<TensorData>(value);
}

llvm::ArrayRef<int64_t> Attribute::getInts() const {
  assert(getKind() == Kind::Ints && "not an ints attribute");
  return std::get<std::vector<int64_t>>(value);
}

llvm::ArrayRef<float> Attribute::getFloats() const {
  assert(getKind() == Kind::Floats && "not a floats attribute");
  return std::get<std::vector<float>>(value);
}

llvm::ArrayRef<std::string> Attribute::getStrings() const {
  assert(getKind() == Kind::Strings && "not a strings attribute");
  return std::get<std::vector<std::string>>(value);
}

llvm::StringRef getAttributeKindName(Attribute::Kind kind) {
  switch (kind) {
  case Attribute::Kind::Int:
    return "int";
  case Attribute::Kind::Float:
    return "float";
  case Attribute::Kind::String:
    return "string";
  case Attribute::Kind::Tensor:
    return "tensor";
  case Attribute::Kind::Ints:
    return "ints";
  case Attribute::Kind::Floats:
    return "floats";
  case Attribute::Kind::Strings:
    return "strings";
  }
  llvm_unreachable("unknown Attribute::Kind");
}

} // namespace folio::onnx
