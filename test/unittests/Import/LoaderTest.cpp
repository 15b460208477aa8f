//===- LoaderTest.cpp - Loading whole models and bad files ----------------===//

#include "test/unittests/Import/LoaderTestUtil.h"

#include "llvm/Support/MemoryBuffer.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <fcntl.h>
#include <unistd.h>

using namespace folio::onnx;
using namespace folio::onnx::testing;
using ::testing::HasSubstr;

namespace {

TEST(LoaderTest, LoadsTheHeaderGraphAndShapes) {
  TempDir dir;
  ModelProto proto = makeAddModel();
  auto *meta = proto.add_metadata_props();
  meta->set_key("exporter");
  meta->set_value("folio");
  std::unique_ptr<Model> model = loadOrFail(proto, dir);
  ASSERT_TRUE(model);

  EXPECT_EQ(model->getPath(), dir.file("model.onnx"));
  EXPECT_EQ(model->getIrVersion(), 8);
  EXPECT_EQ(model->getProducerName(), "folio-test");
  EXPECT_EQ(model->getProducerVersion(), "1.0");
  EXPECT_EQ(model->getMetadata().at("exporter"), "folio");
  // The empty domain is reported as ai.onnx, and looked up either way.
  EXPECT_EQ(model->getOpsetImports().count(""), 0u);
  EXPECT_EQ(model->getOpsetImports().at("ai.onnx"), 17);
  EXPECT_EQ(model->getOpsetVersion(""), 17);
  EXPECT_EQ(model->getOpsetVersion("ai.onnx"), 17);
  EXPECT_EQ(model->getOpsetVersion("com.microsoft"), std::nullopt);
  EXPECT_EQ(model->getNumMappedFiles(), 0u);

  const Graph &graph = model->getGraph();
  EXPECT_EQ(graph.getName(), "test");
  ASSERT_EQ(graph.getInputs().size(), 1u);
  const ValueInfo &x = graph.getInputs()[0];
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.elementType, ElementType::Float);
  ASSERT_TRUE(x.shape);
  ASSERT_EQ(x.shape->size(), 2u);
  EXPECT_TRUE((*x.shape)[0].isSymbolic());
  EXPECT_EQ((*x.shape)[0].getSymbol(), "batch");
  EXPECT_TRUE((*x.shape)[1].isFixed());
  EXPECT_EQ((*x.shape)[1].getValue(), 4);
  EXPECT_EQ(formatShape(x.shape), "[batch, 4]");

  ASSERT_EQ(graph.getNodes().size(), 1u);
  const Node &add = graph.getNodes()[0];
  EXPECT_EQ(add.getName(), "add");
  EXPECT_EQ(add.getOpType(), "Add");
  EXPECT_EQ(add.getDomain(), "ai.onnx");
  EXPECT_TRUE(add.isDefaultDomain());
  EXPECT_EQ(add.getOpsetVersion(), 17);
  EXPECT_EQ(add.getIndex(), 0u);
  EXPECT_EQ(add.describe(), "node 'add' (#0, ai.onnx Add, opset 17)");

  EXPECT_EQ(graph.findProducer("y"), &add);
  EXPECT_EQ(graph.findProducer("x"), nullptr);
  EXPECT_EQ(graph.findProducer("w"), nullptr);
  ASSERT_NE(graph.findInitializer("w"), nullptr);
  EXPECT_EQ(graph.findInitializer("x"), nullptr);
  ASSERT_NE(graph.findValueInfo("y"), nullptr);
  EXPECT_EQ(graph.findValueInfo("y")->elementType, ElementType::Float);
}

TEST(LoaderTest, KeepsUnknownAndUnrankedShapesAndValueInfoHints) {
  TempDir dir;
  ModelProto proto = makeModel();
  GraphProto &graph = *proto.mutable_graph();
  addInput(graph, "x", TensorProto::FLOAT16, {DimSpec(), "seq", 0});
  ValueInfoProto *unranked = graph.add_input();
  unranked->set_name("u");
  unranked->mutable_type()->mutable_tensor_type()->set_elem_type(
      TensorProto::INT64);
  addNode(graph, "Identity", {"x"}, {"mid"});
  addNode(graph, "Identity", {"mid"}, {"y"});
  addValueInfo(graph, "mid", TensorProto::FLOAT16, {7});
  // A non-tensor hint is dropped, not an error: value_info is advisory.
  ValueInfoProto *sequence = graph.add_value_info();
  sequence->set_name("seqhint");
  sequence->mutable_type()->mutable_sequence_type();
  addOutput(graph, "y", TensorProto::FLOAT16, {});
  std::unique_ptr<Model> model = loadOrFail(proto, dir);
  ASSERT_TRUE(model);

  const Graph &g = model->getGraph();
  ASSERT_EQ(g.getInputs().size(), 2u);
  const ValueInfo &x = g.getInputs()[0];
  EXPECT_EQ(x.elementType, ElementType::Float16);
  EXPECT_TRUE((*x.shape)[0].isUnknown());
  EXPECT_EQ((*x.shape)[1], Dim::symbolic("seq"));
  EXPECT_EQ((*x.shape)[2], Dim::fixed(0));
  EXPECT_EQ(formatShape(x.shape), "[?, seq, 0]");
  EXPECT_FALSE(g.getInputs()[1].shape.has_value());
  EXPECT_EQ(formatShape(g.getInputs()[1].shape), "<unranked>");
  // A scalar output has a shape of rank 0, not an unknown one.
  ASSERT_TRUE(g.getOutputs()[0].shape);
  EXPECT_TRUE(g.getOutputs()[0].shape->empty());
  ASSERT_EQ(g.getValueInfos().size(), 1u);
  ASSERT_NE(g.findValueInfo("mid"), nullptr);
  EXPECT_EQ(formatShape(g.findValueInfo("mid")->shape), "[7]");
  EXPECT_EQ(g.findValueInfo("seqhint"), nullptr);
}

