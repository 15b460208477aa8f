//===- NodeAttributes.cpp - Typed attribute getters of Node ---------------===//
//
// One lookup-and-check helper serves every type, so that all getters report
// a missing or mistyped attribute with the same message.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/ONNX/Node.h"

namespace folio::onnx {
namespace {

/// Finds `attrName` on `node` and checks its kind. Returns nullptr (and no
/// error) when the attribute is absent and `required` is false.
llvm::Expected<const Attribute *> lookup(const Node &node,
                                         llvm::StringRef attrName,
                                         Attribute::Kind kind, bool required) {
  const Attribute *attr = node.findAttribute(attrName);
  if (!attr) {
    if (!required)
      return nullptr;
    return node.makeError("missing required attribute '" + attrName + "' (" +
                          getAttributeKindName(kind) + ")");
  }
  if (attr->getKind() != kind)
    return node.makeError("attribute '" + attrName + "' is of type " +
                          getAttributeKindName(attr->getKind()) +
                          ", expected " + getAttributeKindName(kind));
  return attr;
}

/// The shared body of every getter: `read` turns the checked attribute into
/// the result; `fallback` produces the default when it is absent.
template <typename T, typename ReadFn, typename FallbackFn>
llvm::Expected<T> get(const Node &node, llvm::StringRef attrName,
                      Attribute::Kind kind, bool required, ReadFn read,
                      FallbackFn fallback) {
  llvm::Expected<const Attribute *> attr =
      lookup(node, attrName, kind, required);
  if (!attr)
    return attr.takeError();
  if (!*attr)
    return fallback();
  return read(**attr);
}

} // namespace

llvm::Expected<int64_t> Node::getInt(llvm::StringRef attrName) const {
  return get<int64_t>(
      *this, attrName, Attribute::Kind::Int, true,
      [](const Attribute &a) { return a.getInt(); }, [] { return int64_t(0); });
}

llvm::Expected<int64_t> Node::getInt(llvm::StringRef attrName,
                                     int64_t defaultValue) const {
  return get<int64_t>(
      *this, attrName, Attribute::Kind::Int, false,
      [](const Attribute &a) { return a.getInt(); },
      [&] { return defaultValue; });
}

llvm::Expected<float> Node::getFloat(llvm::StringRef attrName) const {
  return get<float>(
      *this, attrName, Attribute::Kind::Float, true,
      [](const Attribute &a) { return a.getFloat(); }, [] { return 0.0f; });
}

llvm::Expected<float> Node::getFloat(llvm::StringRef attrName,
                                     float defaultValue) const {
  return get<float>(
      *this, attrName, Attribute::Kind::Float, false,
      [](const Attribute &a) { return a.getFloat(); },
      [&] { return defaultValue; });
}

llvm::Expected<std::string> Node::getString(llvm::StringRef attrName) const {
  return get<std::string>(
      *this, attrName, Attribute::Kind::String, true,
      [](const Attribute &a) { return a.getString().str(); },
      [] { return std::string(); });
}

llvm::Expected<std::string>
Node::getString(llvm::StringRef attrName, llvm::StringRef defaultValue) const {
  return get<std::string>(
      *this, attrName, Attribute::Kind::String, false,
      [](const Attribute &a) { return a.getString().str(); },
      [&] { return defaultValue.str(); });
}

llvm::Expected<std::vector<int64_t>>
Node::getInts(llvm::StringRef attrName) const {
  return get<std::vector<int64_t>>(
      *this, attrName, Attribute::Kind::Ints, true,
      [](const Attribute &a) { return std::vector<int64_t>(a.getInts()); },
      [] { return std::vector<int64_t>(); });
}

llvm::Expected<std::vector<int64_t>>
Node::getInts(llvm::StringRef attrName,
              llvm::ArrayRef<int64_t> defaultValue) const {
  return get<std::vector<int64_t>>(
      *this, attrName, Attribute::Kind::Ints, false,
      [](const Attribute &a) { return std::vector<int64_t>(a.getInts()); },
      [&] { return std::vector<int64_t>(defaultValue); });
}

llvm::Expected<std::vector<float>>
Node::getFloats(llvm::StringRef attrName) const {
  return get<std::vector<float>>(
      *this, attrName, Attribute::Kind::Floats, true,
      [](const Attribute &a) { return std::vector<float>(a.getFloats()); },
      [] { return std::vector<float>(); });
}

llvm::Expected<std::vector<float>>
Node::getFloats(llvm::StringRef attrName,
                llvm::ArrayRef<float> defaultValue) const {
  return get<std::vector<float>>(
      *this, attrName, Attribute::Kind::Floats, false,
      [](const Attribute &a) { return std::vector<float>(a.getFloats()); },
      [&] { return std::vector<float>(defaultValue); });
}

llvm::Expected<std::vector<std::string>>
Node::getStrings(llvm::StringRef attrName) const {
  return get<std::vector<std::string>>(
      *this, attrName, Attribute::Kind::Strings, true,
      [](const Attribute &a) {
        return std::vector<std::string>(a.getStrings());
      },
      [] { return std::vector<std::string>(); });
}

llvm::Expected<std::vector<std::string>>
Node::getStrings(llvm::StringRef attrName,
                 llvm::ArrayRef<std::string> defaultValue) const {
  return get<std::vector<std::string>>(
      *this, attrName, Attribute::Kind::Strings, false,
      [](const Attribute &a) {
        return std::vector<std::string>(a.getStrings());
      },
      [&] { return std::vector<std::string>(defaultValue); });
}

llvm::Expected<const TensorData *>
Node::getTensor(llvm::StringRef attrName) const {
  return get<const TensorData *>(
      *this, attrName, Attribute::Kind::Tensor, true,
      [](const Attribute &a) { return &a.getTensor(); },
      []() -> const TensorData * { return nullptr; });
}

} // namespace folio::onnx
