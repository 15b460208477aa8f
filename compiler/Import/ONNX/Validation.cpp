//===- Validation.cpp - Model-level checks of a loaded model --------------===//

#include "compiler/Import/ONNX/Validation.h"

#include "compiler/Import/ONNX/ErrorUtil.h"
#include "compiler/Import/ONNX/Loader.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

#include <deque>
#include <optional>

namespace folio::onnx {
namespace {

std::string supportedDomains() {
  return (llvm::Twine(kDefaultDomain) + " (opsets " +
          llvm::Twine(kMinDefaultOpset) + " to " +
          llvm::Twine(kMaxDefaultOpset) + "), " + kMicrosoftDomain +
          " (any version)")
      .str();
}

llvm::Error checkDomain(const Node &node, const ModelHeader &header,
                        const LocalFunctionSet &localFunctions) {
  llvm::StringRef domain = node.getDomain();
  if (!header.opsetImports.count(domain.str()))
    return node.makeError("domain '" + domain +
                          "' is not imported by the model (opset_import)");
  if (domain == kDefaultDomain || domain == kMicrosoftDomain)
    return llvm::Error::success();
  if (localFunctions.count({domain.str(), node.getOpType().str()}))
    return node.makeError("calls the model-local function " + domain + "." +
                          node.getOpType() +
                          "; functions are not supported: inline them first "
                          "(onnx.inliner.inline_local_functions)");
  return node.makeError(
      "domain '" + domain +
      "' is not supported; supported domains: " + supportedDomains());
}

/// What produces each value, as text for "already produced by ..." errors.
class Producers {
public:
  /// False if `value` already had a producer.
  bool add(llvm::StringRef value, std::string producer) {
    return producers.try_emplace(value, std::move(producer)).second;
  }
  const std::string *find(llvm::StringRef value) const {
    auto it = producers.find(value);
    return it == producers.end() ? nullptr : &it->second;
  }

private:
  llvm::StringMap<std::string> producers;
};

/// When `node` consumes a value of the later node `producer`: the nodes of
/// a cycle through both, in dataflow order starting at `node` ("node 'a'
/// (#0, ai.onnx Add, opset 17) -> node 'b' (#1, …) -> node 'a'"), if `producer`
/// depends on `node`; nullopt if it does not (the graph is merely unsorted).
/// Breadth-first, so the shortest such cycle, and no recursion on deep graphs.
std::optional<std::string>
findCycle(const Node &node, const Node &producer,
          const llvm::StringMap<const Node *> &allProducers) {
  // parent[n]: the node whose input n produces, one step nearer `producer`.
  llvm::DenseMap<const Node *, const Node *> parent;
  std::deque<const Node *> queue{&producer};
  parent[&producer] = nullptr;
  while (!queue.empty()) {
    const Node *current = queue.front();
    queue.pop_front();
    for (const std::string &input : current->getInputs()) {
      const Node *source = input.empty() ? nullptr : allProducers.lookup(input);
      if (!source || parent.count(source))
        continue;
      parent[source] = current;
      if (source != &node) {
        queue.push_back(source);
        continue;
      }
      // node -> parent[node] -> ... -> producer -> node.
      std::string path;
      for (const Node *n = &node; n; n = parent.lookup(n))
        path += (path.empty() ? "" : " -> ") + n->describe();
      std::string again = node.getName().empty()
                              ? "#" + std::to_string(node.getIndex())
                              : "'" + node.getName().str() + "'";
      return path + " -> node " + again;
    }
  }
  return std::nullopt;
}

} // namespace

llvm::Error checkVersions(const ModelHeader &header) {
  if (header.irVersion < kMinIrVersion)
    return makeError("IR version " + llvm::Twine(header.irVersion) +
                     " is too old; Folio needs IR version " +
                     llvm::Twine(kMinIrVersion) +
                     " or newer (ONNX 1.8, opset 13): re-export the model "
                     "with a newer exporter");
  for (const auto &[domain, version] : header.opsetImports)
    if (version < 1)
      return makeError("opset_import of domain '" + domain +
                       "' has invalid version " + llvm::Twine(version));
  auto it = header.opsetImports.find(kDefaultDomain.str());
  if (it == header.opsetImports.end())
    return makeError("the model imports no " + kDefaultDomain +
                     " opset (opset_import); Folio supports " + kDefaultDomain +
                     " opsets " + llvm::Twine(kMinDefaultOpset) + " to " +
                     llvm::Twine(kMaxDefaultOpset));
  if (it->second < kMinDefaultOpset)
    return makeError(
        kDefaultDomain + " opset " + llvm::Twine(it->second) +
        " is too old; Folio supports opsets " + llvm::Twine(kMinDefaultOpset) +
        " to " + llvm::Twine(kMaxDefaultOpset) +
        ": re-export with opset_version >= " + llvm::Twine(kMinDefaultOpset) +
        " or convert with onnx.version_converter");
  if (it->second > kMaxDefaultOpset)
    return makeError(kDefaultDomain + " opset " + llvm::Twine(it->second) +
                     " is newer than Folio supports (opsets " +
                     llvm::Twine(kMinDefaultOpset) + " to " +
                     llvm::Twine(kMaxDefaultOpset) + ")");
  return llvm::Error::success();
}

llvm::Error checkGraph(const Graph &graph, const ModelHeader &header,
                       const LocalFunctionSet &localFunctions) {
  Producers producers;
  for (const ValueInfo &input : graph.getInputs()) {
    if (input.name.empty())
      return makeError("a graph input has an empty name");
    if (!producers.add(input.name, "graph input '" + input.name + "'"))
      return makeError("graph input '" + input.name + "' is listed twice");
  }
  for (const TensorData &tensor : graph.getInitializers()) {
    // Initializers that are also graph inputs were removed from the inputs
    // by the converter, so a clash here is two initializers.
    if (!producers.add(tensor.getName(),
                       "initializer '" + tensor.getName().str() + "'"))
      return makeError("initializer '" + tensor.getName() +
                       "' is defined twice");
  }

  // Later producers, to tell "produced too late" from "never produced".
  llvm::StringMap<const Node *> allProducers;
  for (const Node &node : graph.getNodes())
    for (const std::string &output : node.getOutputs())
      if (!output.empty())
        allProducers.try_emplace(output, &node);

  for (const Node &node : graph.getNodes()) {
    if (llvm::Error error = checkDomain(node, header, localFunctions))
      return error;
    for (auto [i, input] : llvm::enumerate(node.getInputs())) {
      if (input.empty() || producers.find(input))
        continue;
      const Node *later = allProducers.lookup(input);
      if (later == &node)
        return node.makeError("consumes its own output '" + input +
                              "' (input #" + llvm::Twine(i) +
                              "); the graph must be acyclic");
      if (later) {
        if (std::optional<std::string> cycle =
                findCycle(node, *later, allProducers))
          return makeError("graph has a cycle: " + *cycle +
                           "; the graph must be acyclic");
      }
      if (later)
        return node.makeError("input #" + llvm::Twine(i) + " '" + input +
                              "' is produced only by a later " +
                              later->describe() +
                              "; the nodes must be topologically sorted");
      return node.makeError("input #" + llvm::Twine(i) + " '" + input +
                            "' is not produced by any graph input, "
                            "initializer or earlier node");
    }
    for (const std::string &output : node.getOutputs()) {
      if (output.empty())
        continue;
      if (const std::string *previous = producers.find(output))
        return node.makeError("output '" + output +
                              "' is already produced by " + *previous +
                              "; every value must have one producer");
      producers.add(output, node.describe());
    }
  }

  llvm::StringMap<bool> seenOutputs;
  for (const ValueInfo &output : graph.getOutputs()) {
    if (output.name.empty())
      return makeError("a graph output has an empty name");
    if (!seenOutputs.try_emplace(output.name, true).second)
      return makeError("graph output '" + output.name + "' is listed twice");
    if (!producers.find(output.name))
      return makeError("graph output '" + output.name +
                       "' is not produced by any node, graph input or "
                       "initializer");
  }
  return llvm::Error::success();
}

} // namespace folio::onnx
