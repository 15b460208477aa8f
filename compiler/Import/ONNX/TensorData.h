//===- TensorData.h - A constant tensor and a view of its bytes -*- C++ -*-===//
//
// Initializers and tensor attributes. A TensorData never copies weights that
// live in an external data file: its bytes point into the file's mapping, and
// the tensor shares ownership of that mapping, so a view stays valid for as
// long as any TensorData (or the Model) refers to it.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_IMPORT_ONNX_TENSORDATA_H
#define FOLIO_IMPORT_ONNX_TENSORDATA_H

#include "compiler/Import/ONNX/ElementType.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace folio::onnx {

/// Where a tensor's bytes live.
enum class TensorStorage {
  /// A slice of a memory-mapped external data file (no copy).
  External,
  /// The tensor's own `raw_data` bytes, moved out of the protobuf.
  Inline,
  /// Owned bytes packed from the typed fields (`float_data`, `int32_data`,
  /// `int64_data`, `double_data`, `uint64_data`).
  Converted,
};

/// Where an external tensor came from, for diagnostics and for writers that
/// want to reference the same bytes (e.g. a plan that maps the same file).
struct ExternalLocation {
  /// `location` as written in the model, relative to the model's directory.
  std::string location;
  /// The path that was opened.
  std::string path;
  uint64_t offset = 0;
  uint64_t length = 0;
};

/// A dense, little-endian, row-major constant tensor of a supported element
/// type (see isSupportedElementType).
class TensorData {
public:
  /// `bytes` must hold exactly numElements(dims) * byteSize(type) bytes and
  /// stay valid while `owner` is alive; the loader guarantees both.
  TensorData(std::string name, ElementType type, std::vector<int64_t> dims,
             llvm::ArrayRef<uint8_t> bytes, TensorStorage storage,
             std::shared_ptr<const void> owner,
             std::optional<ExternalLocation> external = std::nullopt);

  llvm::StringRef getName() const { return name; }
  ElementType getElementType() const { return type; }
  llvm::ArrayRef<int64_t> getDims() const { return dims; }
  unsigned getRank() const { return dims.size(); }
  int64_t getNumElements() const;

  /// The raw element bytes. Not necessarily aligned to the element size (an
  /// external offset may be odd): read through memcpy, or copy.
  llvm::ArrayRef<uint8_t> getBytes() const { return bytes; }

  TensorStorage getStorage() const { return storage; }
  /// Set only for TensorStorage::External.
  const std::optional<ExternalLocation> &getExternalLocation() const {
    return external;
  }

  /// Reads every element of an integer or bool tensor as int64_t: shapes,
  /// axes and indices given as constants (Reshape, Slice, Gather). An error
  /// for other element types, or for uint64 values that do not fit.
  llvm::Expected<std::vector<int64_t>> readIntegers() const;

private:
  std::string name;
  ElementType type;
  std::vector<int64_t> dims;
  llvm::ArrayRef<uint8_t> bytes;
  TensorStorage storage;
  /// Keeps the memory behind `bytes` alive: the external file mapping, the
  /// moved raw_data string or the converted buffer.
  std::shared_ptr<const void> owner;
  std::optional<ExternalLocation> external;
};

/// "[2, 3]": for messages.
std::string formatDims(llvm::ArrayRef<int64_t> dims);

} // namespace folio::onnx

#endif // FOLIO_IMPORT_ONNX_TENSORDATA_H
