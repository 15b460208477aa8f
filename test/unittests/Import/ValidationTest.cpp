//===- ValidationTest.cpp - Versions, domains and dataflow checks ---------===//

#include "test/unittests/Import/LoaderTestUtil.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace folio::onnx;
using namespace folio::onnx::testing;
using ::testing::HasSubstr;

namespace {

TEST(ValidationTest, OldIrVersionIsRefused) {
  ModelProto proto = makeAddModel();
  proto.set_ir_version(6);
  EXPECT_THAT(loadError(proto),
              HasSubstr("model.onnx: IR version 6 is too old; Folio needs IR "
                        "version 7 or newer"));
}

TEST(ValidationTest, DefaultOpsetMustBeImportedAndInRange) {
  ModelProto none = makeAddModel();
  none.clear_opset_import();
  EXPECT_THAT(loadError(none),
              HasSubstr("the model imports no ai.onnx opset (opset_import); "
                        "Folio supports ai.onnx opsets 13 to 23"));

  EXPECT_THAT(loadError(makeModel(11)),
              HasSubstr("ai.onnx opset 11 is too old; Folio supports opsets "
                        "13 to 23: re-export with opset_version >= 13"));
  EXPECT_THAT(loadError(makeModel(24)),
              HasSubstr("ai.onnx opset 24 is newer than Folio supports "
                        "(opsets 13 to 23)"));
}

TEST(ValidationTest, OpsetImportsMustBeWellFormed) {
  ModelProto twice = makeAddModel();
  auto *again = twice.add_opset_import();
  again->set_domain("ai.onnx");
  again->set_version(17);
  EXPECT_THAT(loadError(twice), HasSubstr("opset_import lists domain "
                                          "'ai.onnx' twice"));

  ModelProto zero = makeAddModel();
  auto *ms = zero.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(0);
  EXPECT_THAT(loadError(zero), HasSubstr("opset_import of domain "
                                         "'com.microsoft' has invalid "
                                         "version 0"));
}

TEST(ValidationTest, UnknownDomainsAreNamed) {
  ModelProto proto = makeAddModel();
  auto *custom = proto.add_opset_import();
  custom->set_domain("org.example");
  custom->set_version(1);
  GraphProto &graph = *proto.mutable_graph();
  graph.mutable_node(0)->set_domain("org.example");
  EXPECT_THAT(loadError(proto),
              HasSubstr("node 'add' (#0, org.example Add, opset 1): domain "
                        "'org.example' is not supported; supported domains: "
                        "ai.onnx (opsets 13 to 23), com.microsoft"));
}

TEST(ValidationTest, DomainsMustBeImported) {
  ModelProto proto = makeAddModel();
  proto.mutable_graph()->mutable_node(0)->set_domain("com.microsoft");
  EXPECT_THAT(loadError(proto),
              HasSubstr("node 'add' (#0, com.microsoft Add): domain "
                        "'com.microsoft' is not imported by the model"));
}

TEST(ValidationTest, LocalFunctionsAreExplained) {
  ModelProto proto = makeAddModel();
  auto *lib = proto.add_opset_import();
  lib->set_domain("pkg.torch");
  lib->set_version(1);
  auto *function = proto.add_functions();
  function->set_name("Add");
  function->set_domain("pkg.torch");
  proto.mutable_graph()->mutable_node(0)->set_domain("pkg.torch");
  EXPECT_THAT(loadError(proto),
              HasSubstr("calls the model-local function pkg.torch.Add; "
                        "functions are not supported: inline them first"));
}

TEST(ValidationTest, NodesMustBeTopologicallySorted) {
  ModelProto proto = makeModel();
  GraphProto &graph = *proto.mutable_graph();
  addInput(graph, "x", TensorProto::FLOAT, {2});
  addNode(graph, "Relu", {"h"}, {"y"}, "second");
  addNode(graph, "Neg", {"x"}, {"h"}, "first");
  addOutput(graph, "y", TensorProto::FLOAT, {2});
  EXPECT_THAT(loadError(proto),
              HasSubstr("node 'second' (#0, ai.onnx Relu, opset 17): input "
                        "#0 'h' is produced only by a later node 'first' (#1, "
                        "ai.onnx Neg, opset 17); the nodes must be "
                        "topologically sorted"));
}

TEST(ValidationTest, UnproducedValuesAreNamed) {
  ModelProto proto = makeAddModel();
  proto.mutable_graph()->mutable_node(0)->set_input(1, "bias");
  EXPECT_THAT(loadError(proto),
              HasSubstr("node 'add' (#0, ai.onnx Add, opset 17): input #1 "
                        "'bias' is not produced by any graph input, "
                        "initializer or earlier node"));
}

TEST(ValidationTest, EveryValueHasOneProducer) {
  ModelProto twoNodes = makeAddModel();
  addNode(*twoNodes.mutable_graph(), "Neg", {"x"}, {"y"}, "again");
  EXPECT_THAT(loadError(twoNodes),
              HasSubstr("node 'again' (#1, ai.onnx Neg, opset 17): output 'y' "
                        "is already produced by node 'add' (#0, ai.onnx Add, "
                        "opset 17); every value must have one producer"));

  ModelProto overInput = makeAddModel();
  addNode(*overInput.mutable_graph(), "Neg", {"y"}, {"x"}, "shadow");
  EXPECT_THAT(loadError(overInput),
              HasSubstr("output 'x' is already produced by graph input 'x'"));

  ModelProto overWeight = makeAddModel();
  addNode(*overWeight.mutable_graph(), "Neg", {"y"}, {"w"}, "shadow");
  EXPECT_THAT(loadError(overWeight),
              HasSubstr("output 'w' is already produced by initializer 'w'"));

  ModelProto sameNode = makeAddModel();
  sameNode.mutable_graph()->mutable_node(0)->add_output("y");
  EXPECT_THAT(loadError(sameNode),
              HasSubstr("node 'add' (#0, ai.onnx Add, opset 17): output 'y' "
                        "is already produced by node 'add'"));

  ModelProto twoWeights = makeAddModel();
  addInitializer(*twoWeights.mutable_graph(),
                 makeFloatTensor("w", {1}, {1.0f}));
  EXPECT_THAT(loadError(twoWeights),
              HasSubstr("initializer 'w' is defined twice"));

  ModelProto twoInputs = makeAddModel();
  addInput(*twoInputs.mutable_graph(), "x", TensorProto::FLOAT, {1});
  EXPECT_THAT(loadError(twoInputs),
              HasSubstr("graph input 'x' is listed twice"));
}

TEST(ValidationTest, GraphOutputsMustBeProduced) {
  ModelProto proto = makeAddModel();
  addOutput(*proto.mutable_graph(), "ghost", TensorProto::FLOAT, {});
  EXPECT_THAT(loadError(proto),
              HasSubstr("graph output 'ghost' is not produced by any node, "
                        "graph input or initializer"));

  ModelProto twice = makeAddModel();
  addOutput(*twice.mutable_graph(), "y", TensorProto::FLOAT, {});
  EXPECT_THAT(loadError(twice), HasSubstr("graph output 'y' is listed twice"));

  ModelProto unnamed = makeAddModel();
  addOutput(*unnamed.mutable_graph(), "", TensorProto::FLOAT, {});
  EXPECT_THAT(loadError(unnamed), HasSubstr("a graph output has an empty "
                                            "name"));
}

TEST(ValidationTest, NodesNeedAnOpType) {
  ModelProto proto = makeAddModel();
  proto.mutable_graph()->mutable_node(0)->clear_op_type();
  EXPECT_THAT(loadError(proto),
              HasSubstr("node 'add' (#0, ai.onnx <no op_type>, opset 17): "
                        "node has no op_type"));
}

TEST(ValidationTest, SparseInitializersAreRefused) {
  ModelProto proto = makeAddModel();
  auto *sparse = proto.mutable_graph()->add_sparse_initializer();
  sparse->mutable_values()->set_name("s");
  EXPECT_THAT(loadError(proto),
              HasSubstr("sparse initializer 's' is not supported; store it "
                        "as a dense initializer"));
}

TEST(ValidationTest, GraphValuesMustBeSupportedTensors) {
  ModelProto sequence = makeAddModel();
  ValueInfoProto *input = sequence.mutable_graph()->add_input();
  input->set_name("seq");
  input->mutable_type()->mutable_sequence_type();
  EXPECT_THAT(loadError(sequence),
              HasSubstr("graph input 'seq' is not a tensor (sequence, map, "
                        "optional and sparse values are not supported)"));

  ModelProto untyped = makeAddModel();
  untyped.mutable_graph()->add_output()->set_name("y2");
  EXPECT_THAT(loadError(untyped), HasSubstr("graph output 'y2' has no type"));

  ModelProto strings = makeAddModel();
  addInput(*strings.mutable_graph(), "text", TensorProto::STRING, {1});
  EXPECT_THAT(loadError(strings),
              HasSubstr("graph input 'text' has element type string, which "
                        "is not supported; supported: float, uint8"));

  ModelProto undefined = makeAddModel();
  addInput(*undefined.mutable_graph(), "u", TensorProto::UNDEFINED, {1});
  EXPECT_THAT(loadError(undefined),
              HasSubstr("graph input 'u' has unknown element type 0"));

  ModelProto negative = makeAddModel();
  addInput(*negative.mutable_graph(), "n", TensorProto::FLOAT, {2, -1});
  EXPECT_THAT(loadError(negative),
              HasSubstr("graph input 'n' has negative dimension -1 at index "
                        "1"));

  ModelProto badHint = makeAddModel();
  addValueInfo(*badHint.mutable_graph(), "y", TensorProto::FLOAT, {-2});
  EXPECT_THAT(loadError(badHint),
              HasSubstr("value_info 'y' has negative dimension -2"));
}

TEST(ValidationTest, ElementTypeNamesCoverEveryType) {
  EXPECT_EQ(getSupportedElementTypeNames(),
            "float, uint8, int8, uint16, int16, int32, int64, bool, float16, "
            "double, uint32, uint64, bfloat16, float8e4m3fn, float8e4m3fnuz, "
            "float8e5m2, float8e5m2fnuz, uint4, int4");
  EXPECT_EQ(elementTypeFromOnnx(24), std::nullopt);
  EXPECT_EQ(elementTypeFromOnnx(-1), std::nullopt);
  EXPECT_EQ(elementTypeFromOnnx(23), ElementType::Float4E2M1);
  EXPECT_EQ(getElementByteSize(ElementType::BFloat16), 2u);
  EXPECT_EQ(getElementByteSize(ElementType::Complex64), 0u);
  // Unpacked from ONNX's two per byte when loaded.
  EXPECT_EQ(getElementByteSize(ElementType::Int4), 1u);
  EXPECT_EQ(getElementByteSize(ElementType::Float4E2M1), 0u);
  EXPECT_EQ(getElementTypeName(ElementType::Float8E5M2FNUZ), "float8e5m2fnuz");
}

} // namespace
