//===- ExternalData.h - Resolving and mapping external data -----*- C++ -*-===//
//
// Tensors over protobuf's 2 GiB limit live in side files named by
// `external_data` entries. The resolver confines those names to the model's
// directory, maps each file once, checks every range against the file size
// and hands out views that share ownership of the mapping.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_IMPORT_ONNX_EXTERNALDATA_H
#define FOLIO_IMPORT_ONNX_EXTERNALDATA_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace llvm {
class MemoryBuffer;
} // namespace llvm

namespace folio::onnx {

/// A checked byte range of a mapped external file.
struct ExternalSlice {
  llvm::ArrayRef<uint8_t> bytes;
  std::shared_ptr<const llvm::MemoryBuffer> owner;
  /// The path that was opened.
  std::string path;
};

class ExternalDataResolver {
public:
  /// `baseDir` is the model's directory; empty refuses all external data
  /// (models loaded from memory without a directory).
  explicit ExternalDataResolver(std::string baseDir);
  ~ExternalDataResolver();

  /// Returns bytes [offset, offset + length) of the file `location` names.
  /// Refuses absolute locations and locations that leave `baseDir` ("..");
  /// the error names the location, the path and the offending range.
  llvm::Expected<ExternalSlice> resolve(llvm::StringRef location,
                                        uint64_t offset, uint64_t length);

  /// Every file mapped so far, once each (for the Model to keep alive).
  std::vector<std::shared_ptr<const llvm::MemoryBuffer>> getMappings() const;

private:
  llvm::Expected<std::shared_ptr<const llvm::MemoryBuffer>>
  mapFile(llvm::StringRef relativePath, const std::string &path);

  std::string baseDir;
  /// Keyed by the normalised relative path, so "a/../w.bin" and "w.bin"
  /// share one mapping.
  llvm::StringMap<std::shared_ptr<const llvm::MemoryBuffer>> files;
};

} // namespace folio::onnx

#endif // FOLIO_IMPORT_ONNX_EXTERNALDATA_H
