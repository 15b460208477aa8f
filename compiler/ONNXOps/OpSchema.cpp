//===- OpSchema.cpp - The ONNX op table and the handlers' context ---------===//

#include "compiler/ONNXOps/OpSchema.h"
#include "compiler/ONNXOps/ShapeInference.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <set>

using namespace mlir;
using namespace mlir::folio;

static const std::vector<ONNXOpSchema> &getTable() {
  static const std::vector<ONNXOpSchema> table = [] {
    std::vector<ONNXOpSchema> entries;
    appendDefaultDomainAtoF(entries);
    appendDefaultDomainGtoQ(entries);
    appendDefaultDomainRtoZ(entries);
    appendFusedOps(entries);
    return entries;
  }();
  return table;
}

const ONNXOpSchema *mlir::folio::lookupONNXOp(StringRef domain,
                                              StringRef opType, int64_t opset) {
  return resolveBySinceVersion(getTable(), domain, opType, opset);
}

std::optional<int64_t> mlir::folio::getFirstSupportedOpset(StringRef domain,
                                                           StringRef opType) {
  std::optional<int64_t> first;
  for (const ONNXOpSchema &schema : getTable())
    if (schema.domain == domain && schema.opType == opType &&
        (!first || schema.sinceVersion < *first))
      first = schema.sinceVersion;
  return first;
}

std::string mlir::folio::listSupportedONNXOps(StringRef domain) {
  return listOpTypes(getTable(), domain);
}

std::vector<std::string> mlir::folio::listSupportedONNXDomains() {
  std::set<std::string> domains;
  for (const ONNXOpSchema &schema : getTable())
    domains.insert(schema.domain.str());
  return {domains.begin(), domains.end()};
}

//===----------------------------------------------------------------------===//
// ONNXInferenceContext
//===----------------------------------------------------------------------===//

ONNXInferenceContext::ONNXInferenceContext(
    ONNXShapeInference &engine, StringRef opType, int64_t opset,
    DictionaryAttr attributes, ArrayRef<const ONNXValueFacts *> inputs,
    unsigned numOutputs, Location loc)
    : engine(engine), opType(opType.str()), opset(opset),
      attributes(attributes ? attributes
                            : DictionaryAttr::get(loc.getContext())),
      inputs(inputs.begin(), inputs.end()), outputs(numOutputs), loc(loc) {}

InFlightDiagnostic ONNXInferenceContext::emitError() {
  return mlir::emitError(loc) << opType << ": ";
}

FailureOr<int64_t>
ONNXInferenceContext::getInt(StringRef name,
                             std::optional<int64_t> defaultValue) {
  Attribute attr = attributes.get(name);
  if (!attr) {
    if (defaultValue)
      return *defaultValue;
    return emitError() << "missing required int attribute '" << name << "'";
  }
  if (auto integer = dyn_cast<IntegerAttr>(attr))
    return integer.getInt();
  return emitError() << "attribute '" << name << "' must be an int";
}

FailureOr<double>
ONNXInferenceContext::getFloat(StringRef name,
                               std::optional<double> defaultValue) {
  Attribute attr = attributes.get(name);
  if (!attr) {
    if (defaultValue)
      return *defaultValue;
    return emitError() << "missing required float attribute '" << name << "'";
  }
  if (auto number = dyn_cast<FloatAttr>(attr))
    return number.getValueAsDouble();
  return emitError() << "attribute '" << name << "' must be a float";
}

FailureOr<std::string>
ONNXInferenceContext::getString(StringRef name,
                                std::optional<StringRef> defaultValue) {
  Attribute attr = attributes.get(name);
  if (!attr) {
    if (defaultValue)
      return defaultValue->str();
    return emitError() << "missing required string attribute '" << name << "'";
  }
  if (auto str = dyn_cast<StringAttr>(attr))
    return str.getValue().str();
  return emitError() << "attribute '" << name << "' must be a string";
}

FailureOr<SmallVector<int64_t>>
ONNXInferenceContext::getInts(StringRef name,
                              std::optional<ArrayRef<int64_t>> defaultValue) {
  Attribute attr = attributes.get(name);
  if (!attr) {
    if (defaultValue)
      return SmallVector<int64_t>(defaultValue->begin(), defaultValue->end());
    return emitError() << "missing required ints attribute '" << name << "'";
  }
  if (auto ints = dyn_cast<DenseI64ArrayAttr>(attr))
    return SmallVector<int64_t>(ints.asArrayRef());
  return emitError() << "attribute '" << name << "' must be a list of ints";
}

FailureOr<ElementsAttr> ONNXInferenceContext::getTensor(StringRef name) {
  Attribute attr = attributes.get(name);
  if (!attr)
    return emitError() << "missing required tensor attribute '" << name << "'";
  if (auto tensor = dyn_cast<ElementsAttr>(attr))
    return tensor;
  return emitError() << "attribute '" << name << "' must be a tensor";
}

FailureOr<int64_t> ONNXInferenceContext::normalizeAxis(int64_t axis,
                                                       int64_t rank,
                                                       StringRef what) {
  if (axis < -rank || axis >= rank)
    return emitError() << what << " " << axis << " is out of range for rank "
                       << rank;
  return axis < 0 ? axis + rank : axis;
}
