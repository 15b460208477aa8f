//===- AttributeTest.cpp - Node attributes and their typed getters --------===//

#include "test/unittests/Import/LoaderTestUtil.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace folio::onnx;
using namespace folio::onnx::testing;
using ::testing::HasSubstr;

namespace {

/// A model with one node "n" (op `opType`) whose attributes `fill` adds.
template <typename Fill>
ModelProto modelWithNode(Fill fill, const std::string &opType = "Custom") {
  ModelProto proto = makeModel();
  GraphProto &graph = *proto.mutable_graph();
  addInput(graph, "x", TensorProto::FLOAT, {2});
  NodeProto *node = addNode(graph, opType, {"x"}, {"y"}, "n");
  fill(*node);
  addOutput(graph, "y", TensorProto::FLOAT, {2});
  return proto;
}

class AttributeTest : public ::testing::Test {
protected:
  void SetUp() override {
    ModelProto proto = modelWithNode([](NodeProto &node) {
      addIntAttr(node, "axis", -1);
      addFloatAttr(node, "epsilon", 1e-5f);
      addStringAttr(node, "mode", "linear");
      addIntsAttr(node, "perm", {0, 2, 1});
      addFloatsAttr(node, "scales", {0.5f, 2.0f});
      addStringsAttr(node, "names", {"a", "b"});
      TensorProto value;
      value.set_data_type(TensorProto::INT64);
      value.add_dims(2);
      value.add_int64_data(3);
      value.add_int64_data(-1);
      addTensorAttr(node, "value", value);
    });
    model = loadOrFail(proto, dir);
    ASSERT_TRUE(model);
    node = &model->getGraph().getNodes()[0];
  }

