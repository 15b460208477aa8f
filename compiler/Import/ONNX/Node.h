//===- Node.h - One ONNX node -----------------------------------*- C++ -*-===//
//
// A node as the converter to MLIR needs it: op identity (domain, type and the
// opset version the model imports for that domain), value names in order and
// typed attribute getters whose errors already say which node was wrong.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_IMPORT_ONNX_NODE_H
#define FOLIO_IMPORT_ONNX_NODE_H

#include "compiler/Import/ONNX/Attribute.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace folio::onnx {

/// The spelling of the default ONNX domain. The loader rewrites the empty
/// domain to this, so that one string identifies the standard ops.
inline constexpr llvm::StringLiteral kDefaultDomain = "ai.onnx";
/// ONNX Runtime's contrib ops (GroupQueryAttention, SkipSimplifiedLayerNorm).
inline constexpr llvm::StringLiteral kMicrosoftDomain = "com.microsoft";

class Node {
public:
  Node(unsigned index, std::string name, std::string opType, std::string domain,
       int64_t opsetVersion, std::vector<std::string> inputs,
       std::vector<std::string> outputs, std::vector<Attribute> attributes);

  /// Position in the graph's (topologically sorted) node list.
  unsigned getIndex() const { return index; }
  /// May be empty: ONNX does not require node names.
  llvm::StringRef getName() const { return name; }
  llvm::StringRef getOpType() const { return opType; }
  /// Never empty: "" in the file is reported as kDefaultDomain.
  llvm::StringRef getDomain() const { return domain; }
  bool isDefaultDomain() const { return domain == kDefaultDomain; }
  /// The opset version the model imports for this node's domain.
  int64_t getOpsetVersion() const { return opsetVersion; }

  /// Input names in order; an empty name is an omitted optional input.
  llvm::ArrayRef<std::string> getInputs() const { return inputs; }
  /// Output names in order; an empty name is an omitted optional output.
  llvm::ArrayRef<std::string> getOutputs() const { return outputs; }
  /// True if input `i` is present (listed and not omitted).
  bool hasInput(unsigned i) const {
    return i < inputs.size() && !inputs[i].empty();
  }
  /// True if output `i` is present (listed and not omitted).
  bool hasOutput(unsigned i) const {
    return i < outputs.size() && !outputs[i].empty();
  }

  llvm::ArrayRef<Attribute> getAttributes() const { return attributes; }
  /// nullptr when the node has no attribute of that name.
  const Attribute *findAttribute(llvm::StringRef attrName) const;

  /// Typed attribute getters. The one-argument forms require the attribute;
  /// the forms with a default return it when the attribute is absent. Both
  /// fail when the attribute has another type (ONNX never converts).
  llvm::Expected<int64_t> getInt(llvm::StringRef attrName) const;
  llvm::Expected<int64_t> getInt(llvm::StringRef attrName,
                                 int64_t defaultValue) const;
  llvm::Expected<float> getFloat(llvm::StringRef attrName) const;
  llvm::Expected<float> getFloat(llvm::StringRef attrName,
                                 float defaultValue) const;
  llvm::Expected<std::string> getString(llvm::StringRef attrName) const;
  llvm::Expected<std::string> getString(llvm::StringRef attrName,
                                        llvm::StringRef defaultValue) const;
  llvm::Expected<std::vector<int64_t>> getInts(llvm::StringRef attrName) const;
  llvm::Expected<std::vector<int64_t>>
  getInts(llvm::StringRef attrName, llvm::ArrayRef<int64_t> defaultValue) const;
  llvm::Expected<std::vector<float>> getFloats(llvm::StringRef attrName) const;
  llvm::Expected<std::vector<float>>
  getFloats(llvm::StringRef attrName, llvm::ArrayRef<float> defaultValue) const;
  llvm::Expected<std::vector<std::string>>
  getStrings(llvm::StringRef attrName) const;
  llvm::Expected<std::vector<std::string>>
  getStrings(llvm::StringRef attrName,
             llvm::ArrayRef<std::string> defaultValue) const;
  /// Tensors have no sensible default; the pointer refers into this node.
  llvm::Expected<const TensorData *> getTensor(llvm::StringRef attrName) const;

  /// "node 'name' (#3, ai.onnx Add, opset 17)": the prefix of every message
  /// about this node.
  std::string describe() const;
  /// An error reading "<describe()>: <message>", for importers built on top.
  llvm::Error makeError(const llvm::Twine &message) const;

private:
  unsigned index;
  std::string name;
  std::string opType;
  std::string domain;
  int64_t opsetVersion;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<Attribute> attributes;
};

/// Node::describe() for a node not built yet (the converter's errors).
std::string describeNode(unsigned index, llvm::StringRef name,
                         llvm::StringRef opType, llvm::StringRef domain,
                         int64_t opsetVersion);

} // namespace folio::onnx

#endif // FOLIO_IMPORT_ONNX_NODE_H
