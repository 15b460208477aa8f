//===- RaiseLinear.cpp - Projections, embeddings and gated MLPs -----------===//

#include "compiler/ONNXOps/ShapeAnalysis.h"
#include "compiler/Raise/Passes.h"
#include "compiler/Raise/QuantizedWeights.h"
#include "compiler/Raise/TransposedConstant.h"

#include "compiler/ONNXOps/DeadOps.h"
#include "compiler/ONNXOps/Match.h"
#include "dialects/Folio/IR/ConstantData.h"
#include "dialects/Folio/IR/FolioOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/Debug.h"

#include <cmath>

#define DEBUG_TYPE "folio-raise-linear"

namespace mlir::folio {
#define GEN_PASS_DEF_FOLIORAISELINEARPASS
#include "compiler/Raise/Passes.h.inc"
} // namespace mlir::folio

using namespace mlir;
using namespace mlir::folio;

namespace {

bool isConstantOfRank(Value v, int64_t rank) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return v.getDefiningOp<arith::ConstantOp>() && type && type.getRank() == rank;
}

/// A constant weight, or one the model stores quantized (a folio.dequantize
/// over constants).
bool isWeightOfRank(Value v, int64_t rank) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.getRank() == rank &&
         (v.getDefiningOp<arith::ConstantOp>() ||
          isWeightDequantize(v.getDefiningOp()));
}

bool isScalar(Value v, double expected, double tolerance = 1e-6) {
  std::optional<double> value = getScalarConstant(v);
  return value && std::fabs(*value - expected) <= tolerance;
}

/// A rank-2 Transpose: perm [1, 0], or none (ONNX reverses the dims).
bool isSwap(ONNXNodeOp transpose) {
  auto perm = transpose.getOnnxAttributes().getAs<DenseI64ArrayAttr>("perm");
  return !perm || perm.asArrayRef() == ArrayRef<int64_t>({1, 0});
}

/// The other operand of a binary node when one is `known`.
Value otherOperand(ONNXNodeOp node, Value known) {
  if (!node || node.getInputs().size() != 2)
    return {};
  if (node.getInputs()[0] == known)
    return node.getInputs()[1];
  if (node.getInputs()[1] == known)
    return node.getInputs()[0];
  return {};
}

/// Recognises act(g) for the gated-MLP activations, returning g.
std::optional<std::pair<Activation, Value>> matchActivation(Value v) {
  // SiLU: g * Sigmoid(g).
  if (ONNXNodeOp mul = matchONNX(v, "Mul"))
    for (unsigned i = 0; i < 2; ++i)
      if (ONNXNodeOp sig = matchONNX(mul.getInputs()[i], "Sigmoid"))
        if (sig.getInputs()[0] == mul.getInputs()[1 - i])
          return std::make_pair(Activation::silu, sig.getInputs()[0]);
  // ONNX Gelu (opset 20).
  if (ONNXNodeOp gelu = matchONNX(v, "Gelu")) {
    auto approx = gelu.getOnnxAttributes().getAs<StringAttr>("approximate");
    bool tanh = approx && approx.getValue() == "tanh";
    return std::make_pair(tanh ? Activation::gelu_tanh : Activation::gelu,
                          gelu.getInputs()[0]);
  }
  // 0.5 * g * (1 + f(g)): exact GELU with f = erf(g / sqrt(2)), tanh GELU
  // with f = tanh(sqrt(2/pi) * (g + 0.044715 g^3)). The factors come in
  // any association, so collect the product's leaves first.
  ONNXNodeOp outer = matchONNX(v, "Mul");
  if (!outer)
    return std::nullopt;
  SmallVector<Value> leaves;
  std::function<void(Value, int)> collect = [&](Value x, int depth) {
    ONNXNodeOp m = matchONNX(x, "Mul");
    if (m && depth < 2) {
      collect(m.getInputs()[0], depth + 1);
      collect(m.getInputs()[1], depth + 1);
    } else {
      leaves.push_back(x);
    }
  };
  collect(v, 0);
  bool half = false;
  Value onePlus, g;
  for (Value leaf : leaves) {
    if (isScalar(leaf, 0.5))
      half = true;
    else if (matchONNX(leaf, "Add") &&
             llvm::any_of(matchONNX(leaf, "Add").getInputs(),
                          [](Value x) { return isScalar(x, 1.0); }))
      onePlus = leaf;
    else
      g = leaf;
  }
  if (!half || !onePlus || !g || leaves.size() != 3)
    return std::nullopt;
  ONNXNodeOp add = matchONNX(onePlus, "Add");
  Value f = isScalar(add.getInputs()[0], 1.0) ? add.getInputs()[1]
                                              : add.getInputs()[0];
  if (ONNXNodeOp erf = matchONNX(f, "Erf")) {
    Value arg = erf.getInputs()[0];
    if (ONNXNodeOp div = matchONNX(arg, "Div"))
      if (div.getInputs()[0] == g &&
          isScalar(div.getInputs()[1], M_SQRT2, 1e-4))
        return std::make_pair(Activation::gelu, g);
    if (ONNXNodeOp mul = matchONNX(arg, "Mul"))
      if (Value s = otherOperand(mul, g); s && isScalar(s, M_SQRT1_2, 1e-4))
        return std::make_pair(Activation::gelu, g);
    return std::nullopt;
  }
  if (ONNXNodeOp tanh = matchONNX(f, "Tanh")) {
    // tanh(c * (g + 0.044715 * g^3)); c = sqrt(2/pi).
    ONNXNodeOp scaled = matchONNX(tanh.getInputs()[0], "Mul");
    if (!scaled)
      return std::nullopt;
    for (unsigned i = 0; i < 2; ++i) {
      if (!isScalar(scaled.getInputs()[i], std::sqrt(2.0 / M_PI), 1e-4))
        continue;
      ONNXNodeOp inner = matchONNX(scaled.getInputs()[1 - i], "Add");
      if (inner && otherOperand(inner, g))
        return std::make_pair(Activation::gelu_tanh, g);
    }
  }
  return std::nullopt;
}

