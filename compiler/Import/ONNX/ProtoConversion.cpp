//===- ProtoConversion.cpp - ModelProto to Model --------------------------===//
//
// Structure first, dataflow second: this file turns each message into its
// plain C++ counterpart and refuses constructs Folio cannot represent
// (control flow, sparse tensors, non-tensor values); Validation.cpp then
// checks the graph as a whole.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/ONNX/ProtoConversion.h"

#include "compiler/Import/ONNX/ErrorUtil.h"
#include "compiler/Import/ONNX/ExternalData.h"
#include "compiler/Import/ONNX/Loader.h"
#include "compiler/Import/ONNX/TensorConversion.h"
#include "compiler/Import/ONNX/Validation.h"

#include "compiler/Import/ONNX/folio_onnx.pb.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

namespace folio::onnx {
namespace {

using folio_onnx::AttributeProto;

std::string normaliseDomain(const std::string &domain) {
  return domain.empty() ? kDefaultDomain.str() : domain;
}

llvm::Expected<ModelHeader> convertHeader(const folio_onnx::ModelProto &proto) {
  ModelHeader header;
  header.irVersion = proto.ir_version();
  header.producerName = proto.producer_name();
  header.producerVersion = proto.producer_version();
  for (const folio_onnx::OperatorSetIdProto &opset : proto.opset_import()) {
    std::string domain = normaliseDomain(opset.domain());
    if (!header.opsetImports.try_emplace(domain, opset.version()).second)
      return makeError("opset_import lists domain '" + domain +
                       "' twice (\"\" and \"ai.onnx\" are the same domain)");
  }
  for (const folio_onnx::StringStringEntryProto &entry : proto.metadata_props())
    header.metadata[entry.key()] = entry.value();
  return header;
}

/// `what` names the value in errors ("graph input 'x'").
llvm::Expected<ValueInfo>
convertValueInfo(const folio_onnx::ValueInfoProto &proto,
                 const llvm::Twine &what) {
  if (!proto.has_type())
    return makeError(what + " has no type");
  if (!proto.type().has_tensor_type())
    return makeError(what +
                     " is not a tensor (sequence, map, optional and sparse "
                     "values are not supported)");
  const folio_onnx::TypeProto::Tensor &tensorType = proto.type().tensor_type();
  std::optional<ElementType> type = elementTypeFromOnnx(tensorType.elem_type());
  if (!type || *type == ElementType::Undefined)
    return makeError(what + " has unknown element type " +
                     llvm::Twine(tensorType.elem_type()));
  if (!isSupportedElementType(*type))
    return makeError(what + " has element type " + getElementTypeName(*type) +
                     ", which is not supported; supported: " +
                     getSupportedElementTypeNames());
  ValueInfo info{proto.name(), *type, std::nullopt};
  if (!tensorType.has_shape())
    return info;
  info.shape.emplace();
  int64_t fixedElements = 1;
  for (const auto &[i, dim] : llvm::enumerate(tensorType.shape().dim())) {
    if (dim.has_dim_value()) {
      if (dim.dim_value() < 0)
        return makeError(what + " has negative dimension " +
                         llvm::Twine(dim.dim_value()) + " at index " +
                         llvm::Twine(i));
      if (dim.dim_value() > kMaxDimension)
        return makeError(what + " has dimension " +
                         llvm::Twine(dim.dim_value()) + " at index " +
                         llvm::Twine(i) + ", more than Folio supports (2^40)");
      if (llvm::MulOverflow(fixedElements, int64_t(dim.dim_value()),
                            fixedElements) ||
          fixedElements > kMaxDimension)
        return makeError(what +
                         " has more than 2^40 elements in its fixed "
                         "dimensions (up to index " +
                         llvm::Twine(i) + ")");
      info.shape->push_back(Dim::fixed(dim.dim_value()));
    } else if (dim.has_dim_param() && !dim.dim_param().empty()) {
      info.shape->push_back(Dim::symbolic(dim.dim_param()));
    } else {
      info.shape->push_back(Dim::unknown());
    }
  }
  return info;
}

/// Names the attribute types Folio refuses, for the message.
llvm::StringRef unsupportedAttributeTypeName(AttributeProto::AttributeType t) {
  switch (t) {
  case AttributeProto::SPARSE_TENSOR:
    return "sparse_tensor";
  case AttributeProto::SPARSE_TENSORS:
    return "sparse_tensors";
  case AttributeProto::TENSORS:
    return "tensors";
  case AttributeProto::TYPE_PROTO:
    return "type_proto";
  case AttributeProto::TYPE_PROTOS:
    return "type_protos";
  default:
    return "undefined";
  }
}

llvm::Expected<Attribute> convertAttribute(AttributeProto &proto,
                                           ExternalDataResolver &resolver) {
  const std::string &name = proto.name();
  if (name.empty())
    return makeError("an attribute has no name");
  if (!proto.ref_attr_name().empty())
    return makeError("attribute '" + name + "' refers to function attribute '" +
                     proto.ref_attr_name() +
                     "'; references are only valid inside functions");
  // Checked before the type switch: a subgraph anywhere means control flow,
  // whatever the type field claims.
  if (proto.type() == AttributeProto::GRAPH ||
      proto.type() == AttributeProto::GRAPHS || proto.has_g() ||
      proto.graphs_size() > 0)
    return makeError("attribute '" + name +
                     "' holds a subgraph: control flow (If, Loop, Scan) is "
                     "not supported; Folio needs a straight-line graph "
                     "(export with static control flow)");
  switch (proto.type()) {
  case AttributeProto::INT:
    return Attribute(name, int64_t(proto.i()));
  case AttributeProto::FLOAT:
    return Attribute(name, proto.f());
  case AttributeProto::STRING:
    return Attribute(name, std::string(proto.s()));
  case AttributeProto::INTS:
    return Attribute(
        name, std::vector<int64_t>(proto.ints().begin(), proto.ints().end()));
  case AttributeProto::FLOATS:
    return Attribute(
        name, std::vector<float>(proto.floats().begin(), proto.floats().end()));
  case AttributeProto::STRINGS:
    return Attribute(name, std::vector<std::string>(proto.strings().begin(),
                                                    proto.strings().end()));
  case AttributeProto::TENSOR: {
    llvm::Expected<TensorData> tensor = convertTensor(
        *proto.mutable_t(), resolver, "tensor of attribute '" + name + "'");
    if (!tensor)
      return tensor.takeError();
    return Attribute(name, std::move(*tensor));
  }
  case AttributeProto::UNDEFINED:
    return makeError("attribute '" + name + "' has no type");
  default:
    return makeError("attribute '" + name + "' has type " +
                     unsupportedAttributeTypeName(proto.type()) +
                     ", which is not supported; supported: int, float, "
                     "string, tensor, ints, floats, strings");
  }
}

llvm::Expected<Node> convertNode(folio_onnx::NodeProto &proto, unsigned index,
                                 const ModelHeader &header,
                                 ExternalDataResolver &resolver) {
  std::string domain = normaliseDomain(proto.domain());
  auto opset = header.opsetImports.find(domain);
  int64_t version = opset == header.opsetImports.end() ? 0 : opset->second;
  if (proto.op_type().empty())
    return makeError(
        describeNode(index, proto.name(), "<no op_type>", domain, version) +
        ": node has no op_type");
  std::vector<Attribute> attributes;
  llvm::StringSet<> names;
  for (AttributeProto &attrProto : *proto.mutable_attribute()) {
    llvm::Expected<Attribute> attr = convertAttribute(attrProto, resolver);
    if (attr && !names.insert(attr->getName()).second)
      attr = makeError("attribute '" + attr->getName() + "' appears twice");
    if (!attr)
      return addContext(
          describeNode(index, proto.name(), proto.op_type(), domain, version),
          attr.takeError());
    attributes.push_back(std::move(*attr));
  }
  return Node(index, proto.name(), proto.op_type(), std::move(domain), version,
              {proto.input().begin(), proto.input().end()},
              {proto.output().begin(), proto.output().end()},
              std::move(attributes));
}

llvm::Expected<Graph> convertGraph(folio_onnx::GraphProto &proto,
                                   const ModelHeader &header,
                                   ExternalDataResolver &resolver) {
  if (proto.sparse_initializer_size() > 0)
    return makeError("sparse initializer '" +
                     proto.sparse_initializer(0).values().name() +
                     "' is not supported; store it as a dense initializer");

  std::vector<TensorData> initializers;
  llvm::StringSet<> initializerNames;
  for (auto [i, tensorProto] : llvm::enumerate(*proto.mutable_initializer())) {
    if (tensorProto.name().empty())
      return makeError("initializer #" + llvm::Twine(i) + " has no name");
    llvm::Expected<TensorData> tensor = convertTensor(
        tensorProto, resolver, "initializer '" + tensorProto.name() + "'");
    if (!tensor)
      return tensor.takeError();
    initializerNames.insert(tensor->getName());
    initializers.push_back(std::move(*tensor));
  }

  std::vector<ValueInfo> inputs;
  for (const folio_onnx::ValueInfoProto &input : proto.input()) {
    // An input that is also an initializer is a weight with an overridable
    // default (IR < 4 required listing weights as inputs). Folio compiles
    // weights as constants, so it is not a runtime input.
    if (initializerNames.contains(input.name()))
      continue;
    llvm::Expected<ValueInfo> info =
        convertValueInfo(input, "graph input '" + input.name() + "'");
    if (!info)
      return info.takeError();
    inputs.push_back(std::move(*info));
  }

  std::vector<ValueInfo> outputs;
  for (const folio_onnx::ValueInfoProto &output : proto.output()) {
    llvm::Expected<ValueInfo> info =
        convertValueInfo(output, "graph output '" + output.name() + "'");
    if (!info)
      return info.takeError();
    outputs.push_back(std::move(*info));
  }

  std::vector<ValueInfo> valueInfos;
  for (const folio_onnx::ValueInfoProto &hint : proto.value_info()) {
    // value_info only carries hints: drop the ones Folio could not use (no
    // type, or not a tensor) rather than refusing the model for them. A
    // malformed tensor hint is still an error: it would mislead the importer.
    if (!hint.has_type() || !hint.type().has_tensor_type())
      continue;
    llvm::Expected<ValueInfo> info =
        convertValueInfo(hint, "value_info '" + hint.name() + "'");
    if (!info)
      return info.takeError();
    valueInfos.push_back(std::move(*info));
  }

  std::vector<Node> nodes;
  nodes.reserve(proto.node_size());
  for (auto [i, nodeProto] : llvm::enumerate(*proto.mutable_node())) {
    llvm::Expected<Node> node = convertNode(nodeProto, i, header, resolver);
    if (!node)
      return node.takeError();
    nodes.push_back(std::move(*node));
  }

  return Graph(proto.name(), std::move(inputs), std::move(outputs),
               std::move(initializers), std::move(valueInfos),
               std::move(nodes));
}

} // namespace

llvm::Expected<std::unique_ptr<Model>>
convertModel(folio_onnx::ModelProto &proto, llvm::StringRef path,
             llvm::StringRef externalDataDir) {
  llvm::Expected<ModelHeader> header = convertHeader(proto);
  if (!header)
    return header.takeError();
  if (llvm::Error error = checkVersions(*header))
    return std::move(error);

  ExternalDataResolver resolver(externalDataDir.str());
  llvm::Expected<Graph> graph =
      convertGraph(*proto.mutable_graph(), *header, resolver);
  if (!graph)
    return graph.takeError();

  LocalFunctionSet localFunctions;
  for (const folio_onnx::FunctionProto &function : proto.functions())
    localFunctions.emplace(normaliseDomain(function.domain()), function.name());
  if (llvm::Error error = checkGraph(*graph, *header, localFunctions))
    return std::move(error);

  return std::make_unique<Model>(path.str(), std::move(*header),
                                 std::move(*graph), resolver.getMappings());
}

} // namespace folio::onnx
