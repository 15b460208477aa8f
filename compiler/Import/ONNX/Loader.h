//===- Loader.h - Loading and validating ONNX models ------------*- C++ -*-===//
//
// The entry points of the ONNX loader: file (or buffer) in, validated Model
// out, or an error that names what was wrong, where, and what is supported.
// This layer links protobuf-lite and LLVM Support, never MLIR, so tools and
// fuzzers can use it without the compiler.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_IMPORT_ONNX_LOADER_H
#define FOLIO_IMPORT_ONNX_LOADER_H

#include "compiler/Import/ONNX/Model.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>

namespace folio::onnx {

/// The oldest IR version accepted: IR 7 is the first that can carry opset 13.
inline constexpr int64_t kMinIrVersion = 7;
/// The range of default-domain (ai.onnx) opsets accepted.
inline constexpr int64_t kMinDefaultOpset = 13;
inline constexpr int64_t kMaxDefaultOpset = 23;
/// The largest fixed dim, and the largest number of elements the fixed dims
/// of a graph value may multiply to (2^40): bigger is a hostile or corrupt
/// model, and would overflow shape arithmetic downstream.
inline constexpr int64_t kMaxDimension = int64_t(1) << 40;

/// Loads the model at `path`. The file is mapped, not read; external data
/// files are resolved relative to the model's directory, mapped once each,
/// and viewed in place (never copied).
llvm::Expected<std::unique_ptr<Model>> loadModel(llvm::StringRef path);

/// Loads a model from `buffer` (tests, fuzzing, embedded models). External
/// data is resolved relative to `externalDataDir`; an empty directory means
/// the model must not reference external data. The buffer is only read
/// during the call: the Model keeps no reference to it.
llvm::Expected<std::unique_ptr<Model>>
loadModelFromBuffer(llvm::MemoryBufferRef buffer,
                    llvm::StringRef externalDataDir = {});

} // namespace folio::onnx

#endif // FOLIO_IMPORT_ONNX_LOADER_H
