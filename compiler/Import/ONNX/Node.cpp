//===- Node.cpp - One ONNX node -------------------------------------------===//

#include "compiler/Import/ONNX/Node.h"

#include "compiler/Import/ONNX/ErrorUtil.h"

namespace folio::onnx {

Node::Node(unsigned index, std::string name, std::string opType,
           std::string domain, int64_t opsetVersion,
           std::vector<std::string> inputs, std::vector<std::string> outputs,
           std::vector<Attribute> attributes)
    : index(index), name(std::move(name)), opType(std::move(opType)),
      domain(std::move(domain)), opsetVersion(opsetVersion),
      inputs(std::move(inputs)), outputs(std::move(outputs)),
      attributes(std::move(attributes)) {}

const Attribute *Node::findAttribute(llvm::StringRef attrName) const {
  for (const Attribute &attr : attributes)
    if (attr.getName() == attrName)
      return &attr;
  return nullptr;
}

std::string describeNode(unsigned index, llvm::StringRef name,
                         llvm::StringRef opType, llvm::StringRef domain,
                         int64_t opsetVersion) {
  std::string text = "node ";
  if (!name.empty())
    text += "'" + name.str() + "' ";
  text +=
      "(#" + std::to_string(index) + ", " + domain.str() + " " + opType.str();
  // 0 means the domain is not imported; validation reports that.
  if (opsetVersion > 0)
    text += ", opset " + std::to_string(opsetVersion);
  return text + ")";
}

std::string Node::describe() const {
  return describeNode(index, name, opType, domain, opsetVersion);
}

llvm::Error Node::makeError(const llvm::Twine &message) const {
  return onnx::makeError(describe() + ": " + message);
}

} // namespace folio::onnx
