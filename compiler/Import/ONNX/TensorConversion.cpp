//===- TensorConversion.cpp - TensorProto to TensorData -------------------===//
//
// A TensorProto keeps its values in one of three places: `raw_data`, one of
// the typed repeated fields, or an external file. Each has its own size rule;
// all of them are checked against dims x element size here, once, so that
// nothing downstream ever reads past a tensor.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/ONNX/TensorConversion.h"

#include "compiler/Import/ONNX/ErrorUtil.h"
#include "compiler/Import/ONNX/ExternalData.h"

#include "compiler/Import/ONNX/folio_onnx.pb.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

#include <cstring>
#include <limits>

namespace folio::onnx {
namespace {

using folio_onnx::TensorProto;

/// The typed field a TensorProto may use for `type` (ONNX's rules), as the
/// field's name; nullptr for types that only raw_data can hold.
const char *typedFieldFor(ElementType type) {
  switch (type) {
  case ElementType::Float:
    return "float_data";
  case ElementType::Int32:
  case ElementType::Int16:
  case ElementType::Int8:
  case ElementType::UInt16:
  case ElementType::UInt8:
  case ElementType::Bool:
  case ElementType::Float16:
  case ElementType::BFloat16:
  case ElementType::Float8E4M3FN:
  case ElementType::Float8E4M3FNUZ:
  case ElementType::Float8E5M2:
  case ElementType::Float8E5M2FNUZ:
    return "int32_data";
  case ElementType::Int64:
    return "int64_data";
  case ElementType::Double:
    return "double_data";
  case ElementType::UInt32:
  case ElementType::UInt64:
    return "uint64_data";
  default:
    return nullptr;
  }
}

/// Writes the low `size` bytes of `value` little-endian: int32_data holds
/// 16-bit floats as their bit patterns and 8-bit types as small integers.
void storeLowBytes(uint64_t value, unsigned size, uint8_t *out) {
  for (unsigned i = 0; i < size; ++i)
    out[i] = static_cast<uint8_t>(value >> (8 * i));
}

/// Packs the typed field typedFieldFor(type) names into an owned
/// little-endian buffer; the caller has checked its element count and that
/// no other field is populated.
std::shared_ptr<std::vector<uint8_t>> packTypedField(const TensorProto &proto,
                                                     ElementType type,
                                                     unsigned size,
                                                     int64_t numElements) {
  auto buffer = std::make_shared<std::vector<uint8_t>>(
      static_cast<size_t>(numElements) * size);
  uint8_t *out = buffer->data();
  auto pack = [&](const auto &field, auto toBits) {
    for (int i = 0; i < field.size(); ++i)
      storeLowBytes(toBits(field.Get(i)), size, out + size_t(i) * size);
  };
  switch (type) {
  case ElementType::Float:
    pack(proto.float_data(), [](float v) {
      uint32_t bits;
      std::memcpy(&bits, &v, sizeof(bits));
      return uint64_t(bits);
    });
    break;
  case ElementType::Double:
    pack(proto.double_data(), [](double v) {
      uint64_t bits;
      std::memcpy(&bits, &v, sizeof(bits));
      return bits;
    });
    break;
  case ElementType::Int64:
    pack(proto.int64_data(), [](int64_t v) { return uint64_t(v); });
    break;
  case ElementType::UInt32:
  case ElementType::UInt64:
    pack(proto.uint64_data(), [](uint64_t v) { return v; });
    break;
  case ElementType::Bool:
    // Any non-zero int32 is true; store the canonical 1.
    pack(proto.int32_data(), [](int32_t v) { return uint64_t(v != 0); });
    break;
  default:
    pack(proto.int32_data(),
         [](int32_t v) { return uint64_t(static_cast<uint32_t>(v)); });
    break;
  }
  return buffer;
}

/// The element counts of every populated typed field, by field name.
llvm::SmallVector<std::pair<const char *, int64_t>, 2>
populatedTypedFields(const TensorProto &proto) {
  llvm::SmallVector<std::pair<const char *, int64_t>, 2> fields;
  auto add = [&](const char *name, int size) {
    if (size > 0)
      fields.emplace_back(name, size);
  };
  add("float_data", proto.float_data_size());
  add("int32_data", proto.int32_data_size());
  add("string_data", proto.string_data_size());
  add("int64_data", proto.int64_data_size());
  add("double_data", proto.double_data_size());
  add("uint64_data", proto.uint64_data_size());
  return fields;
}

/// Parses a non-negative decimal integer the way it must appear in an
/// external_data value: digits only, no sign, no overflow.
std::optional<uint64_t> parseUnsigned(llvm::StringRef text) {
  if (text.empty() || !llvm::all_of(text, llvm::isDigit))
    return std::nullopt;
  uint64_t value;
  if (text.getAsInteger(10, value))
    return std::nullopt;
  return value;
}

/// An int4 or uint4 tensor read as `packed` (two per byte, the even
/// element in the low nibble), unpacked to a byte per element, int4
/// sign-extended.
TensorData unpack4Bit(const TensorProto &proto, ElementType type,
                      std::vector<int64_t> dims, uint64_t numElements,
                      llvm::ArrayRef<uint8_t> packed) {
  auto buffer = std::make_shared<std::vector<uint8_t>>(numElements);
  for (uint64_t i = 0; i < numElements; ++i) {
    unsigned nibble = (packed[i / 2] >> (4 * (i % 2))) & 0xfu;
    (*buffer)[i] = type == ElementType::Int4 && nibble >= 8
                       ? uint8_t(int(nibble) - 16)
                       : uint8_t(nibble);
  }
  llvm::ArrayRef<uint8_t> bytes(*buffer);
  return TensorData(proto.name(), type, std::move(dims), bytes,
                    TensorStorage::Converted, std::move(buffer));
}

llvm::Expected<TensorData> convertExternal(TensorProto &proto, ElementType type,
                                           std::vector<int64_t> dims,
                                           uint64_t byteSize,
                                           ExternalDataResolver &resolver) {
  if (proto.has_raw_data() || !populatedTypedFields(proto).empty())
    return makeError("has both external data and inline data");
  std::optional<std::string> location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  llvm::StringSet<> seenKeys;
  for (const auto &entry : proto.external_data()) {
    const std::string &key = entry.key();
    const std::string &value = entry.value();
    if (!seenKeys.insert(key).second)
      return makeError("external_data key '" + key + "' appears twice");
    if (key == "location") {
      location = value;
    } else if (key == "offset" || key == "length") {
      std::optional<uint64_t> number = parseUnsigned(value);
      if (!number)
        return makeError("external_data " + key + " '" + value +
                         "' is not a non-negative integer");
      if (key == "offset")
        offset = *number;
      else
        length = *number;
    }
    // "checksum" (SHA-1 of the bytes) is not verified: that would read every
    // weight at load time, which mapping exists to avoid. Unknown keys are
    // ignored, as the ONNX reference loader does.
  }
  if (!location)
    return makeError("is stored externally (data_location = EXTERNAL) but "
                     "has no external_data 'location'");
  if (length && *length != byteSize)
    return makeError("external_data length " + llvm::Twine(*length) +
                     " does not match dims " + formatDims(dims) + " of " +
                     getElementTypeName(type) + " (" + llvm::Twine(byteSize) +
                     " bytes)");
  llvm::Expected<ExternalSlice> slice =
      resolver.resolve(*location, offset, byteSize);
  if (!slice)
    return slice.takeError();
  if (isPacked4Bit(type)) {
    uint64_t numElements = 1;
    for (int64_t d : dims)
      numElements *= uint64_t(d);
    return unpack4Bit(proto, type, std::move(dims), numElements, slice->bytes);
  }
  ExternalLocation where{*location, slice->path, offset, byteSize};
  return TensorData(proto.name(), type, std::move(dims), slice->bytes,
                    TensorStorage::External, std::move(slice->owner),
                    std::move(where));
}

llvm::Expected<TensorData> convertInline(TensorProto &proto, ElementType type,
                                         std::vector<int64_t> dims,
                                         int64_t numElements,
                                         uint64_t byteSize) {
  llvm::SmallVector<std::pair<const char *, int64_t>, 2> typed =
      populatedTypedFields(proto);
  if (proto.has_raw_data() && !typed.empty())
    return makeError(llvm::Twine("has both raw_data and ") + typed[0].first);
  if (typed.size() > 1)
    return makeError(llvm::Twine("has both ") + typed[0].first + " and " +
                     typed[1].first);

  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != byteSize)
      return makeError(
          "raw_data holds " + llvm::Twine(uint64_t(proto.raw_data().size())) +
          " bytes, but dims " + formatDims(dims) + " of " +
          getElementTypeName(type) + " need " + llvm::Twine(byteSize));
    // Moving the string hands over its heap buffer: no copy of the weights.
    auto raw =
        std::make_shared<std::string>(std::move(*proto.mutable_raw_data()));
    llvm::ArrayRef<uint8_t> bytes(
        reinterpret_cast<const uint8_t *>(raw->data()), raw->size());
    return TensorData(proto.name(), type, std::move(dims), bytes,
                      TensorStorage::Inline, std::move(raw));
  }