struct RaiseLinearPass
    : mlir::folio::impl::FolioRaiseLinearPassBase<RaiseLinearPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    OpBuilder b(&getContext());
    dequantized.clear();
    SmallVector<ONNXNodeOp> nodes;
    func.walk([&](ONNXNodeOp node) { nodes.push_back(node); });
    for (ONNXNodeOp node : nodes) {
      if (node->use_empty())
        continue;
      if (node.getDomain() == "com.microsoft" &&
          node.getOpType() == "MatMulNBits") {
        raiseMatMulNBits(b, node);
        continue;
      }
      if (node.getDomain() == "com.microsoft" &&
          node.getOpType() == "GatherBlockQuantized") {
        raiseQuantizedEmbedding(b, node);
        continue;
      }
      if (!node.getDomain().empty())
        continue;
      if (node.getOpType() == "MatMul")
        raiseMatMul(b, node);
      else if (node.getOpType() == "Gemm")
        raiseGemm(b, node);
      else if (node.getOpType() == "Gather")
        raiseEmbedding(b, node);
    }
    SmallVector<LinearOp> downs;
    func.walk([&](LinearOp op) { downs.push_back(op); });
    for (LinearOp down : downs)
      raiseGatedMLP(b, down);
    // Facts of the values made here are inferred on demand; those of the
    // ops erased here must go.
    if (auto shapes = getCachedAnalysis<ONNXShapeAnalysis>()) {
      eraseDeadOps(func, &shapes->get().get());
      markAnalysesPreserved<ONNXShapeAnalysis>();
    } else {
      eraseDeadOps(func);
    }
  }

  /// The folio.dequantize of a DequantizeLinear over a constant weight,
  /// made once however many MatMuls read it.
  Value quantizedWeight(OpBuilder &b, ONNXNodeOp dq) {
    auto [it, inserted] = dequantized.try_emplace(dq.getOperation(), Value());
    if (inserted) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(dq);
      it->second = raiseDequantizeLinearWeight(b, dq);
    }
    return it->second;
  }

  /// DequantizeLinear node -> its folio.dequantize (null: not a weight),
  /// for the function being raised.
  DenseMap<Operation *, Value> dequantized;

  /// x @ W (+ bias) with a constant [K, N] weight, or a quantized one
  /// (QDQ: DequantizeLinear over a constant).
  void raiseMatMul(OpBuilder &b, ONNXNodeOp matmul) {
    Value x = matmul.getInputs()[0], w = matmul.getInputs()[1];
    if (ONNXNodeOp dq = matchONNX(w, "DequantizeLinear"))
      if (Value weight = quantizedWeight(b, dq))
        w = weight;
    auto xType = dyn_cast<RankedTensorType>(x.getType());
    if (!isWeightOfRank(w, 2) || !xType || xType.getRank() < 1)
      return;
    Value result = matmul.getResult(0);
    Value bias;
    Operation *replaced = matmul;
    if (result.hasOneUse())
      if (auto add = dyn_cast<ONNXNodeOp>(*result.getUsers().begin());
          add && add.getOpType() == "Add" && add.getDomain().empty()) {
        Value other = otherOperand(add, result);
        auto wType = cast<RankedTensorType>(w.getType());
        if (other && isConstantOfRank(other, 1) &&
            cast<RankedTensorType>(other.getType()).getDimSize(0) ==
                wType.getDimSize(1) &&
            add.getResult(0).getType() == result.getType()) {
          bias = other;
          replaced = add;
        }
      }
    b.setInsertionPoint(replaced);
    auto linear = b.create<LinearOp>(
        matmul.getLoc(), result.getType(), x, w, bias,
        WeightLayoutAttr::get(&getContext(), WeightLayout::in_out));
    replaced->getResult(0).replaceAllUsesWith(linear.getResult());
  }

  /// Gemm(A, B, C) with alpha = beta = 1, transA = 0 and a constant B.
  void raiseGemm(OpBuilder &b, ONNXNodeOp gemm) {
    Value a = getONNXInput(gemm, 0), w = getONNXInput(gemm, 1),
          c = getONNXInput(gemm, 2);
    if (!isConstantOfRank(w, 2) || getONNXIntAttr(gemm, "transA", 0) != 0 ||
        getONNXFloatAttr(gemm, "alpha", 1.0) != 1.0 ||
        getONNXFloatAttr(gemm, "beta", 1.0) != 1.0)
      return;
    bool transB = getONNXIntAttr(gemm, "transB", 0) != 0;
    auto wType = cast<RankedTensorType>(w.getType());
    int64_t n = wType.getDimSize(transB ? 0 : 1);
    if (c && !(isConstantOfRank(c, 1) &&
               cast<RankedTensorType>(c.getType()).getDimSize(0) == n))
      return;
    b.setInsertionPoint(gemm);
    auto linear = b.create<LinearOp>(
        gemm.getLoc(), gemm.getResult(0).getType(), a, w, c,
        WeightLayoutAttr::get(&getContext(), transB ? WeightLayout::out_in
                                                    : WeightLayout::in_out));
    gemm.getResult(0).replaceAllUsesWith(linear.getResult());
  }

  /// Gather(table, ids) on axis 0 (createEmbedding below).
  void raiseEmbedding(OpBuilder &b, ONNXNodeOp gather) {
    Value table = gather.getInputs()[0], ids = gather.getInputs()[1];
    auto idsType = dyn_cast<RankedTensorType>(ids.getType());
    if (getONNXIntAttr(gather, "axis", 0) != 0 || !idsType ||
        idsType.getRank() < 1)
      return;
    // Tied embeddings gathered from the transposed output projection: a
    // transposed copy of the weight (the projection keeps its own). A
    // quantized table (its projection's, or its own) is gathered from its
    // dequantized values.
    std::string tableName =
        "folio_embedding_table_" + std::to_string(transposedTables + 1);
    if (ONNXNodeOp transpose = matchONNX(table, "Transpose");
        transpose && transpose.getDomain().empty() && isSwap(transpose)) {
      Value source = transpose.getInputs()[0];
      Value quantized;
      if (ONNXNodeOp dq = matchONNX(source, "DequantizeLinear"))
        quantized = quantizedWeight(b, dq);
      b.setInsertionPoint(transpose);
      Value copy =
          quantized
              ? createDequantizedConstant(b, transpose.getLoc(), quantized,
                                          /*transpose=*/true, tableName)
          : isConstantOfRank(source, 2)
              ? createTransposedConstant(b, transpose.getLoc(), source,
                                         tableName)
              : Value();
      if (copy) {
        ++transposedTables;
        table = copy;
      }
    } else if (ONNXNodeOp dq = matchONNX(table, "DequantizeLinear")) {
      if (Value quantized = quantizedWeight(b, dq)) {
        b.setInsertionPoint(gather);
        if (Value copy =
                createDequantizedConstant(b, gather.getLoc(), quantized,
                                          /*transpose=*/false, tableName)) {
          ++transposedTables;
          table = copy;
        }
      }
    }
    if (!isConstantOfRank(table, 2))
      return;
    createEmbedding(b, gather, table, ids);
  }

  /// com.microsoft GatherBlockQuantized (an embedding table quantized as
  /// MatMulNBits weights are): the embedding of its dequantized values.
  void raiseQuantizedEmbedding(OpBuilder &b, ONNXNodeOp gather) {
    Value ids = getONNXInput(gather, 1);
    auto idsType =
        dyn_cast_or_null<RankedTensorType>(ids ? ids.getType() : Type());
    if (!idsType || idsType.getRank() < 1)
      return;
    std::optional<QuantizedWeight> weight =
        readGatherBlockQuantizedTable(gather);
    if (!weight)
      return;
    b.setInsertionPoint(gather);
    Value table = createDequantizedConstant(
        b, gather.getLoc(), *weight, /*transpose=*/false,
        "folio_embedding_table_" + std::to_string(++transposedTables));
    createEmbedding(b, gather, table, ids);
  }

  /// folio.embedding(table, ids) in place of `gather`, with a following
  /// scalar multiply folded into the scale (Gemma multiplies embeddings by
  /// sqrt(hidden)).
  void createEmbedding(OpBuilder &b, ONNXNodeOp gather, Value table,
                       Value ids) {
    Value result = gather.getResult(0);
    double scale = 1.0;
    Operation *replaced = gather;
    if (result.hasOneUse())
      if (auto mul = dyn_cast<ONNXNodeOp>(*result.getUsers().begin());
          mul && mul.getOpType() == "Mul" && mul.getDomain().empty())
        if (Value other = otherOperand(mul, result))
          if (std::optional<double> s = getScalarConstant(other);
              s && *s > 0 && mul.getResult(0).getType() == result.getType()) {
            scale = *s;
            replaced = mul;
          }
    b.setInsertionPoint(replaced);
    auto embedding =
        b.create<EmbeddingOp>(gather.getLoc(), result.getType(), table, ids,
                              b.getF64FloatAttr(scale));
    replaced->getResult(0).replaceAllUsesWith(embedding.getResult());
  }

  unsigned transposedTables = 0;

  /// down(act(gate(x)) * up(x)) over bias-free linears with one layout.
  void raiseGatedMLP(OpBuilder &b, LinearOp down) {
    if (down.getBias())
      return;
    ONNXNodeOp mul = matchONNX(down.getInput(), "Mul");
    if (!mul)
      return;
    for (unsigned i = 0; i < 2; ++i) {
      std::optional<std::pair<Activation, Value>> act =
          matchActivation(mul.getInputs()[i]);
      if (!act)
        continue;
      auto gate = act->second.getDefiningOp<LinearOp>();
      auto up = mul.getInputs()[1 - i].getDefiningOp<LinearOp>();
      if (!gate || !up || gate.getBias() || up.getBias() ||
          gate.getInput() != up.getInput() ||
          gate.getWeightLayout() != down.getWeightLayout() ||
          up.getWeightLayout() != down.getWeightLayout() ||
          gate.getWeight().getType() != up.getWeight().getType() ||
          down.getResult().getType() != gate.getInput().getType())
        continue;
      b.setInsertionPoint(down);
      auto mlp = b.create<GatedMLPOp>(
          down.getLoc(), down.getResult().getType(), gate.getInput(),
          gate.getWeight(), up.getWeight(), down.getWeight(),
          ActivationAttr::get(&getContext(), act->first),
          down.getWeightLayoutAttr());
      down.getResult().replaceAllUsesWith(mlp.getResult());
      return;
    }
  }
};

} // namespace
