//===- Graph.h - An ONNX graph: values, constants and nodes -----*- C++ -*-===//
//
// The main graph of a model after loading: every node's inputs are produced
// by a graph input, an initializer or an earlier node, and every value has
// exactly one producer. Lookups by name are indexed because importers ask for
// the producer or the shape of a value once per operand.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_IMPORT_ONNX_GRAPH_H
#define FOLIO_IMPORT_ONNX_GRAPH_H

#include "compiler/Import/ONNX/ElementType.h"
#include "compiler/Import/ONNX/Node.h"
#include "compiler/Import/ONNX/TensorData.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace folio::onnx {

/// One dimension of a value's shape: a fixed size, a named symbolic size
/// ("batch", "sequence_length") or unknown (neither given).
class Dim {
public:
  static Dim fixed(int64_t value) { return Dim(value, {}); }
  static Dim symbolic(std::string symbol) { return Dim(-1, std::move(symbol)); }
  static Dim unknown() { return Dim(-1, {}); }

  bool isFixed() const { return value >= 0; }
  bool isSymbolic() const { return !symbol.empty(); }
  bool isUnknown() const { return !isFixed() && !isSymbolic(); }
  /// Requires isFixed().
  int64_t getValue() const;
  /// Empty unless isSymbolic().
  llvm::StringRef getSymbol() const { return symbol; }

  bool operator==(const Dim &other) const {
    return value == other.value && symbol == other.symbol;
  }
  bool operator!=(const Dim &other) const { return !(*this == other); }

private:
  Dim(int64_t value, std::string symbol)
      : value(value), symbol(std::move(symbol)) {}
  int64_t value;
  std::string symbol;
};

/// A graph input, output or value_info entry: always a tensor (the loader
/// refuses sequences, maps and optionals).
struct ValueInfo {
  std::string name;
  ElementType elementType = ElementType::Undefined;
  /// nullopt when the rank is unknown (no shape in the file).
  std::optional<std::vector<Dim>> shape;
};

/// "[batch, 4, ?]" ("?" for an unknown dim, "<unranked>" without a shape).
std::string formatShape(const std::optional<std::vector<Dim>> &shape);

class Graph {
public:
  /// `inputs` should not list initializers; the loader drops those (see
  /// docs/onnx-loader.md). Builds the name indexes.
  Graph(std::string name, std::vector<ValueInfo> inputs,
        std::vector<ValueInfo> outputs, std::vector<TensorData> initializers,
        std::vector<ValueInfo> valueInfos, std::vector<Node> nodes);
  // The indexes point into the vectors: moving keeps them valid, copying
  // would not.
  Graph(Graph &&) = default;
  Graph &operator=(Graph &&) = default;
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  llvm::StringRef getName() const { return name; }
  /// The runtime inputs, in order.
  llvm::ArrayRef<ValueInfo> getInputs() const { return inputs; }
  llvm::ArrayRef<ValueInfo> getOutputs() const { return outputs; }
  /// Initializers in file order.
  llvm::ArrayRef<TensorData> getInitializers() const { return initializers; }
  /// The shape hints of intermediate values (`value_info`), in file order.
  llvm::ArrayRef<ValueInfo> getValueInfos() const { return valueInfos; }
  /// Nodes in topological order.
  llvm::ArrayRef<Node> getNodes() const { return nodes; }

  const TensorData *findInitializer(llvm::StringRef valueName) const;
  /// The type and shape known for a value: a graph input or output, or a
  /// value_info hint. nullptr when none is known (initializers carry their
  /// own type and shape; see findInitializer).
  const ValueInfo *findValueInfo(llvm::StringRef valueName) const;
  /// The node that produces `valueName`; nullptr for graph inputs,
  /// initializers and unknown names.
  const Node *findProducer(llvm::StringRef valueName) const;

private:
  std::string name;
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  std::vector<TensorData> initializers;
  std::vector<ValueInfo> valueInfos;
  std::vector<Node> nodes;
  llvm::StringMap<const TensorData *> initializerIndex;
  llvm::StringMap<const ValueInfo *> valueInfoIndex;
  llvm::StringMap<const Node *> producerIndex;
};

} // namespace folio::onnx

#endif // FOLIO_IMPORT_ONNX_GRAPH_H
