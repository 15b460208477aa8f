//===- ModelBuilder.h - Building small ONNX models in C++ -------*- C++ -*-===//
//
// Helpers that fill the generated protobuf classes, so that each loader test
// states the one thing it changes about an otherwise valid model. Also used
// by tools/fuzz to write seed models.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TEST_UNITTESTS_IMPORT_MODELBUILDER_H
#define FOLIO_TEST_UNITTESTS_IMPORT_MODELBUILDER_H

#include "compiler/Import/ONNX/folio_onnx.pb.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace folio::onnx::testing {

using folio_onnx::AttributeProto;
using folio_onnx::GraphProto;
using folio_onnx::ModelProto;
using folio_onnx::NodeProto;
using folio_onnx::TensorProto;
using folio_onnx::ValueInfoProto;

/// A dimension in a builder call: a size, or a symbol ("batch"), or
/// DimSpec() for an unknown one.
struct DimSpec {
  DimSpec() = default;
  DimSpec(int64_t value) : value(value), hasValue(true) {}
  DimSpec(int value) : value(value), hasValue(true) {}
  DimSpec(const char *symbol) : symbol(symbol) {}
  int64_t value = 0;
  bool hasValue = false;
  std::string symbol;
};

/// An empty model: IR version 8, ai.onnx opset `opset` (imported as the
/// domain "" as exporters write it), producer "folio-test".
ModelProto makeModel(int64_t opset = 17);

ValueInfoProto *addInput(GraphProto &graph, const std::string &name,
                         int32_t elemType, std::vector<DimSpec> dims);
ValueInfoProto *addOutput(GraphProto &graph, const std::string &name,
                          int32_t elemType, std::vector<DimSpec> dims);
ValueInfoProto *addValueInfo(GraphProto &graph, const std::string &name,
                             int32_t elemType, std::vector<DimSpec> dims);
/// Fills `info` with a tensor type of `elemType` and `dims`.
void setTensorType(ValueInfoProto &info, int32_t elemType,
                   const std::vector<DimSpec> &dims);

NodeProto *addNode(GraphProto &graph, const std::string &opType,
                   std::vector<std::string> inputs,
                   std::vector<std::string> outputs,
                   const std::string &name = "",
                   const std::string &domain = "");

/// A tensor whose bytes are given as raw_data.
TensorProto makeRawTensor(const std::string &name, int32_t dataType,
                          std::vector<int64_t> dims, const std::string &bytes);
/// A float tensor stored in float_data.
TensorProto makeFloatTensor(const std::string &name, std::vector<int64_t> dims,
                            std::vector<float> values);
/// A tensor that refers to `location` at `offset` (and `length`, if >= 0).
TensorProto makeExternalTensor(const std::string &name, int32_t dataType,
                               std::vector<int64_t> dims,
                               const std::string &location, uint64_t offset,
                               int64_t length = -1);
TensorProto *addInitializer(GraphProto &graph, TensorProto tensor);

AttributeProto *addIntAttr(NodeProto &node, const std::string &name,
                           int64_t value);
AttributeProto *addFloatAttr(NodeProto &node, const std::string &name,
                             float value);
AttributeProto *addStringAttr(NodeProto &node, const std::string &name,
                              const std::string &value);
AttributeProto *addIntsAttr(NodeProto &node, const std::string &name,
                            std::vector<int64_t> values);
AttributeProto *addFloatsAttr(NodeProto &node, const std::string &name,
                              std::vector<float> values);
AttributeProto *addStringsAttr(NodeProto &node, const std::string &name,
                               std::vector<std::string> values);
AttributeProto *addTensorAttr(NodeProto &node, const std::string &name,
                              TensorProto value);

/// x[batch, 4] (float) + w[4] (float_data initializer) -> y[batch, 4], one
/// Add node named "add": the smallest model that exercises every part of
/// the loader.
ModelProto makeAddModel();

/// Bytes of `values` as ONNX stores them (little-endian, this host).
template <typename T> std::string toBytes(std::initializer_list<T> values) {
  std::vector<T> copy(values);
  return std::string(reinterpret_cast<const char *>(copy.data()),
                     copy.size() * sizeof(T));
}

/// Serialises `model` to `path` (fails the test on I/O errors).
void writeModel(const ModelProto &model, const std::string &path);
/// Writes `bytes` to `path`.
void writeFile(const std::string &path, const std::string &bytes);

/// A fresh directory under the system temp dir, removed with everything in
/// it when the object dies.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const std::string &path() const { return dir; }
  /// `path()/name`.
  std::string file(const std::string &name) const;

private:
  std::string dir;
};

} // namespace folio::onnx::testing

#endif // FOLIO_TEST_UNITTESTS_IMPORT_MODELBUILDER_H