  const char *expected = typedFieldFor(type);
  if (typed.empty()) {
    if (numElements != 0)
      return makeError("has no data (no raw_data, " + llvm::Twine(expected) +
                       " or external data) for its " +
                       llvm::Twine(numElements) + " elements");
  } else {
    if (llvm::StringRef(typed[0].first) != expected)
      return makeError(llvm::Twine("stores ") + getElementTypeName(type) +
                       " values in " + typed[0].first +
                       "; ONNX keeps them in " + expected + " or raw_data");
    if (typed[0].second != numElements)
      return makeError(llvm::Twine(expected) + " holds " +
                       llvm::Twine(typed[0].second) + " values, but dims " +
                       formatDims(dims) + " need " + llvm::Twine(numElements));
  }
  std::shared_ptr<std::vector<uint8_t>> buffer =
      packTypedField(proto, type, getElementByteSize(type), numElements);
  llvm::ArrayRef<uint8_t> bytes(*buffer);
  return TensorData(proto.name(), type, std::move(dims), bytes,
                    TensorStorage::Converted, std::move(buffer));
}

/// int4 and uint4: raw_data or external data of ceil(n / 2) bytes.
llvm::Expected<TensorData> convert4Bit(TensorProto &proto, ElementType type,
                                       std::vector<int64_t> dims,
                                       uint64_t numElements,
                                       ExternalDataResolver &resolver) {
  uint64_t packedBytes = (numElements + 1) / 2;
  if (proto.data_location() == TensorProto::EXTERNAL)
    return convertExternal(proto, type, std::move(dims), packedBytes, resolver);
  if (!populatedTypedFields(proto).empty())
    return makeError(llvm::Twine(getElementTypeName(type)) + " stored in " +
                     populatedTypedFields(proto)[0].first +
                     " is not supported; store it in raw_data or as external "
                     "data");
  if (!proto.has_raw_data() && numElements != 0)
    return makeError("has no data (no raw_data or external data) for its " +
                     llvm::Twine(numElements) + " elements");
  if (proto.raw_data().size() != packedBytes)
    return makeError("raw_data holds " +
                     llvm::Twine(uint64_t(proto.raw_data().size())) +
                     " bytes, but dims " + formatDims(dims) + " of " +
                     getElementTypeName(type) + " need " +
                     llvm::Twine(packedBytes) + " (two elements per byte)");
  llvm::ArrayRef<uint8_t> packed(
      reinterpret_cast<const uint8_t *>(proto.raw_data().data()),
      proto.raw_data().size());
  return unpack4Bit(proto, type, std::move(dims), numElements, packed);
}

