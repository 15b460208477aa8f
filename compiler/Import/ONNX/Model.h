//===- Model.h - A loaded ONNX model ----------------------------*- C++ -*-===//
//
// The root of the loader's object graph. A Model owns every external data
// mapping its tensors view, so keeping the Model alive keeps every weight
// view valid (each TensorData also shares ownership of its own mapping).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_IMPORT_ONNX_MODEL_H
#define FOLIO_IMPORT_ONNX_MODEL_H

#include "compiler/Import/ONNX/Graph.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class MemoryBuffer;
} // namespace llvm

namespace folio::onnx {

/// The model-level fields, separate from the graph so that the loader can
/// validate them before it converts any node.
struct ModelHeader {
  int64_t irVersion = 0;
  std::string producerName;
  std::string producerVersion;
  /// Domain → imported opset version; the default domain is spelt
  /// kDefaultDomain ("ai.onnx"), never "".
  std::map<std::string, int64_t> opsetImports;
  /// `metadata_props` (exporters record e.g. configuration there).
  std::map<std::string, std::string> metadata;
};

class Model {
public:
  Model(std::string path, ModelHeader header, Graph graph,
        std::vector<std::shared_ptr<const llvm::MemoryBuffer>> mappings);
  ~Model();

  /// The file it was loaded from, or the buffer's name.
  llvm::StringRef getPath() const { return path; }
  int64_t getIrVersion() const { return header.irVersion; }
  llvm::StringRef getProducerName() const { return header.producerName; }
  llvm::StringRef getProducerVersion() const { return header.producerVersion; }
  const std::map<std::string, int64_t> &getOpsetImports() const {
    return header.opsetImports;
  }
  /// The imported opset of `domain` ("" means kDefaultDomain); nullopt if the
  /// model does not import it.
  std::optional<int64_t> getOpsetVersion(llvm::StringRef domain) const;
  const std::map<std::string, std::string> &getMetadata() const {
    return header.metadata;
  }
  const Graph &getGraph() const { return graph; }

  /// The external data files this model maps, one entry per file.
  size_t getNumMappedFiles() const { return mappings.size(); }

private:
  std::string path;
  ModelHeader header;
  Graph graph;
  std::vector<std::shared_ptr<const llvm::MemoryBuffer>> mappings;
};

} // namespace folio::onnx

#endif // FOLIO_IMPORT_ONNX_MODEL_H
