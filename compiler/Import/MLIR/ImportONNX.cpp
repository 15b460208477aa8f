//===- ImportONNX.cpp - A loaded ONNX model to an MLIR module -------------===//

#include "compiler/Import/MLIR/ImportONNX.h"

#include "compiler/Import/MLIR/TensorConstants.h"
#include "compiler/Import/ONNX/Model.h"
#include "compiler/ONNXOps/InferHelpers.h"
#include "compiler/ONNXOps/ShapeInference.h"
#include "dialects/Folio/IR/FolioOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::folio;
namespace onnx = ::folio::onnx;

namespace {

class Importer {
public:
  Importer(MLIRContext &context, std::shared_ptr<const onnx::Model> model,
           const ONNXImportOptions &options)
      : context(context), model(std::move(model)), options(options),
        builder(&context), inference(&context) {}

  OwningOpRef<ModuleOp> run();

private:
  Location locationFor(const onnx::Node &node);
  FailureOr<Type> typeForValueInfo(const onnx::ValueInfo &info);
  LogicalResult importInputs(func::FuncOp func,
                             SmallVectorImpl<Type> &argTypes);
  LogicalResult importInitializer(const onnx::TensorData &tensor);
  LogicalResult importNode(const onnx::Node &node);
  FailureOr<NamedAttribute> convertAttribute(const onnx::Node &node,
                                             const onnx::Attribute &attr);

  MLIRContext &context;
  std::shared_ptr<const onnx::Model> model;
  const ONNXImportOptions &options;
  OpBuilder builder;
  ONNXShapeInference inference;
  llvm::StringMap<Value> values;
};

} // namespace

Location Importer::locationFor(const onnx::Node &node) {
  return NameLoc::get(StringAttr::get(&context, node.describe()),
                      FileLineColLoc::get(&context, model->getPath(), 0, 0));
}

FailureOr<Type> Importer::typeForValueInfo(const onnx::ValueInfo &info) {
  Type element = infer::elementTypeFromONNX(
      &context, static_cast<int64_t>(info.elementType));
  if (!element) {
    emitError(FileLineColLoc::get(&context, model->getPath(), 0, 0))
        << "graph value '" << info.name << "' has element type "
        << onnx::getElementTypeName(info.elementType)
        << ", which Folio does not support";
    return failure();
  }
  if (!info.shape)
    return Type(UnrankedTensorType::get(element));
  SmallVector<int64_t> shape;
  for (const onnx::Dim &dim : *info.shape)
    shape.push_back(dim.isFixed() ? dim.getValue() : ShapedType::kDynamic);
  return Type(RankedTensorType::get(shape, element));
}

LogicalResult Importer::importInputs(func::FuncOp func,
                                     SmallVectorImpl<Type> &argTypes) {
  const onnx::Graph &graph = model->getGraph();
  Block *entry = func.addEntryBlock();
  for (auto [i, info] : llvm::enumerate(graph.getInputs())) {
    Value arg = entry->getArgument(i);
    SmallVector<Attribute> dimNames;
    if (info.shape)
      for (const onnx::Dim &dim : *info.shape)
        dimNames.push_back(builder.getStringAttr(dim.getSymbol()));
    func.setArgAttr(i, kONNXNameAttrName, builder.getStringAttr(info.name));
    if (info.shape)
      func.setArgAttr(i, kDimNamesAttrName, builder.getArrayAttr(dimNames));
    values[info.name] = arg;
  }
  // Facts after every name is known: the contract relates inputs' dims.
  inference.relateDecoderDims(func);
  for (BlockArgument arg : entry->getArguments())
    inference.setFacts(
        arg, inference.factsForType(
                 arg.getType(), func.getArgAttrOfType<ArrayAttr>(
                                    arg.getArgNumber(), kDimNamesAttrName)));
  builder.setInsertionPointToStart(entry);
  return success();
}

LogicalResult Importer::importInitializer(const onnx::TensorData &tensor) {
  Location loc = NameLoc::get(
      builder.getStringAttr("initializer '" + tensor.getName() + "'"),
      FileLineColLoc::get(&context, model->getPath(), 0, 0));
  FailureOr<ElementsAttr> value =
      convertTensor(context, tensor, model, options.inlineElementLimit, loc);
  if (failed(value))
    return failure();
  auto constant = builder.create<arith::ConstantOp>(loc, *value);
  inference.setFacts(constant, inference.factsForConstant(*value));
  values[tensor.getName()] = constant;
  return success();
}

FailureOr<NamedAttribute>
Importer::convertAttribute(const onnx::Node &node,
                           const onnx::Attribute &attr) {
  StringAttr name = builder.getStringAttr(attr.getName());
  switch (attr.getKind()) {
  case onnx::Attribute::Kind::Int:
    return NamedAttribute(name, builder.getI64IntegerAttr(attr.getInt()));
  case onnx::Attribute::Kind::Float:
    return NamedAttribute(name, builder.getF32FloatAttr(attr.getFloat()));
  case onnx::Attribute::Kind::String:
    return NamedAttribute(name, builder.getStringAttr(attr.getString()));
  case onnx::Attribute::Kind::Ints:
    return NamedAttribute(name, builder.getDenseI64ArrayAttr(attr.getInts()));
  case onnx::Attribute::Kind::Floats:
    return NamedAttribute(name, builder.getDenseF32ArrayAttr(attr.getFloats()));
  case onnx::Attribute::Kind::Strings: {
    SmallVector<Attribute> strings;
    for (const std::string &s : attr.getStrings())
      strings.push_back(builder.getStringAttr(s));
    return NamedAttribute(name, builder.getArrayAttr(strings));
  }
  case onnx::Attribute::Kind::Tensor: {
    FailureOr<ElementsAttr> value =
        convertTensor(context, attr.getTensor(), model,
                      options.inlineElementLimit, locationFor(node));
    if (failed(value))
      return failure();
    return NamedAttribute(name, *value);
  }
  }
  llvm_unreachable("unknown attribute kind");
}

