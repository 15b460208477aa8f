//===- HostileInputTest.cpp - Hostile models get errors, not crashes ------===//
//
// Models built to break the importer (shapes of 2^62 elements, empty
// constants, cycles, huge input dims) are each refused with one message that
// names what is wrong, or imported correctly; none may crash, abort or read
// out of bounds. Each model is loaded, imported and run through the raise
// phase, as folioc does.
//
//===----------------------------------------------------------------------===//

#include "test/unittests/Import/LoaderTestUtil.h"

#include "compiler/Import/MLIR/ImportONNX.h"
#include "compiler/ONNXOps/ShapeInference.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Registration/RegisterAll.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/raw_ostream.h"
#include "gmock/gmock.h"

#include "gtest/gtest.h"
#include <cmath>
#include <limits>

using namespace folio::onnx;
using namespace folio::onnx::testing;
using ::testing::HasSubstr;

namespace {

constexpr int64_t kPow62 = int64_t(1) << 62;
constexpr int64_t kPow31 = int64_t(1) << 31;

/// Loads `proto`, imports it and runs the raise phase. Returns "" on success,
/// otherwise the errors as folioc prints them ("node '…' (…): message").
/// `ir`, if given, receives the module after the raise phase.
std::string compileError(const ModelProto &proto, std::string *ir = nullptr) {
  TempDir dir;
  llvm::Expected<std::unique_ptr<Model>> loaded = loadProto(proto, dir);
  if (!loaded)
    return llvm::toString(loaded.takeError());
  std::shared_ptr<const Model> model = std::move(*loaded);

  mlir::DialectRegistry registry;
  mlir::folio::registerFolioDialects(registry);
  mlir::MLIRContext context(registry);
  std::string errors;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &diag) {
    if (diag.getSeverity() != mlir::DiagnosticSeverity::Error)
      return mlir::success();
    if (!errors.empty())
      errors += "\n";
    if (auto name = llvm::dyn_cast<mlir::NameLoc>(diag.getLocation()))
      errors += name.getName().getValue().str() + ": ";
    errors += diag.str();
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::folio::importONNXModel(context, model);
  if (!module)
    return errors.empty() ? "import failed" : errors;
  mlir::PassManager pm(&context);
  mlir::folio::FolioPipelineOptions options;
  mlir::folio::buildFolioPipeline(pm, options, mlir::folio::FolioPhase::Raise);
  if (mlir::failed(pm.run(*module)))
    return errors.empty() ? "raise failed" : errors;
  if (ir) {
    llvm::raw_string_ostream os(*ir);
    module->print(os);
  }
  return errors;
}

TensorProto int64Tensor(const std::string &name, std::vector<int64_t> dims,
                        std::vector<int64_t> values) {
  std::string bytes(reinterpret_cast<const char *>(values.data()),
                    values.size() * sizeof(int64_t));
  return makeRawTensor(name, TensorProto::INT64, std::move(dims), bytes);
}

/// A model with one node `op(inputs) -> y` named `name`, inputs given as
/// initializers or graph inputs by the caller.
NodeProto *addOnlyNode(ModelProto &proto, const std::string &op,
                       std::vector<std::string> inputs,
                       const std::string &name) {
  GraphProto &graph = *proto.mutable_graph();
  NodeProto *node = addNode(graph, op, std::move(inputs), {"y"}, name);
  addOutput(graph, "y", TensorProto::FLOAT, {});
  return node;
}

// --- Shapes of 2^62 elements or of huge rank --------------------------------

TEST(HostileInputTest, ExpandToTooManyElementsIsRefused) {
  ModelProto proto = makeModel();
  GraphProto &graph = *proto.mutable_graph();
  addInput(graph, "x", TensorProto::FLOAT, {1});
  addInitializer(graph, int64Tensor("shape", {2}, {kPow31, kPow31}));
  addOnlyNode(proto, "Expand", {"x", "shape"}, "expand");
  EXPECT_EQ(compileError(proto),
            "node 'expand' (#0, ai.onnx Expand, opset 17): Expand: result 0 "
            "would have shape [2147483648, 2147483648], 4611686018427387904 "
            "elements; Folio supports at most 1099511627776 (2^40) elements "
            "per tensor");
}

TEST(HostileInputTest, ExpandToAnOverflowingShapeIsRefused) {
  ModelProto proto = makeModel();
  GraphProto &graph = *proto.mutable_graph();
  addInput(graph, "x", TensorProto::FLOAT, {1});
  addInitializer(graph,
                 int64Tensor("shape", {3}, {kPow31, kPow31, int64_t(4)}));
  addOnlyNode(proto, "Expand", {"x", "shape"}, "expand");
  EXPECT_EQ(compileError(proto),
            "node 'expand' (#0, ai.onnx Expand, opset 17): Expand: result 0 "
            "would have shape [2147483648, 2147483648, 4], more than 2^63 "
            "elements; Folio supports at most 1099511627776 (2^40) elements "
            "per tensor");
}

TEST(HostileInputTest, ShapeVectorsOfHugeLengthAreRefused) {
  // A shape input whose values are unknown but whose length (the result's
  // rank) is 2^62 once aborted in SmallVector; such an input is refused at
  // load, and a merely long one at the node.
  ModelProto huge = makeModel();
  addInput(*huge.mutable_graph(), "x", TensorProto::FLOAT, {1});
  addInput(*huge.mutable_graph(), "shape", TensorProto::INT64, {kPow62});
  addOnlyNode(huge, "Expand", {"x", "shape"}, "expand");
  EXPECT_THAT(compileError(huge),
              HasSubstr("graph input 'shape' has dimension "
                        "4611686018427387904 at index 0, more than Folio "
                        "supports (2^40)"));

  for (const char *op : {"Expand", "Reshape", "ConstantOfShape"}) {
    SCOPED_TRACE(op);
    ModelProto proto = makeModel();
    GraphProto &graph = *proto.mutable_graph();
    addInput(graph, "x", TensorProto::FLOAT, {1});
    addInput(graph, "shape", TensorProto::INT64, {100});
    std::vector<std::string> inputs = {"x", "shape"};
    if (std::string(op) == "ConstantOfShape")
      inputs = {"shape"};
    addOnlyNode(proto, op, inputs, "n");
    EXPECT_EQ(compileError(proto),
              "node 'n' (#0, ai.onnx " + std::string(op) +
                  ", opset 17): " + op +
                  ": shape input has 100 elements, so the result would have "
                  "rank 100; Folio supports ranks up to 64");
  }
}

TEST(HostileInputTest, ConstantOfShapeBoundsItsElementCount) {
  ModelProto proto = makeModel();
  addInitializer(*proto.mutable_graph(),
                 int64Tensor("shape", {2}, {kPow31, kPow31}));
  addOnlyNode(proto, "ConstantOfShape", {"shape"}, "fill");
  EXPECT_THAT(compileError(proto),
              HasSubstr("node 'fill' (#0, ai.onnx ConstantOfShape, opset 17): "
                        "ConstantOfShape: result 0 would have shape "
                        "[2147483648, 2147483648], 4611686018427387904 "
                        "elements"));

  ModelProto negative = makeModel();
  addInitializer(*negative.mutable_graph(), int64Tensor("shape", {2}, {2, -3}));
  addOnlyNode(negative, "ConstantOfShape", {"shape"}, "fill");
  EXPECT_EQ(compileError(negative),
            "node 'fill' (#0, ai.onnx ConstantOfShape, opset 17): "
            "ConstantOfShape: result 0 would have negative dim -3 at index 1 "
            "(shape [2, -3])");
}

TEST(HostileInputTest, ConstantOfShapeKeepsIntegerFillsExact) {
  // The fill went through a double: 2^53 + 1 was tracked as 2^53, and
  // INT64_MAX converted back to int64 out of range (undefined behaviour).
  mlir::MLIRContext context;
  mlir::folio::ONNXShapeInference engine(&context);
  auto i64 = mlir::IntegerType::get(&context, 64);
  auto c = [&](int64_t v) { return mlir::getAffineConstantExpr(v, &context); };
  mlir::folio::ONNXValueFacts shape;
  shape.elementType = i64;
  shape.dims.emplace({c(1)});
  shape.ints.emplace({c(2)});
  for (int64_t fill :
       {(int64_t(1) << 53) + 1, std::numeric_limits<int64_t>::max()}) {
    SCOPED_TRACE(fill);
    auto type = mlir::RankedTensorType::get({1}, i64);
    mlir::NamedAttribute value(
        mlir::StringAttr::get(&context, "value"),
        mlir::DenseElementsAttr::get(type, llvm::ArrayRef<int64_t>{fill}));
    llvm::SmallVector<mlir::folio::ONNXValueFacts> results;
    ASSERT_TRUE(mlir::succeeded(
        engine.inferNode("ai.onnx", "ConstantOfShape", 17,
                         mlir::DictionaryAttr::get(&context, {value}), {&shape},
                         1, mlir::UnknownLoc::get(&context), results)));
    ASSERT_TRUE(results[0].ints);
    EXPECT_EQ(*results[0].ints,
              (llvm::SmallVector<mlir::AffineExpr, 4>{c(fill), c(fill)}));
  }
}

TEST(HostileInputTest, CastOfAnOutOfRangeFloatStaysUnknown) {
  // A tracked float outside int64 was converted by the host's cast
  // (undefined behaviour) into a folded integer.
  mlir::MLIRContext context;
  mlir::folio::ONNXShapeInference engine(&context);
  auto c = [&](int64_t v) { return mlir::getAffineConstantExpr(v, &context); };
  mlir::folio::ONNXValueFacts in;
  in.elementType = mlir::Float32Type::get(&context);
  in.dims.emplace({c(1)});
  mlir::NamedAttribute to(
      mlir::StringAttr::get(&context, "to"),
      mlir::IntegerAttr::get(mlir::IntegerType::get(&context, 64), 7));
  for (double v : {-3.4e38, 9.3e18, std::nan(""), 42.9}) {
    SCOPED_TRACE(v);
    in.floats.emplace({v});
    llvm::SmallVector<mlir::folio::ONNXValueFacts> results;
    ASSERT_TRUE(mlir::succeeded(engine.inferNode(
        "ai.onnx", "Cast", 17, mlir::DictionaryAttr::get(&context, {to}), {&in},
        1, mlir::UnknownLoc::get(&context), results)));
    ASSERT_TRUE(results[0].ints);
    ASSERT_EQ(results[0].ints->size(), 1u);
    if (v == 42.9)
      EXPECT_EQ((*results[0].ints)[0], c(42));
    else
      EXPECT_FALSE((*results[0].ints)[0]);
  }
}

TEST(HostileInputTest, TileBoundsItsElementCount) {
  ModelProto overflow = makeModel();
  addInput(*overflow.mutable_graph(), "x", TensorProto::FLOAT, {1 << 20});
  addInitializer(*overflow.mutable_graph(),
                 int64Tensor("repeats", {1}, {int64_t(1) << 50}));
  addOnlyNode(overflow, "Tile", {"x", "repeats"}, "tile");
  EXPECT_EQ(compileError(overflow),
            "node 'tile' (#0, ai.onnx Tile, opset 17): Tile: dim 0 (1048576) "
            "times repeats[0] (1125899906842624) overflows int64");

  ModelProto large = makeModel();
  addInput(*large.mutable_graph(), "x", TensorProto::FLOAT, {1 << 20});
  addInitializer(*large.mutable_graph(),
                 int64Tensor("repeats", {1}, {int64_t(1) << 30}));
  addOnlyNode(large, "Tile", {"x", "repeats"}, "tile");
  EXPECT_EQ(compileError(large),
            "node 'tile' (#0, ai.onnx Tile, opset 17): Tile: result 0 would "
            "have shape [1125899906842624], 1125899906842624 elements; Folio "
            "supports at most 1099511627776 (2^40) elements per tensor");

  ModelProto negative = makeModel();
  addInput(*negative.mutable_graph(), "x", TensorProto::FLOAT, {4});
  addInitializer(*negative.mutable_graph(), int64Tensor("repeats", {1}, {-2}));
  addOnlyNode(negative, "Tile", {"x", "repeats"}, "tile");
  EXPECT_EQ(compileError(negative),
            "node 'tile' (#0, ai.onnx Tile, opset 17): Tile: repeats[0] is "
            "-2");
}

TEST(HostileInputTest, RangeLengthIsOverflowChecked) {
  auto rangeModel = [](int64_t start, int64_t limit, int64_t delta) {
    ModelProto proto = makeModel();
    GraphProto &graph = *proto.mutable_graph();
    addInitializer(graph, int64Tensor("start", {}, {start}));
    addInitializer(graph, int64Tensor("limit", {}, {limit}));
    addInitializer(graph, int64Tensor("delta", {}, {delta}));
    addOnlyNode(proto, "Range", {"start", "limit", "delta"}, "range");
    return proto;
  };
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(compileError(rangeModel(kMin, kMax, 1)),
            "node 'range' (#0, ai.onnx Range, opset 17): Range: start "
            "-9223372036854775808, limit 9223372036854775807 and delta 1 give "
            "a length that overflows int64");
  EXPECT_EQ(compileError(rangeModel(0, kMin, -1)),
            "node 'range' (#0, ai.onnx Range, opset 17): Range: result 0 "
            "would have shape [9223372036854775807], 9223372036854775807 "
            "elements; Folio supports at most 1099511627776 (2^40) elements "
            "per tensor");
  EXPECT_EQ(compileError(rangeModel(0, kPow62, 1)),
            "node 'range' (#0, ai.onnx Range, opset 17): Range: result 0 "
            "would have shape [4611686018427387904], 4611686018427387904 "
            "elements; Folio supports at most 1099511627776 (2^40) elements "
            "per tensor");
  // An ordinary range still folds.
  std::string ir;
  EXPECT_EQ(compileError(rangeModel(0, 4, 1), &ir), "");
  EXPECT_THAT(ir, HasSubstr("dense<[0, 1, 2, 3]> : tensor<4xi64>"));
}

// --- Elementwise folding with an empty constant -----------------------------

TEST(HostileInputTest, FoldingWithAnEmptyOperandGivesAnEmptyResult) {
  // Element 0 of the empty operand was read (out of bounds) and the result
  // had one element for a shape of none.
  mlir::MLIRContext context;
  mlir::folio::ONNXShapeInference engine(&context);
  auto i64 = mlir::IntegerType::get(&context, 64);
  auto c = [&](int64_t v) { return mlir::getAffineConstantExpr(v, &context); };
  mlir::folio::ONNXValueFacts empty, one;
  empty.elementType = one.elementType = i64;
  empty.dims.emplace({c(0)});
  empty.ints.emplace();
  one.dims.emplace({c(1)});
  one.ints.emplace({c(7)});
  for (const char *op : {"Add", "Mul", "Sub", "Equal"}) {
    SCOPED_TRACE(op);
    llvm::SmallVector<mlir::folio::ONNXValueFacts> results;
    ASSERT_TRUE(mlir::succeeded(engine.inferNode(
        "ai.onnx", op, 17, mlir::DictionaryAttr::get(&context), {&empty, &one},
        1, mlir::UnknownLoc::get(&context), results)));
    ASSERT_TRUE(results[0].dims && results[0].ints);
    EXPECT_EQ(*results[0].dims, (llvm::SmallVector<mlir::AffineExpr, 4>{c(0)}));
    EXPECT_TRUE(results[0].ints->empty());
    // Either order.
    ASSERT_TRUE(mlir::succeeded(engine.inferNode(
        "ai.onnx", op, 17, mlir::DictionaryAttr::get(&context), {&one, &empty},
        1, mlir::UnknownLoc::get(&context), results)));
    ASSERT_TRUE(results[0].ints);
    EXPECT_TRUE(results[0].ints->empty());
  }

  mlir::folio::ONNXValueFacts emptyF, oneF;
  emptyF.elementType = oneF.elementType = mlir::Float32Type::get(&context);
  emptyF.dims.emplace({c(0)});
  emptyF.floats.emplace();
  oneF.dims.emplace({c(1)});
  oneF.floats.emplace({2.0});
  llvm::SmallVector<mlir::folio::ONNXValueFacts> results;
  ASSERT_TRUE(mlir::succeeded(engine.inferNode(
      "ai.onnx", "Add", 17, mlir::DictionaryAttr::get(&context),
      {&emptyF, &oneF}, 1, mlir::UnknownLoc::get(&context), results)));
  ASSERT_TRUE(results[0].floats);
  EXPECT_TRUE(results[0].floats->empty());

  // Mismatched non-broadcastable lengths stay unknown (and are an error).
  mlir::folio::ONNXValueFacts two;
  two.elementType = i64;
  two.dims.emplace({c(2)});
  two.ints.emplace({c(1), c(2)});
  EXPECT_TRUE(mlir::failed(engine.inferNode(
      "ai.onnx", "Add", 17, mlir::DictionaryAttr::get(&context), {&empty, &two},
      1, mlir::UnknownLoc::get(&context), results)));
}

TEST(HostileInputTest, EmptyConstantsFoldEndToEnd) {
  ModelProto proto = makeModel();
  GraphProto &graph = *proto.mutable_graph();
  addInitializer(graph, int64Tensor("empty", {0}, {}));
  addInitializer(graph, int64Tensor("one", {1}, {7}));
  addNode(graph, "Add", {"empty", "one"}, {"y"}, "add");
  addOutput(graph, "y", TensorProto::INT64, {});
  std::string ir;
  EXPECT_EQ(compileError(proto, &ir), "");
  EXPECT_THAT(ir, ::testing::Not(HasSubstr("\"Add\"")));
  EXPECT_THAT(ir, HasSubstr("-> (tensor<0xi64>"));
}

TEST(HostileInputTest, SliceWithEmptyBoundsIsTheIdentity) {
  // starts/ends of length 0 slice nothing; element 0 of them was read.
  ModelProto proto = makeModel();
  GraphProto &graph = *proto.mutable_graph();
  addInitializer(graph, int64Tensor("data", {3}, {4, 5, 6}));
  addInitializer(graph, int64Tensor("starts", {0}, {}));
  addInitializer(graph, int64Tensor("ends", {0}, {}));
  addNode(graph, "Slice", {"data", "starts", "ends"}, {"y"}, "slice");
  addOutput(graph, "y", TensorProto::INT64, {});
  std::string ir;
  EXPECT_EQ(compileError(proto, &ir), "");
  EXPECT_THAT(ir, HasSubstr("-> (tensor<3xi64>"));
}

// --- Cycles
// -------------------------------------------------------------------

TEST(HostileInputTest, NodeConsumingItsOwnOutputIsNamed) {
  ModelProto proto = makeModel();
  GraphProto &graph = *proto.mutable_graph();
  addInput(graph, "x", TensorProto::FLOAT, {2});
  addNode(graph, "Add", {"x", "y"}, {"y"}, "loop");
  addOutput(graph, "y", TensorProto::FLOAT, {2});
  EXPECT_THAT(loadError(proto),
              HasSubstr("node 'loop' (#0, ai.onnx Add, opset 17): consumes "
                        "its own output 'y' (input #1); the graph must be "
                        "acyclic"));
}

TEST(HostileInputTest, LongerCyclesAreNamed) {
  ModelProto proto = makeModel();
  GraphProto &graph = *proto.mutable_graph();
  addInput(graph, "x", TensorProto::FLOAT, {2});
  addNode(graph, "Add", {"x", "c"}, {"a"}, "first");
  addNode(graph, "Relu", {"a"}, {"b"}, "second");
  addNode(graph, "Neg", {"b"}, {"c"}, "third");
  addOutput(graph, "c", TensorProto::FLOAT, {2});
  EXPECT_THAT(loadError(proto),
              HasSubstr("graph has a cycle: node 'first' (#0, ai.onnx Add, "
                        "opset 17) -> node 'second' (#1, ai.onnx Relu, opset "
                        "17) -> node 'third' (#2, ai.onnx Neg, opset 17) -> "
                        "node 'first'; the graph must be acyclic"));

  // Two nodes feeding each other, behind an unrelated first node.
  ModelProto pair = makeModel();
  GraphProto &g = *pair.mutable_graph();
  addInput(g, "x", TensorProto::FLOAT, {2});
  addNode(g, "Relu", {"x"}, {"r"}, "ok");
  addNode(g, "Add", {"r", "q"}, {"p"}, "");
  addNode(g, "Neg", {"p"}, {"q"}, "back");
  addOutput(g, "q", TensorProto::FLOAT, {2});
  EXPECT_THAT(loadError(pair),
              HasSubstr("graph has a cycle: node (#1, ai.onnx Add, opset 17) "
                        "-> node 'back' (#2, ai.onnx Neg, opset 17) -> node "
                        "#1; the graph must be acyclic"));

  // Merely unsorted is still reported as such.
  ModelProto unsorted = makeModel();
  GraphProto &u = *unsorted.mutable_graph();
  addInput(u, "x", TensorProto::FLOAT, {2});
  addNode(u, "Relu", {"h"}, {"y"}, "second");
  addNode(u, "Neg", {"x"}, {"h"}, "first");
  addOutput(u, "y", TensorProto::FLOAT, {2});
  EXPECT_THAT(loadError(unsorted),
              HasSubstr("the nodes must be topologically sorted"));
}

// --- Huge graph input dims
// ----------------------------------------------------

TEST(HostileInputTest, HugeInputDimsAreRefusedAtLoad) {
  // Once: "Reshape: shape element 1 is -9223372036854775808" from a Shape
  // of [2, 2^62] times 2.
  ModelProto proto = makeModel();
  GraphProto &graph = *proto.mutable_graph();
  addInput(graph, "x", TensorProto::FLOAT, {2, kPow62});
  addInitializer(graph, int64Tensor("two", {1}, {2}));
  addNode(graph, "Shape", {"x"}, {"s"}, "shape");
  addNode(graph, "Mul", {"s", "two"}, {"s2"}, "mul");
  addNode(graph, "Reshape", {"x", "s2"}, {"y"}, "reshape");
  addOutput(graph, "y", TensorProto::FLOAT, {});
  EXPECT_THAT(compileError(proto),
              HasSubstr("graph input 'x' has dimension 4611686018427387904 "
                        "at index 1, more than Folio supports (2^40)"));

  // Each dim in bounds, the product not (it once wrapped to 0 elements).
  ModelProto product = makeModel();
  addInput(*product.mutable_graph(), "x", TensorProto::FLOAT,
           {int64_t(1) << 30, int64_t(1) << 30, 4});
  EXPECT_THAT(loadError(product),
              HasSubstr("graph input 'x' has more than 2^40 elements in its "
                        "fixed dimensions (up to index 1)"));

  // Outputs and value_info hints are held to the same bound.
  ModelProto output = makeAddModel();
  output.mutable_graph()
      ->mutable_output(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(1)
      ->set_dim_value(kPow62);
  EXPECT_THAT(loadError(output),
              HasSubstr("graph output 'y' has dimension 4611686018427387904 "
                        "at index 1, more than Folio supports (2^40)"));

  // The largest allowed dim loads.
  ModelProto edge = makeModel();
  addInput(*edge.mutable_graph(), "x", TensorProto::FLOAT,
           {int64_t(1) << 40, 1});
  addNode(*edge.mutable_graph(), "Relu", {"x"}, {"y"}, "relu");
  addOutput(*edge.mutable_graph(), "y", TensorProto::FLOAT, {});
  EXPECT_EQ(compileError(edge), "");
}

// --- Fused norms over inputs of unknown rank -------------------------------

TEST(HostileInputTest, FusedNormsOfUnknownRankStayONNXNodes) {
  // Once (the ONNX graph fuzzer): the raise built folio.rms_norm on a
  // tensor<*xf32>, an assertion in a debug build and an op the verifier
  // refused in a release one. Such a node stays an ONNX node.
  ModelProto proto = makeModel();
  folio_onnx::OperatorSetIdProto *ms = proto.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  GraphProto &graph = *proto.mutable_graph();
  for (const char *name : {"x", "skip"})
    addInput(graph, name, TensorProto::FLOAT, {})
        ->mutable_type()
        ->mutable_tensor_type()
        ->clear_shape();
  addInitializer(graph,
                 makeFloatTensor("gamma", {8}, std::vector<float>(8, 1)));
  addNode(graph, "SkipSimplifiedLayerNormalization", {"x", "skip", "gamma"},
          {"y"}, "norm", "com.microsoft");
  addOutput(graph, "y", TensorProto::FLOAT, {});
  std::string ir;
  EXPECT_EQ(compileError(proto, &ir), "");
  EXPECT_THAT(
      ir, HasSubstr("folio.onnx_node \"SkipSimplifiedLayerNormalization\""));
  EXPECT_THAT(ir, ::testing::Not(HasSubstr("folio.rms_norm")));
}

// --- Omitted inputs of variadic ops -----------------------------------------

TEST(HostileInputTest, VariadicOpsTakeNoOmittedInputs) {
  // Once (the ONNX graph fuzzer): Concat's shape inference read an omitted
  // input ("") as a value, a null dereference.
  for (const char *op : {"Concat", "Max", "Min"}) {
    ModelProto proto = makeModel();
    GraphProto &graph = *proto.mutable_graph();
    addInput(graph, "x", TensorProto::FLOAT, {2, 3});
    NodeProto *node = addOnlyNode(proto, op, {"x", "", "x"}, "variadic");
    if (std::string(op) == "Concat")
      addIntAttr(*node, "axis", 0);
    EXPECT_THAT(compileError(proto),
                HasSubstr(std::string(op) + " input 1 is required but omitted"))
        << op;
  }
}

} // namespace
