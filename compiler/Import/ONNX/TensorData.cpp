//===- TensorData.cpp - A constant tensor and a view of its bytes ---------===//

#include "compiler/Import/ONNX/TensorData.h"

#include "compiler/Import/ONNX/ErrorUtil.h"

#include <cassert>
#include <cstring>
#include <limits>

namespace folio::onnx {

TensorData::TensorData(std::string name, ElementType type,
                       std::vector<int64_t> dims, llvm::ArrayRef<uint8_t> bytes,
                       TensorStorage storage, std::shared_ptr<const void> owner,
                       std::optional<ExternalLocation> external)
    : name(std::move(name)), type(type), dims(std::move(dims)), bytes(bytes),
      storage(storage), owner(std::move(owner)), external(std::move(external)) {
  assert(isSupportedElementType(type) && "unsupported element type");
  assert(bytes.size() == static_cast<uint64_t>(getNumElements()) *
                             getElementByteSize(type) &&
         "byte count does not match the shape");
  assert((storage == TensorStorage::External) == this->external.has_value() &&
         "external location iff external storage");
}

int64_t TensorData::getNumElements() const {
  // The loader has checked that this product neither overflows nor involves
  // a negative dimension.
  int64_t count = 1;
  for (int64_t dim : dims)
    count *= dim;
  return count;
}

namespace {
template <typename T> int64_t loadAs(const uint8_t *p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return static_cast<int64_t>(value);
}
} // namespace

llvm::Expected<std::vector<int64_t>> TensorData::readIntegers() const {
  int64_t (*load)(const uint8_t *) = nullptr;
  switch (type) {
  case ElementType::Bool:
  case ElementType::UInt8:
    load = loadAs<uint8_t>;
    break;
  case ElementType::Int8:
    load = loadAs<int8_t>;
    break;
  case ElementType::UInt16:
    load = loadAs<uint16_t>;
    break;
  case ElementType::Int16:
    load = loadAs<int16_t>;
    break;
  case ElementType::UInt32:
    load = loadAs<uint32_t>;
    break;
  case ElementType::Int32:
    load = loadAs<int32_t>;
    break;
  case ElementType::Int64:
  case ElementType::UInt64:
    load = loadAs<int64_t>;
    break;
  default:
    return makeError("tensor '" + name + "' has element type " +
                     getElementTypeName(type) +
                     ", expected an integer or bool type");
  }
  unsigned size = getElementByteSize(type);
  std::vector<int64_t> values;
  values.reserve(getNumElements());
  for (size_t offset = 0; offset < bytes.size(); offset += size) {
    int64_t value = load(bytes.data() + offset);
    if (type == ElementType::UInt64 && value < 0)
      return makeError("tensor '" + name + "': uint64 element " +
                       llvm::Twine(offset / size) + " does not fit in int64");
    values.push_back(value);
  }
  return values;
}

std::string formatDims(llvm::ArrayRef<int64_t> dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i)
      text += ", ";
    text += std::to_string(dims[i]);
  }
  return text + "]";
}

} // namespace folio::onnx
