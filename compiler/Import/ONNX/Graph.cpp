//===- Graph.cpp - An ONNX graph: values, constants and nodes -------------===//

#include "compiler/Import/ONNX/Graph.h"

#include <cassert>

namespace folio::onnx {

int64_t Dim::getValue() const {
  assert(isFixed() && "dimension is not fixed");
  return value;
}

std::string formatShape(const std::optional<std::vector<Dim>> &shape) {
  if (!shape)
    return "<unranked>";
  std::string text = "[";
  for (size_t i = 0; i < shape->size(); ++i) {
    const Dim &dim = (*shape)[i];
    if (i)
      text += ", ";
    if (dim.isFixed())
      text += std::to_string(dim.getValue());
    else if (dim.isSymbolic())
      text += dim.getSymbol();
    else
      text += "?";
  }
  return text + "]";
}

Graph::Graph(std::string name, std::vector<ValueInfo> inputs,
             std::vector<ValueInfo> outputs,
             std::vector<TensorData> initializers,
             std::vector<ValueInfo> valueInfos, std::vector<Node> nodes)
    : name(std::move(name)), inputs(std::move(inputs)),
      outputs(std::move(outputs)), initializers(std::move(initializers)),
      valueInfos(std::move(valueInfos)), nodes(std::move(nodes)) {
  for (const TensorData &tensor : this->initializers)
    initializerIndex.try_emplace(tensor.getName(), &tensor);
  // Inputs and outputs are authoritative; value_info only fills the gaps.
  for (const ValueInfo &info : this->inputs)
    valueInfoIndex.try_emplace(info.name, &info);
  for (const ValueInfo &info : this->outputs)
    valueInfoIndex.try_emplace(info.name, &info);
  for (const ValueInfo &info : this->valueInfos)
    valueInfoIndex.try_emplace(info.name, &info);
  for (const Node &node : this->nodes)
    for (const std::string &output : node.getOutputs())
      if (!output.empty())
        producerIndex.try_emplace(output, &node);
}

const TensorData *Graph::findInitializer(llvm::StringRef valueName) const {
  return initializerIndex.lookup(valueName);
}

const ValueInfo *Graph::findValueInfo(llvm::StringRef valueName) const {
  return valueInfoIndex.lookup(valueName);
}

const Node *Graph::findProducer(llvm::StringRef valueName) const {
  return producerIndex.lookup(valueName);
}

} // namespace folio::onnx
