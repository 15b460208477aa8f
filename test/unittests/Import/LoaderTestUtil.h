//===- LoaderTestUtil.h - Loading built models in tests ---------*- C++ -*-===//

#ifndef FOLIO_TEST_UNITTESTS_IMPORT_LOADERTESTUTIL_H
#define FOLIO_TEST_UNITTESTS_IMPORT_LOADERTESTUTIL_H

#include "test/unittests/Import/ModelBuilder.h"

#include "compiler/Import/ONNX/Loader.h"

#include "gtest/gtest.h"

#include <memory>
#include <string>

namespace folio::onnx::testing {

/// Writes `model` as `dir/name` and loads it from there.
inline llvm::Expected<std::unique_ptr<Model>>
loadProto(const ModelProto &model, const TempDir &dir,
          const std::string &name = "model.onnx") {
  writeModel(model, dir.file(name));
  return loadModel(dir.file(name));
}

/// Loads a model that must load; fails the test (and returns nullptr) with
/// the loader's message otherwise.
inline std::unique_ptr<Model> loadOrFail(const ModelProto &model,
                                         const TempDir &dir) {
  llvm::Expected<std::unique_ptr<Model>> loaded = loadProto(model, dir);
  if (!loaded) {
    ADD_FAILURE() << "load failed: " << llvm::toString(loaded.takeError());
    return nullptr;
  }
  return std::move(*loaded);
}

/// The error message of a result that must be an error ("<loaded>" if it
/// was not, which no expectation matches).
template <typename T> std::string errorOf(llvm::Expected<T> result) {
  if (result)
    return "<loaded>";
  return llvm::toString(result.takeError());
}

/// Loads `model` from a fresh directory and returns the error message.
inline std::string loadError(const ModelProto &model) {
  TempDir dir;
  return errorOf(loadProto(model, dir));
}

} // namespace folio::onnx::testing

#endif // FOLIO_TEST_UNITTESTS_IMPORT_LOADERTESTUTIL_H