TEST(LoaderTest, InitializersListedAsInputsAreWeightsNotInputs) {
  TempDir dir;
  ModelProto proto = makeAddModel();
  // Old exporters (keep_initializers_as_inputs) list every weight as input.
  addInput(*proto.mutable_graph(), "w", TensorProto::FLOAT, {4});
  std::unique_ptr<Model> model = loadOrFail(proto, dir);
  ASSERT_TRUE(model);
  ASSERT_EQ(model->getGraph().getInputs().size(), 1u);
  EXPECT_EQ(model->getGraph().getInputs()[0].name, "x");
  EXPECT_NE(model->getGraph().findInitializer("w"), nullptr);
}

TEST(LoaderTest, AcceptsOmittedOptionalInputsAndOutputs) {
  TempDir dir;
  ModelProto proto = makeModel();
  GraphProto &graph = *proto.mutable_graph();
  addInput(graph, "x", TensorProto::FLOAT, {2, 3});
  addNode(graph, "Clip", {"x", "", ""}, {"y"});
  addNode(graph, "Dropout", {"y"}, {"z", ""});
  addOutput(graph, "z", TensorProto::FLOAT, {2, 3});
  std::unique_ptr<Model> model = loadOrFail(proto, dir);
  ASSERT_TRUE(model);
  const Node &clip = model->getGraph().getNodes()[0];
  EXPECT_TRUE(clip.hasInput(0));
  EXPECT_FALSE(clip.hasInput(1));
  EXPECT_FALSE(clip.hasInput(2));
  EXPECT_FALSE(clip.hasInput(3));
  const Node &dropout = model->getGraph().getNodes()[1];
  EXPECT_TRUE(dropout.hasOutput(0));
  EXPECT_FALSE(dropout.hasOutput(1));
}

TEST(LoaderTest, AcceptsMicrosoftDomainAndOpset23) {
  TempDir dir;
  ModelProto proto = makeModel(23);
  auto *ms = proto.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  GraphProto &graph = *proto.mutable_graph();
  addInput(graph, "x", TensorProto::FLOAT, {2, 8});
  addInitializer(graph, makeFloatTensor("g", {8}, std::vector<float>(8, 1)));
  NodeProto *norm = addNode(graph, "SimplifiedLayerNormalization", {"x", "g"},
                            {"y"}, "norm", "com.microsoft");
  addFloatAttr(*norm, "epsilon", 1e-6f);
  addNode(graph, "RMSNormalization", {"y", "g"}, {"z"}, "rms", "ai.onnx");
  addOutput(graph, "z", TensorProto::FLOAT, {2, 8});
  std::unique_ptr<Model> model = loadOrFail(proto, dir);
  ASSERT_TRUE(model);
  const Node &first = model->getGraph().getNodes()[0];
  EXPECT_EQ(first.getDomain(), "com.microsoft");
  EXPECT_FALSE(first.isDefaultDomain());
  EXPECT_EQ(first.getOpsetVersion(), 1);
  const Node &second = model->getGraph().getNodes()[1];
  EXPECT_TRUE(second.isDefaultDomain());
  EXPECT_EQ(second.getOpsetVersion(), 23);
}

TEST(LoaderTest, UnusedImportsOfOtherDomainsAreAccepted) {
  TempDir dir;
  ModelProto proto = makeAddModel();
  auto *ml = proto.add_opset_import();
  ml->set_domain("ai.onnx.ml");
  ml->set_version(3);
  std::unique_ptr<Model> model = loadOrFail(proto, dir);
  ASSERT_TRUE(model);
  EXPECT_EQ(model->getOpsetVersion("ai.onnx.ml"), 3);
}

