//===- Loader.cpp - Loading and validating ONNX models --------------------===//
//
// Turns bytes into a parsed ModelProto, telling apart the ways a file can
// fail to be an ONNX model, then hands over to ProtoConversion.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/ONNX/Loader.h"

#include "compiler/Import/ONNX/ErrorUtil.h"
#include "compiler/Import/ONNX/ProtoConversion.h"

#include "compiler/Import/ONNX/folio_onnx.pb.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <climits>

namespace folio::onnx {
namespace {

/// protobuf refuses messages of 2 GiB or more; saying so beats a parse error.
llvm::Error checkSize(llvm::StringRef name, uint64_t size) {
  if (size == 0)
    return makeError("'" + name + "' is empty, not an ONNX model");
  if (size > static_cast<uint64_t>(INT_MAX))
    return makeError("'" + name + "' is " + llvm::Twine(size) +
                     " bytes, but a protobuf message is limited to 2 GiB; "
                     "save the weights as external data "
                     "(onnx.save_model(..., save_as_external_data=True))");
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<Model>>
loadFromBytes(llvm::StringRef bytes, llvm::StringRef name,
              llvm::StringRef externalDataDir) {
  if (llvm::Error error = checkSize(name, bytes.size()))
    return std::move(error);

  folio_onnx::ModelProto proto;
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return makeError("'" + name +
                     "' is not an ONNX model: it does not parse as a "
                     "protobuf ModelProto (truncated or not a protobuf file)");
  // Many byte strings parse as *some* protobuf; an ONNX model has at least
  // an IR version and a graph.
  if (!proto.has_ir_version() && !proto.has_graph())
    return makeError("'" + name +
                     "' is not an ONNX model: it has neither an ir_version "
                     "nor a graph");
  if (!proto.has_graph())
    return makeError("'" + name + "' is not an ONNX model: it has no graph");

  llvm::Expected<std::unique_ptr<Model>> model =
      convertModel(proto, name, externalDataDir);
  if (!model)
    return addContext(name, model.takeError());
  return model;
}

} // namespace

llvm::Expected<std::unique_ptr<Model>> loadModel(llvm::StringRef path) {
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status))
    return makeError("cannot open model '" + path + "': " + ec.message());
  if (status.type() != llvm::sys::fs::file_type::regular_file)
    return makeError("cannot open model '" + path + "': not a regular file");
  // Checked before mapping so that an oversized file costs nothing.
  if (llvm::Error error = checkSize(path, status.getSize()))
    return std::move(error);

  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError("cannot open model '" + path +
                     "': " + buffer.getError().message());

  llvm::SmallString<256> directory = llvm::sys::path::parent_path(path);
  if (directory.empty())
    directory = ".";
  return loadFromBytes((*buffer)->getBuffer(), path, directory);
}

llvm::Expected<std::unique_ptr<Model>>
loadModelFromBuffer(llvm::MemoryBufferRef buffer,
                    llvm::StringRef externalDataDir) {
  return loadFromBytes(buffer.getBuffer(), buffer.getBufferIdentifier(),
                       externalDataDir);
}

} // namespace folio::onnx