LogicalResult Importer::importNode(const onnx::Node &node) {
  Location loc = locationFor(node);
  SmallVector<NamedAttribute> attrs;
  for (const onnx::Attribute &attr : node.getAttributes()) {
    FailureOr<NamedAttribute> converted = convertAttribute(node, attr);
    if (failed(converted))
      return failure();
    attrs.push_back(*converted);
  }
  DictionaryAttr attrDict = builder.getDictionaryAttr(attrs);

  SmallVector<Value> operands;
  SmallVector<int64_t> absent;
  SmallVector<const ONNXValueFacts *> inputFacts;
  for (auto [i, name] : llvm::enumerate(node.getInputs())) {
    if (name.empty()) {
      absent.push_back(i);
      inputFacts.push_back(nullptr);
      continue;
    }
    // The loader guarantees every input is defined before use.
    Value value = values.lookup(name);
    assert(value && "loader let an undefined input through");
    operands.push_back(value);
    inputFacts.push_back(inference.lookup(value));
  }
  // Trailing omitted inputs are simply absent, as in the protobuf.
  while (!absent.empty() && absent.back() == int64_t(inputFacts.size()) - 1) {
    absent.pop_back();
    inputFacts.pop_back();
  }

  SmallVector<ONNXValueFacts> results;
  unsigned numOutputs = node.getOutputs().size();
  if (failed(inference.inferNode(node.getDomain(), node.getOpType(),
                                 node.getOpsetVersion(), attrDict, inputFacts,
                                 numOutputs, loc, results)))
    return failure();

  SmallVector<Type> resultTypes;
  for (const ONNXValueFacts &facts : results)
    resultTypes.push_back(facts.getType());
  auto op = builder.create<ONNXNodeOp>(
      loc, resultTypes, builder.getStringAttr(node.getOpType()),
      builder.getStringAttr(node.isDefaultDomain() ? StringRef()
                                                   : node.getDomain()),
      builder.getI64IntegerAttr(node.getOpsetVersion()),
      builder.getStringAttr(node.getName()), attrDict,
      builder.getDenseI64ArrayAttr(absent), operands);
  for (auto [i, name] : llvm::enumerate(node.getOutputs())) {
    inference.setFacts(op.getResult(i), std::move(results[i]));
    if (!name.empty())
      values[name] = op.getResult(i);
  }
  return success();
}

OwningOpRef<ModuleOp> Importer::run() {
  context.loadDialect<FolioDialect, arith::ArithDialect, func::FuncDialect>();
  Location fileLoc = FileLineColLoc::get(&context, model->getPath(), 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  builder.setInsertionPointToEnd(module->getBody());

  const onnx::Graph &graph = model->getGraph();
  SmallVector<Type> argTypes;
  for (const onnx::ValueInfo &info : graph.getInputs()) {
    FailureOr<Type> type = typeForValueInfo(info);
    if (failed(type))
      return nullptr;
    argTypes.push_back(*type);
  }
  auto func = builder.create<func::FuncOp>(
      fileLoc, "main", builder.getFunctionType(argTypes, {}));
  if (failed(importInputs(func, argTypes)))
    return nullptr;

  for (const onnx::TensorData &tensor : graph.getInitializers())
    if (failed(importInitializer(tensor)))
      return nullptr;

  size_t total = graph.getNodes().size();
  for (const onnx::Node &node : graph.getNodes()) {
    if (failed(importNode(node)))
      return nullptr;
    if (options.progress)
      options.progress(node.getIndex() + 1, total);
  }

  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (const onnx::ValueInfo &info : graph.getOutputs()) {
    Value value = values.lookup(info.name);
    if (!value) {
      emitError(fileLoc) << "graph output '" << info.name
                         << "' is not produced by any node, input or "
                            "initializer";
      return nullptr;
    }
    results.push_back(value);
    resultTypes.push_back(value.getType());
  }
  builder.create<func::ReturnOp>(fileLoc, results);
  func.setType(builder.getFunctionType(argTypes, resultTypes));
  for (auto [i, info] : llvm::enumerate(graph.getOutputs()))
    func.setResultAttr(i, kONNXNameAttrName, builder.getStringAttr(info.name));

  // What produced the model and which opsets it imports, for messages and
  // for passes whose patterns depend on the exporter.
  std::string producer =
      (model->getProducerName() + " " + model->getProducerVersion()).str();
  (*module)->setAttr(kONNXProducerAttrName, builder.getStringAttr(producer));
  SmallVector<NamedAttribute> opsets;
  for (const auto &[domain, version] : model->getOpsetImports())
    opsets.push_back(
        builder.getNamedAttr(domain, builder.getI64IntegerAttr(version)));
  (*module)->setAttr(kONNXOpsetsAttrName, builder.getDictionaryAttr(opsets));
  return module;
}

OwningOpRef<ModuleOp>
mlir::folio::importONNXModel(MLIRContext &context,
                             std::shared_ptr<const onnx::Model> model,
                             const ONNXImportOptions &options) {
  return Importer(context, std::move(model), options).run();
}
