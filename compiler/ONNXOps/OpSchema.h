//===- OpSchema.h - The ONNX ops Folio understands --------------*- C++ -*-===//
//
// One table of handlers keyed by (domain, op type, since-version), as
// torch-mlir keys its ONNX conversions: a model's node resolves to the
// handler with the largest since-version not above the model's opset for
// that domain. A handler states its arity and infers its outputs' types,
// symbolic dims and, for small tensors, values; later passes add lowering.
// Handlers live in files split by domain and first letter.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_ONNXOPS_OPSCHEMA_H
#define FOLIO_ONNXOPS_OPSCHEMA_H

#include "compiler/ONNXOps/ValueFacts.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace mlir::folio {

class ONNXShapeInference;

/// The domains handlers are registered under. The default domain is spelt
/// "ai.onnx" (the importer maps "" to it).
inline constexpr llvm::StringLiteral kONNXDomain = "ai.onnx";
inline constexpr llvm::StringLiteral kMicrosoftDomain = "com.microsoft";

/// What a handler sees of one node: its inputs' facts by ONNX position (null
/// for an omitted optional input), attributes, opset, and slots for outputs.
class ONNXInferenceContext {
public:
  ONNXInferenceContext(ONNXShapeInference &engine, StringRef opType,
                       int64_t opset, DictionaryAttr attributes,
                       ArrayRef<const ONNXValueFacts *> inputs,
                       unsigned numOutputs, Location loc);

  StringRef getOpType() const { return opType; }
  int64_t getOpset() const { return opset; }
  MLIRContext *getContext() const { return loc.getContext(); }
  ONNXShapeInference &getEngine() const { return engine; }

  unsigned getNumInputs() const { return inputs.size(); }
  bool hasInput(unsigned i) const {
    return i < inputs.size() && inputs[i] != nullptr;
  }
  /// Requires hasInput(i).
  const ONNXValueFacts &input(unsigned i) const { return *inputs[i]; }

  unsigned getNumOutputs() const { return outputs.size(); }
  ONNXValueFacts &output(unsigned i) { return outputs[i]; }
  SmallVector<ONNXValueFacts> takeOutputs() { return std::move(outputs); }

  DictionaryAttr getAttributes() const { return attributes; }
  bool hasAttr(StringRef name) const { return bool(attributes.get(name)); }
  /// Attribute getters: the forms with a default accept a missing attribute;
  /// all fail (with a diagnostic) on a wrong attribute type.
  FailureOr<int64_t> getInt(StringRef name,
                            std::optional<int64_t> defaultValue = {});
  FailureOr<double> getFloat(StringRef name,
                             std::optional<double> defaultValue = {});
  FailureOr<std::string> getString(StringRef name,
                                   std::optional<StringRef> defaultValue = {});
  FailureOr<SmallVector<int64_t>>
  getInts(StringRef name, std::optional<ArrayRef<int64_t>> defaultValue = {});
  /// The `value` attribute of Constant-like ops.
  FailureOr<ElementsAttr> getTensor(StringRef name);

  /// An error about this node: "<op type>: <message>" at the node.
  InFlightDiagnostic emitError();

  /// Normalises a possibly negative axis against `rank`, or fails naming the
  /// attribute or input it came from.
  FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank, StringRef what);

private:
  ONNXShapeInference &engine;
  std::string opType;
  int64_t opset;
  DictionaryAttr attributes;
  SmallVector<const ONNXValueFacts *> inputs;
  SmallVector<ONNXValueFacts> outputs;
  Location loc;
};

using ONNXInferFn = LogicalResult (*)(ONNXInferenceContext &);

struct ONNXOpSchema {
  StringRef domain;
  StringRef opType;
  /// The opset in which this form of the op was introduced.
  int64_t sinceVersion;
  unsigned minInputs, maxInputs;
  unsigned minOutputs, maxOutputs;
  ONNXInferFn infer;
};

/// The entry of `table` (handlers, lowering hooks: anything with domain,
/// opType and sinceVersion) for `opType` in `domain` at `opset`: the
/// largest since-version not above the opset, or nullptr.
template <typename Entry>
const Entry *resolveBySinceVersion(const std::vector<Entry> &table,
                                   StringRef domain, StringRef opType,
                                   int64_t opset) {
  const Entry *best = nullptr;
  for (const Entry &entry : table)
    if (entry.domain == domain && entry.opType == opType &&
        entry.sinceVersion <= opset &&
        (!best || entry.sinceVersion > best->sinceVersion))
      best = &entry;
  return best;
}

/// "Add, And, ...": the op types `table` has in `domain`, sorted, once each.
template <typename Entry>
std::string listOpTypes(const std::vector<Entry> &table, StringRef domain) {
  std::vector<std::string> names;
  for (const Entry &entry : table)
    if (entry.domain == domain)
      names.push_back(entry.opType.str());
  llvm::sort(names);
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::string out;
  for (const std::string &name : names)
    out += (out.empty() ? "" : ", ") + name;
  return out;
}

/// The handler for `opType` in `domain` at `opset`, or nullptr.
const ONNXOpSchema *lookupONNXOp(StringRef domain, StringRef opType,
                                 int64_t opset);
/// The oldest since-version registered for the op, if any (for "supported
/// from opset N" messages).
std::optional<int64_t> getFirstSupportedOpset(StringRef domain,
                                              StringRef opType);
/// "Add, And, Cast, ...": the ops handled in `domain`, for error messages.
std::string listSupportedONNXOps(StringRef domain);
/// The domains that have handlers.
std::vector<std::string> listSupportedONNXDomains();

/// Registration, one function per file of handlers.
void appendDefaultDomainAtoF(std::vector<ONNXOpSchema> &table);
void appendDefaultDomainGtoQ(std::vector<ONNXOpSchema> &table);
void appendDefaultDomainRtoZ(std::vector<ONNXOpSchema> &table);
/// The fused forms of both domains (opset-23 Attention, ORT contrib ops).
void appendFusedOps(std::vector<ONNXOpSchema> &table);

} // namespace mlir::folio

#endif // FOLIO_ONNXOPS_OPSCHEMA_H