  TempDir dir;
  std::unique_ptr<Model> model;
  const Node *node = nullptr;
};

TEST_F(AttributeTest, EveryKindIsConverted) {
  ASSERT_EQ(node->getAttributes().size(), 7u);
  const Attribute *axis = node->findAttribute("axis");
  ASSERT_NE(axis, nullptr);
  EXPECT_EQ(axis->getKind(), Attribute::Kind::Int);
  EXPECT_EQ(axis->getInt(), -1);
  EXPECT_EQ(node->findAttribute("epsilon")->getKind(), Attribute::Kind::Float);
  EXPECT_EQ(node->findAttribute("mode")->getString(), "linear");
  EXPECT_EQ(node->findAttribute("perm")->getInts(),
            llvm::ArrayRef<int64_t>({0, 2, 1}));
  EXPECT_EQ(node->findAttribute("scales")->getFloats(),
            llvm::ArrayRef<float>({0.5f, 2.0f}));
  EXPECT_EQ(node->findAttribute("names")->getStrings().size(), 2u);
  const Attribute *value = node->findAttribute("value");
  EXPECT_EQ(value->getKind(), Attribute::Kind::Tensor);
  EXPECT_EQ(value->getTensor().getElementType(), ElementType::Int64);
  EXPECT_EQ(node->findAttribute("missing"), nullptr);
  EXPECT_EQ(getAttributeKindName(Attribute::Kind::Floats), "floats");
}

TEST_F(AttributeTest, GettersReturnValuesAndDefaults) {
  EXPECT_EQ(*node->getInt("axis"), -1);
  EXPECT_EQ(*node->getInt("axis", 7), -1);
  EXPECT_EQ(*node->getInt("absent", 7), 7);
  EXPECT_FLOAT_EQ(*node->getFloat("epsilon"), 1e-5f);
  EXPECT_FLOAT_EQ(*node->getFloat("absent", 0.25f), 0.25f);
  EXPECT_EQ(*node->getString("mode"), "linear");
  EXPECT_EQ(*node->getString("absent", "half"), "half");
  EXPECT_EQ(*node->getInts("perm"), (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(*node->getInts("absent", {4, 5}), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(*node->getFloats("scales"), (std::vector<float>{0.5f, 2.0f}));
  EXPECT_EQ(*node->getFloats("absent", {1.0f}), (std::vector<float>{1.0f}));
  EXPECT_EQ(*node->getStrings("names"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(*node->getStrings("absent", {"z"}),
            (std::vector<std::string>{"z"}));
  llvm::Expected<const TensorData *> value = node->getTensor("value");
  ASSERT_TRUE(bool(value));
  EXPECT_EQ(*(*value)->readIntegers(), (std::vector<int64_t>{3, -1}));
}

TEST_F(AttributeTest, MissingRequiredAttributeNamesNodeAndType) {
  EXPECT_EQ(errorOf(node->getInt("absent")),
            "node 'n' (#0, ai.onnx Custom, opset 17): missing required "
            "attribute 'absent' (int)");
  EXPECT_THAT(errorOf(node->getTensor("absent")),
              HasSubstr("missing required attribute 'absent' (tensor)"));
  EXPECT_THAT(errorOf(node->getStrings("absent")),
              HasSubstr("missing required attribute 'absent' (strings)"));
}

TEST_F(AttributeTest, WrongTypeIsAnErrorEvenWithADefault) {
  EXPECT_EQ(errorOf(node->getFloat("axis", 1.0f)),
            "node 'n' (#0, ai.onnx Custom, opset 17): attribute 'axis' is of "
            "type int, expected float");
  EXPECT_THAT(errorOf(node->getInt("epsilon")),
              HasSubstr("attribute 'epsilon' is of type float, expected int"));
  EXPECT_THAT(errorOf(node->getInts("axis", {})),
              HasSubstr("attribute 'axis' is of type int, expected ints"));
  EXPECT_THAT(errorOf(node->getString("perm")),
              HasSubstr("attribute 'perm' is of type ints, expected string"));
  EXPECT_THAT(errorOf(node->getFloats("names")),
              HasSubstr("'names' is of type strings, expected floats"));
  EXPECT_THAT(errorOf(node->getStrings("mode")),
              HasSubstr("'mode' is of type string, expected strings"));
  EXPECT_THAT(errorOf(node->getTensor("perm")),
              HasSubstr("'perm' is of type ints, expected tensor"));
}

TEST_F(AttributeTest, NodeErrorsCarryTheNodeDescription) {
  EXPECT_EQ(llvm::toString(node->makeError("unsupported broadcast")),
            "node 'n' (#0, ai.onnx Custom, opset 17): unsupported broadcast");
}

TEST(AttributeErrorTest, SubgraphsAreControlFlow) {
  ModelProto proto = modelWithNode(
      [](NodeProto &node) {
        AttributeProto *attr = node.add_attribute();
        attr->set_name("then_branch");
        attr->set_type(AttributeProto::GRAPH);
        attr->mutable_g()->set_name("then");
      },
      "If");
  std::string message = loadError(proto);
  EXPECT_THAT(message, HasSubstr("node 'n' (#0, ai.onnx If, opset 17): "
                                 "attribute 'then_branch' holds a subgraph: "
                                 "control flow (If, Loop, Scan) is not "
                                 "supported"));

  ModelProto graphs = modelWithNode(
      [](NodeProto &node) {
        AttributeProto *attr = node.add_attribute();
        attr->set_name("bodies");
        attr->set_type(AttributeProto::GRAPHS);
        attr->add_graphs();
      },
      "Scan");
  EXPECT_THAT(loadError(graphs), HasSubstr("control flow"));
}

TEST(AttributeErrorTest, UnsupportedAttributeTypesAreNamed) {
  auto withType = [](AttributeProto::AttributeType type) {
    return modelWithNode([type](NodeProto &node) {
      AttributeProto *attr = node.add_attribute();
      attr->set_name("odd");
      attr->set_type(type);
    });
  };
  EXPECT_THAT(loadError(withType(AttributeProto::SPARSE_TENSOR)),
              HasSubstr("attribute 'odd' has type sparse_tensor, which is not "
                        "supported; supported: int, float, string, tensor, "
                        "ints, floats, strings"));
  EXPECT_THAT(loadError(withType(AttributeProto::TENSORS)),
              HasSubstr("has type tensors, which is not supported"));
  EXPECT_THAT(loadError(withType(AttributeProto::TYPE_PROTO)),
              HasSubstr("has type type_proto, which is not supported"));
  EXPECT_THAT(loadError(withType(AttributeProto::UNDEFINED)),
              HasSubstr("node 'n' (#0, ai.onnx Custom, opset 17): attribute "
                        "'odd' has no type"));
}

TEST(AttributeErrorTest, MalformedAttributesAreRefused) {
  EXPECT_THAT(loadError(modelWithNode([](NodeProto &node) {
                AttributeProto *attr = addIntAttr(node, "alpha", 1);
                attr->set_ref_attr_name("outer_alpha");
              })),
              HasSubstr("attribute 'alpha' refers to function attribute "
                        "'outer_alpha'; references are only valid inside "
                        "functions"));
  EXPECT_THAT(loadError(modelWithNode([](NodeProto &node) {
                addIntAttr(node, "axis", 1);
                addIntAttr(node, "axis", 2);
              })),
              HasSubstr("attribute 'axis' appears twice"));
  EXPECT_THAT(loadError(modelWithNode(
                  [](NodeProto &node) { addIntAttr(node, "", 1); })),
              HasSubstr("an attribute has no name"));
}

TEST(AttributeErrorTest, BadTensorAttributeNamesNodeAndAttribute) {
  ModelProto proto = modelWithNode(
      [](NodeProto &node) {
        addTensorAttr(node, "value",
                      makeRawTensor("", TensorProto::FLOAT, {3}, "abc"));
      },
      "Constant");
  EXPECT_THAT(loadError(proto),
              HasSubstr("node 'n' (#0, ai.onnx Constant, opset 17): tensor "
                        "of attribute 'value': raw_data holds 3 bytes, but "
                        "dims [3] of float need 12"));
}

} // namespace
