//===- Model.cpp - A loaded ONNX model ------------------------------------===//

#include "compiler/Import/ONNX/Model.h"

#include "llvm/Support/MemoryBuffer.h"

namespace folio::onnx {

Model::Model(std::string path, ModelHeader header, Graph graph,
             std::vector<std::shared_ptr<const llvm::MemoryBuffer>> mappings)
    : path(std::move(path)), header(std::move(header)), graph(std::move(graph)),
      mappings(std::move(mappings)) {}

// Out of line: the header only forward-declares llvm::MemoryBuffer.
Model::~Model() = default;

std::optional<int64_t> Model::getOpsetVersion(llvm::StringRef domain) const {
  auto it = header.opsetImports.find(domain.empty() ? kDefaultDomain.str()
                                                    : domain.str());
  if (it == header.opsetImports.end())
    return std::nullopt;
  return it->second;
}

} // namespace folio::onnx
