//===- ModelBuilder.cpp - Building small ONNX models in C++ ---------------===//

#include "test/unittests/Import/ModelBuilder.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace folio::onnx::testing {

ModelProto makeModel(int64_t opset) {
  ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("folio-test");
  model.set_producer_version("1.0");
  auto *import = model.add_opset_import();
  import->set_domain("");
  import->set_version(opset);
  model.mutable_graph()->set_name("test");
  return model;
}

void setTensorType(ValueInfoProto &info, int32_t elemType,
                   const std::vector<DimSpec> &dims) {
  auto *tensor = info.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elemType);
  auto *shape = tensor->mutable_shape();
  for (const DimSpec &spec : dims) {
    auto *dim = shape->add_dim();
    if (spec.hasValue)
      dim->set_dim_value(spec.value);
    else if (!spec.symbol.empty())
      dim->set_dim_param(spec.symbol);
  }
}

namespace {
ValueInfoProto *fill(ValueInfoProto *info, const std::string &name,
                     int32_t elemType, const std::vector<DimSpec> &dims) {
  info->set_name(name);
  setTensorType(*info, elemType, dims);
  return info;
}
} // namespace

ValueInfoProto *addInput(GraphProto &graph, const std::string &name,
                         int32_t elemType, std::vector<DimSpec> dims) {
  return fill(graph.add_input(), name, elemType, dims);
}

ValueInfoProto *addOutput(GraphProto &graph, const std::string &name,
                          int32_t elemType, std::vector<DimSpec> dims) {
  return fill(graph.add_output(), name, elemType, dims);
}

ValueInfoProto *addValueInfo(GraphProto &graph, const std::string &name,
                             int32_t elemType, std::vector<DimSpec> dims) {
  return fill(graph.add_value_info(), name, elemType, dims);
}

NodeProto *addNode(GraphProto &graph, const std::string &opType,
                   std::vector<std::string> inputs,
                   std::vector<std::string> outputs, const std::string &name,
                   const std::string &domain) {
  NodeProto *node = graph.add_node();
  node->set_op_type(opType);
  node->set_name(name);
  node->set_domain(domain);
  for (std::string &input : inputs)
    node->add_input(std::move(input));
  for (std::string &output : outputs)
    node->add_output(std::move(output));
  return node;
}

TensorProto makeRawTensor(const std::string &name, int32_t dataType,
                          std::vector<int64_t> dims, const std::string &bytes) {
  TensorProto tensor;
  tensor.set_name(name);
  tensor.set_data_type(dataType);
  for (int64_t dim : dims)
    tensor.add_dims(dim);
  tensor.set_raw_data(bytes);
  return tensor;
}

TensorProto makeFloatTensor(const std::string &name, std::vector<int64_t> dims,
                            std::vector<float> values) {
  TensorProto tensor;
  tensor.set_name(name);
  tensor.set_data_type(TensorProto::FLOAT);
  for (int64_t dim : dims)
    tensor.add_dims(dim);
  for (float value : values)
    tensor.add_float_data(value);
  return tensor;
}

TensorProto makeExternalTensor(const std::string &name, int32_t dataType,
                               std::vector<int64_t> dims,
                               const std::string &location, uint64_t offset,
                               int64_t length) {
  TensorProto tensor;
  tensor.set_name(name);
  tensor.set_data_type(dataType);
  for (int64_t dim : dims)
    tensor.add_dims(dim);
  tensor.set_data_location(TensorProto::EXTERNAL);
  auto add = [&](const std::string &key, const std::string &value) {
    auto *entry = tensor.add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  };
  add("location", location);
  add("offset", std::to_string(offset));
  if (length >= 0)
    add("length", std::to_string(length));
  return tensor;
}

TensorProto *addInitializer(GraphProto &graph, TensorProto tensor) {
  TensorProto *added = graph.add_initializer();
  *added = std::move(tensor);
  return added;
}

namespace {
AttributeProto *addAttr(NodeProto &node, const std::string &name,
                        AttributeProto::AttributeType type) {
  AttributeProto *attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(type);
  return attr;
}
} // namespace

AttributeProto *addIntAttr(NodeProto &node, const std::string &name,
                           int64_t value) {
  AttributeProto *attr = addAttr(node, name, AttributeProto::INT);
  attr->set_i(value);
  return attr;
}

AttributeProto *addFloatAttr(NodeProto &node, const std::string &name,
                             float value) {
  AttributeProto *attr = addAttr(node, name, AttributeProto::FLOAT);
  attr->set_f(value);
  return attr;
}

AttributeProto *addStringAttr(NodeProto &node, const std::string &name,
                              const std::string &value) {
  AttributeProto *attr = addAttr(node, name, AttributeProto::STRING);
  attr->set_s(value);
  return attr;
}

AttributeProto *addIntsAttr(NodeProto &node, const std::string &name,
                            std::vector<int64_t> values) {
  AttributeProto *attr = addAttr(node, name, AttributeProto::INTS);
  for (int64_t value : values)
    attr->add_ints(value);
  return attr;
}

AttributeProto *addFloatsAttr(NodeProto &node, const std::string &name,
                              std::vector<float> values) {
  AttributeProto *attr = addAttr(node, name, AttributeProto::FLOATS);
  for (float value : values)
    attr->add_floats(value);
  return attr;
}

AttributeProto *addStringsAttr(NodeProto &node, const std::string &name,
                               std::vector<std::string> values) {
  AttributeProto *attr = addAttr(node, name, AttributeProto::STRINGS);
  for (std::string &value : values)
    attr->add_strings(std::move(value));
  return attr;
}

AttributeProto *addTensorAttr(NodeProto &node, const std::string &name,
                              TensorProto value) {
  AttributeProto *attr = addAttr(node, name, AttributeProto::TENSOR);
  *attr->mutable_t() = std::move(value);
  return attr;
}

ModelProto makeAddModel() {
  ModelProto model = makeModel();
  GraphProto &graph = *model.mutable_graph();
  addInput(graph, "x", TensorProto::FLOAT, {"batch", 4});
  addInitializer(graph, makeFloatTensor("w", {4}, {1.0f, 2.0f, 3.0f, 4.0f}));
  addNode(graph, "Add", {"x", "w"}, {"y"}, "add");
  addOutput(graph, "y", TensorProto::FLOAT, {"batch", 4});
  return model;
}

void writeModel(const ModelProto &model, const std::string &path) {
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    throw std::runtime_error("cannot serialise model");
  writeFile(path, bytes);
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out)
    throw std::runtime_error("cannot write " + path);
}

TempDir::TempDir() {
  llvm::SmallString<128> path;
  if (llvm::sys::fs::createUniqueDirectory("folio-onnx-test", path))
    throw std::runtime_error("cannot create a temporary directory");
  dir = path.str().str();
}

TempDir::~TempDir() { llvm::sys::fs::remove_directories(dir); }

std::string TempDir::file(const std::string &name) const {
  return dir + "/" + name;
}

} // namespace folio::onnx::testing
