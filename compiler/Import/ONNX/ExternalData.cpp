//===- ExternalData.cpp - Resolving and mapping external data -------------===//

#include "compiler/Import/ONNX/ExternalData.h"

#include "compiler/Import/ONNX/ErrorUtil.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

namespace folio::onnx {
namespace {

/// Normalises `location` lexically and refuses anything that could name a
/// file outside the model directory. Symbolic links are deliberately not
/// resolved: model hubs (the Hugging Face cache) link weights to blobs
/// elsewhere, and whoever placed a link there chose its target; what must
/// not happen is a model file alone reaching for arbitrary paths.
llvm::Expected<std::string> normaliseLocation(llvm::StringRef location) {
  if (location.empty())
    return makeError("external data location is empty");
  if (location.contains('\0'))
    return makeError("external data location contains a NUL byte");
  if (llvm::sys::path::is_absolute(location) || location.starts_with("/") ||
      location.starts_with("\\") ||
      llvm::sys::path::is_absolute(location, llvm::sys::path::Style::windows))
    return makeError("external data location '" + location +
                     "' is absolute; only paths relative to the model's "
                     "directory are accepted");
  llvm::SmallVector<llvm::StringRef, 8> parts;
  // Exporters on Windows write backslashes; treat both as separators.
  llvm::SmallVector<llvm::StringRef, 8> pieces;
  location.split(pieces, '/');
  for (llvm::StringRef piece : pieces) {
    llvm::SmallVector<llvm::StringRef, 4> subPieces;
    piece.split(subPieces, '\\');
    for (llvm::StringRef part : subPieces) {
      if (part.empty() || part == ".")
        continue;
      if (part == "..") {
        if (parts.empty())
          return makeError("external data location '" + location +
                           "' leaves the model's directory; only files in "
                           "it or below are accepted");
        parts.pop_back();
        continue;
      }
      parts.push_back(part);
    }
  }
  if (parts.empty())
    return makeError("external data location '" + location +
                     "' names the model's directory, not a file");
  std::string normalised;
  for (llvm::StringRef part : parts) {
    if (!normalised.empty())
      normalised += '/';
    normalised += part;
  }
  return normalised;
}

} // namespace

ExternalDataResolver::ExternalDataResolver(std::string baseDir)
    : baseDir(std::move(baseDir)) {}

ExternalDataResolver::~ExternalDataResolver() = default;

llvm::Expected<std::shared_ptr<const llvm::MemoryBuffer>>
ExternalDataResolver::mapFile(llvm::StringRef relativePath,
                              const std::string &path) {
  auto it = files.find(relativePath);
  if (it != files.end())
    return it->second;

  // Check the type first: mapping a directory fails obscurely, and opening a
  // FIFO would block the compiler.
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status))
    return makeError("cannot open external data file '" + path +
                     "': " + ec.message());
  if (status.type() != llvm::sys::fs::file_type::regular_file)
    return makeError("external data file '" + path + "' is not a regular file");

  // No null terminator and not volatile: large files are memory-mapped, so
  // weights are paged in on use, never copied.
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false,
                                  /*IsVolatile=*/false);
  if (!buffer)
    return makeError("cannot open external data file '" + path +
                     "': " + buffer.getError().message());
  std::shared_ptr<const llvm::MemoryBuffer> shared = std::move(*buffer);
  files.try_emplace(relativePath, shared);
  return shared;
}

llvm::Expected<ExternalSlice>
ExternalDataResolver::resolve(llvm::StringRef location, uint64_t offset,
                              uint64_t length) {
  llvm::Expected<std::string> relativePath = normaliseLocation(location);
  if (!relativePath)
    return relativePath.takeError();
  if (baseDir.empty())
    return makeError("the tensor's data is in external file '" + location +
                     "', but the model was loaded from memory without a "
                     "directory to resolve it against");

  llvm::SmallString<256> path(baseDir);
  llvm::sys::path::append(path, *relativePath);
  std::string pathString = path.str().str();
  llvm::Expected<std::shared_ptr<const llvm::MemoryBuffer>> file =
      mapFile(*relativePath, pathString);
  if (!file)
    return file.takeError();

  uint64_t fileSize = (*file)->getBufferSize();
  if (offset > fileSize || length > fileSize - offset)
    return makeError("external data range [" + llvm::Twine(offset) + ", " +
                     llvm::Twine(offset) + " + " + llvm::Twine(length) +
                     ") is outside file '" + pathString + "' of " +
                     llvm::Twine(fileSize) + " bytes");

  const auto *start =
      reinterpret_cast<const uint8_t *>((*file)->getBufferStart());
  return ExternalSlice{llvm::ArrayRef<uint8_t>(start + offset, length), *file,
                       std::move(pathString)};
}

std::vector<std::shared_ptr<const llvm::MemoryBuffer>>
ExternalDataResolver::getMappings() const {
  std::vector<std::shared_ptr<const llvm::MemoryBuffer>> mappings;
  for (const auto &entry : files)
    mappings.push_back(entry.second);
  return mappings;
}

} // namespace folio::onnx