TEST(LoaderTest, LoadsFromABufferWithoutTouchingTheFileSystem) {
  std::string bytes;
  ASSERT_TRUE(makeAddModel().SerializeToString(&bytes));
  llvm::MemoryBufferRef buffer(bytes, "in-memory.onnx");
  llvm::Expected<std::unique_ptr<Model>> model = loadModelFromBuffer(buffer);
  ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
  EXPECT_EQ((*model)->getPath(), "in-memory.onnx");
  // The model owns its tensors: the buffer may go away.
  bytes.assign(bytes.size(), '\0');
  const TensorData *w = (*model)->getGraph().findInitializer("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->getNumElements(), 4);
}

TEST(LoaderTest, MissingFileIsAnError) {
  TempDir dir;
  std::string message = errorOf(loadModel(dir.file("absent.onnx")));
  EXPECT_THAT(message, HasSubstr("cannot open model"));
  EXPECT_THAT(message, HasSubstr("absent.onnx"));
  EXPECT_THAT(message, HasSubstr("No such file"));
}

TEST(LoaderTest, DirectoryIsAnError) {
  TempDir dir;
  EXPECT_THAT(errorOf(loadModel(dir.path())), HasSubstr("not a regular file"));
}

TEST(LoaderTest, EmptyFileIsAnError) {
  TempDir dir;
  writeFile(dir.file("empty.onnx"), "");
  std::string message = errorOf(loadModel(dir.file("empty.onnx")));
  EXPECT_THAT(message, HasSubstr("empty.onnx' is empty, not an ONNX model"));
  EXPECT_THAT(errorOf(loadModelFromBuffer(llvm::MemoryBufferRef("", "buf"))),
              HasSubstr("'buf' is empty"));
}

TEST(LoaderTest, GarbageIsNotAProtobuf) {
  TempDir dir;
  // 0xff is an invalid protobuf tag (field 31, wire type 7).
  writeFile(dir.file("junk.onnx"), std::string(64, '\xff'));
  EXPECT_THAT(errorOf(loadModel(dir.file("junk.onnx"))),
              HasSubstr("does not parse as a protobuf ModelProto"));
}

TEST(LoaderTest, AProtobufWithoutGraphIsNotOnnx) {
  // A text file often parses as a protobuf of unknown fields.
  std::string text = "hello: world";
  std::string message =
      errorOf(loadModelFromBuffer(llvm::MemoryBufferRef(text, "notes.txt")));
  EXPECT_THAT(message, HasSubstr("notes.txt"));
  EXPECT_THAT(message, HasSubstr("is not an ONNX model"));

  ModelProto noGraph = makeModel();
  noGraph.clear_graph();
  EXPECT_THAT(loadError(noGraph), HasSubstr("is not an ONNX model: it has "
                                            "no graph"));
}

TEST(LoaderTest, ModelOver2GiBIsRefusedWithAHint) {
  TempDir dir;
  std::string path = dir.file("huge.onnx");
  int fd = ::open(path.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  // Sparse: no disk space is used.
  ASSERT_EQ(::ftruncate(fd, (int64_t(1) << 31) + 16), 0);
  ::close(fd);
  std::string message = errorOf(loadModel(path));
  EXPECT_THAT(message, HasSubstr("limited to 2 GiB"));
  EXPECT_THAT(message, HasSubstr("save_as_external_data"));
}

TEST(LoaderTest, TruncatedFilesNeverCrash) {
  // A model with every kind of payload, so that cuts land inside strings,
  // packed fields, nested messages and varints.
  ModelProto proto = makeAddModel();
  GraphProto &graph = *proto.mutable_graph();
  addInitializer(graph, makeRawTensor("r", TensorProto::INT64, {2},
                                      toBytes<int64_t>({1, -1})));
  NodeProto *node = addNode(graph, "Reshape", {"y", "r"}, {"z"}, "reshape");
  addIntAttr(*node, "allowzero", 0);
  addStringsAttr(*node, "tags", {"a", "bc"});
  addFloatsAttr(*node, "scales", {0.5f, 2.0f});
  addOutput(graph, "z", TensorProto::FLOAT, {DimSpec(), DimSpec()});
  std::string bytes;
  ASSERT_TRUE(proto.SerializeToString(&bytes));

  size_t loaded = 0, failed = 0;
  for (size_t length = 0; length <= bytes.size(); ++length) {
    // A fresh copy of exactly `length` bytes so that ASan sees any overread.
    std::unique_ptr<llvm::MemoryBuffer> cut =
        llvm::MemoryBuffer::getMemBufferCopy(bytes.substr(0, length), "cut");
    llvm::Expected<std::unique_ptr<Model>> model =
        loadModelFromBuffer(cut->getMemBufferRef());
    if (model) {
      ++loaded;
    } else {
      std::string message = llvm::toString(model.takeError());
      EXPECT_THAT(message, HasSubstr("cut")) << "at length " << length;
      ++failed;
    }
  }
  // Only the complete file is a valid model here: every cut drops the
  // graph outputs, the opset import or part of a node.
  EXPECT_EQ(loaded, 1u);
  EXPECT_EQ(failed, bytes.size());
}

} // namespace
