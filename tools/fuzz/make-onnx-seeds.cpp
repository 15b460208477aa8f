//===- make-onnx-seeds.cpp - Seed models for the ONNX loader fuzzer -------===//
//
// Writes a few valid models that together reach every storage form and
// attribute kind, so the fuzzer starts from deep inside the loader instead of
// discovering protobuf framing from nothing. Usage: make-onnx-seeds <dir>.
//
//===----------------------------------------------------------------------===//

#include "test/unittests/Import/ModelBuilder.h"

#include <cstdio>
#include <string>

using namespace folio::onnx::testing;

namespace {

ModelProto attributesModel() {
  ModelProto model = makeModel(17);
  GraphProto &graph = *model.mutable_graph();
  addInput(graph, "x", TensorProto::FLOAT16, {"batch", "seq", 8});
  addInitializer(graph, makeRawTensor("shape", TensorProto::INT64, {2},
                                      toBytes<int64_t>({0, -1})));
  TensorProto bf16;
  bf16.set_name("scale");
  bf16.set_data_type(TensorProto::BFLOAT16);
  bf16.add_dims(2);
  bf16.add_int32_data(0x3f80);
  bf16.add_int32_data(0x4000);
  addInitializer(graph, bf16);
  NodeProto *reshape = addNode(graph, "Reshape", {"x", "shape"}, {"r"}, "r");
  addIntAttr(*reshape, "allowzero", 0);
  NodeProto *constant = addNode(graph, "Constant", {}, {"c"}, "c");
  addTensorAttr(*constant, "value", makeFloatTensor("", {2}, {1.0f, 2.0f}));
  NodeProto *custom = addNode(graph, "Clip", {"r", "", ""}, {"y"}, "clip");
  addFloatAttr(*custom, "alpha", 0.5f);
  addStringAttr(*custom, "mode", "half");
  addIntsAttr(*custom, "perm", {0, 2, 1});
  addFloatsAttr(*custom, "scales", {1.0f, 0.25f});
  addStringsAttr(*custom, "names", {"a", "b"});
  addValueInfo(graph, "r", TensorProto::FLOAT16, {DimSpec(), 8});
  addOutput(graph, "y", TensorProto::FLOAT16, {"batch", DimSpec()});
  addOutput(graph, "c", TensorProto::FLOAT, {2});
  return model;
}

ModelProto externalModel() {
  ModelProto model = makeModel(23);
  auto *ms = model.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  GraphProto &graph = *model.mutable_graph();
  addInput(graph, "x", TensorProto::FLOAT, {"batch", 16});
  addInitializer(graph, makeExternalTensor("w", TensorProto::FLOAT, {16, 16},
                                           "weights.bin", 1024, 1024));
  addInitializer(graph, makeExternalTensor("g", TensorProto::FLOAT, {16},
                                           "weights.bin", 0));
  addNode(graph, "MatMul", {"x", "w"}, {"h"}, "proj");
  NodeProto *norm = addNode(graph, "SimplifiedLayerNormalization", {"h", "g"},
                            {"y"}, "norm", "com.microsoft");
  addFloatAttr(*norm, "epsilon", 1e-6f);
  addOutput(graph, "y", TensorProto::FLOAT, {"batch", 16});
  return model;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <output-dir>\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1];
  writeModel(makeAddModel(), dir + "/add.onnx");
  writeModel(attributesModel(), dir + "/attributes.onnx");
  writeModel(externalModel(), dir + "/external.onnx");
  return 0;
}