llvm::Expected<TensorData> convert(TensorProto &proto,
                                   ExternalDataResolver &resolver) {
  if (!proto.has_data_type() || proto.data_type() == 0)
    return makeError("has no data_type");
  std::optional<ElementType> type = elementTypeFromOnnx(proto.data_type());
  if (!type)
    return makeError("has unknown data_type " + llvm::Twine(proto.data_type()));
  if (!isSupportedElementType(*type))
    return makeError("has element type " + getElementTypeName(*type) +
                     ", which is not supported; supported: " +
                     getSupportedElementTypeNames());
  if (proto.has_segment())
    return makeError("is segmented (TensorProto.segment), which is not "
                     "supported; store it whole or as external data");

  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  unsigned elementSize = getElementByteSize(*type);
  // The byte count must fit in size_t as well as int64_t, so the bound is
  // the smaller of the two.
  uint64_t maxBytes = std::min<uint64_t>(std::numeric_limits<int64_t>::max(),
                                         std::numeric_limits<size_t>::max());
  uint64_t numElements = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0)
      return makeError("has negative dimension " + llvm::Twine(dims[i]) +
                       " at index " + llvm::Twine(i) + " of dims " +
                       formatDims(dims));
    bool overflow = false;
    numElements = llvm::SaturatingMultiply(
        numElements, static_cast<uint64_t>(dims[i]), &overflow);
    if (overflow || numElements > maxBytes / elementSize)
      return makeError("dims " + formatDims(dims) + " of " +
                       getElementTypeName(*type) + " exceed " +
                       llvm::Twine(maxBytes) + " bytes");
  }
  uint64_t byteSize = numElements * elementSize;
  if (isPacked4Bit(*type))
    return convert4Bit(proto, *type, std::move(dims), numElements, resolver);

  // proto2 enums are closed: an unknown data_location number lands in the
  // unknown fields and reads as DEFAULT.
  if (proto.data_location() == TensorProto::EXTERNAL)
    return convertExternal(proto, *type, std::move(dims), byteSize, resolver);
  return convertInline(proto, *type, std::move(dims),
                       static_cast<int64_t>(numElements), byteSize);
}

} // namespace

llvm::Expected<TensorData> convertTensor(TensorProto &proto,
                                         ExternalDataResolver &resolver,
                                         const llvm::Twine &what) {
  llvm::Expected<TensorData> tensor = convert(proto, resolver);
  if (!tensor)
    return addContext(what, tensor.takeError());
  return tensor;
}

} // namespace folio::onnx
