//===- FoldRotaryTransposes.cpp - Rotary in the token-major layout --------===//
//
// Exporters rotate q and k in the [B, heads, S, head_dim] layout, so the
// imported graph transposes each projection to it and, after page-kv, back
// to [B, S, heads, head_dim] for the cache and the paged attention: two full
// copies per tensor per layer that exist only for the rotation. Rotary is
// per (token, head) row, so the same rotation applies in place on the
// token-major layout: collapse [B, S] to the tokens, use the serving form
// of folio.rotary ([T, heads, head_dim], positions [T]) and expand back.
// A Slice or Split between the first transpose and the rotary (GPT-NeoX
// cuts q, k and v out of each head's fused projection in the head-major
// layout) is moved before the transpose first, since it cuts only head_dim.
//
//===----------------------------------------------------------------------===//

#include "compiler/ONNXOps/DeadOps.h"
#include "compiler/ONNXOps/Match.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/Folio/IR/FolioOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace mlir::folio {
#define GEN_PASS_DEF_FOLIOFOLDROTARYTRANSPOSESPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::folio

using namespace mlir;
using namespace mlir::folio;

namespace {

/// Whether `node` is a Transpose swapping dims 1 and 2 of a rank-4 tensor
/// ([B, S, H, D] <-> [B, H, S, D]; the permutation is its own inverse).
bool swapsSeqAndHeads(ONNXNodeOp node) {
  if (!node || node.getOpType() != "Transpose" || !node.getDomain().empty())
    return false;
  auto perm = node.getOnnxAttributes().getAs<DenseI64ArrayAttr>("perm");
  return perm && perm.asArrayRef() == ArrayRef<int64_t>{0, 2, 1, 3};
}

/// [B, H, S, D] with dims 1 and 2 swapped: the type of the same data in the
/// other layout.
RankedTensorType swapped(RankedTensorType type) {
  SmallVector<int64_t, 4> shape(type.getShape());
  std::swap(shape[1], shape[2]);
  return RankedTensorType::get(shape, type.getElementType());
}

/// Whether ONNX axis `a` of a rank-4 tensor is one the [0, 2, 1, 3] swap
/// leaves in place (dim 0 or 3).
bool swapFixes(int64_t a) { return a == 0 || a == 3 || a == -1 || a == -4; }

/// Whether `node` is a Slice or Split that cuts only dims 0 and 3.
bool cutsFixedDims(ONNXNodeOp node) {
  if (!node.getDomain().empty())
    return false;
  if (node.getOpType() == "Split") {
    auto axis = node.getOnnxAttributes().getAs<IntegerAttr>("axis");
    // The axis defaults to 0, which the swap fixes too.
    return !axis || swapFixes(axis.getInt());
  }
  // Without axes a Slice cuts dims 0, 1, ... in order.
  if (node.getOpType() != "Slice" || node.getInputs().size() < 4 ||
      node.getInputs().size() > 5)
    return false;
  std::optional<SmallVector<int64_t>> axes =
      getIntConstants(node.getInputs()[3]);
  return axes && !axes->empty() && llvm::all_of(*axes, swapFixes);
}

/// Moves a [0, 2, 1, 3] Transpose below a Slice or Split of its result that
/// cuts only dims 0 and 3, which the swap leaves in place (GPT-NeoX cuts q,
/// k and v out of each head's fused [q | k | v] after moving heads before
/// tokens): the cut then reads the token-major tensor with the same
/// operands. Users that swap back get the cut tensor itself; the others get
/// a swap of it, which the rotary fold below may then take. Returns whether
/// it rewrote.
bool sinkTransposeBelowCut(ONNXNodeOp node, OpBuilder &builder) {
  if (node.getNumResults() == 0 || node.getInputs().empty() ||
      !cutsFixedDims(node))
    return false;
  ONNXNodeOp before =
      matchONNX(stripTensorCasts(node.getInputs()[0]), "Transpose");
  if (!swapsSeqAndHeads(before) ||
      !isa<RankedTensorType>(before.getInputs()[0].getType()))
    return false;
  for (Value r : node.getResults()) {
    auto type = dyn_cast<RankedTensorType>(r.getType());
    if (!type || type.getRank() != 4)
      return false;
  }

  builder.setInsertionPoint(node);
  Operation *cut = builder.clone(*node);
  cut->setOperand(0, before.getInputs()[0]);
  for (auto [oldResult, newResult] :
       llvm::zip(node.getResults(), cut->getResults())) {
    auto headType = cast<RankedTensorType>(oldResult.getType());
    newResult.setType(swapped(headType));
    Value headMajor;
    for (OpOperand &use : llvm::make_early_inc_range(oldResult.getUses())) {
      auto back = dyn_cast<ONNXNodeOp>(use.getOwner());
      if (swapsSeqAndHeads(back)) {
        Value y = newResult;
        Type want = back.getResult(0).getType();
        if (y.getType() != want) {
          if (!tensor::CastOp::areCastCompatible(y.getType(), want))
            continue;
          builder.setInsertionPoint(back);
          y = builder.create<tensor::CastOp>(back.getLoc(), want, y);
        }
        back.getResult(0).replaceAllUsesWith(y);
        continue;
      }
      if (!headMajor) {
        builder.setInsertionPointAfter(cut);
        Operation *swap = builder.clone(*before);
        swap->setOperand(0, newResult);
        swap->getResult(0).setType(headType);
        headMajor = swap->getResult(0);
      }
      use.set(headMajor);
    }
  }
  return true;
}

/// The Transpose reached from `rotary`'s result through single-use casts,
/// if the rotary result has no other user.
ONNXNodeOp transposeAfter(RotaryOp rotary) {
  Value v = rotary.getResult();
  while (v.hasOneUse()) {
    Operation *user = *v.getUsers().begin();
    if (auto cast = dyn_cast<tensor::CastOp>(user)) {
      v = cast.getResult();
      continue;
    }
    auto node = dyn_cast<ONNXNodeOp>(user);
    return swapsSeqAndHeads(node) ? node : ONNXNodeOp();
  }
  return {};
}

/// Rewrites transpose -> rotary -> transpose-back into rotary on the
/// collapsed token-major tensor. Returns whether it did.
bool fold(RotaryOp rotary, OpBuilder &builder) {
  auto inType = dyn_cast<RankedTensorType>(rotary.getInput().getType());
  if (!inType || inType.getRank() != 4)
    return false;
  ONNXNodeOp before =
      matchONNX(stripTensorCasts(rotary.getInput()), "Transpose");
  if (!swapsSeqAndHeads(before))
    return false;
  ONNXNodeOp after = transposeAfter(rotary);
  if (!after)
    return false;
  Value x = before.getInputs()[0]; // [B, S, H, D]
  auto xType = dyn_cast<RankedTensorType>(x.getType());
  auto posType = dyn_cast<RankedTensorType>(rotary.getPositions().getType());
  if (!xType || xType.getRank() != 4 || !posType || posType.getRank() != 2)
    return false;

  Location loc = rotary.getLoc();
  builder.setInsertionPoint(after);
  SmallVector<ReassociationIndices> tokens3 = {{0, 1}, {2}, {3}};
  SmallVector<ReassociationIndices> tokens1 = {{0, 1}};
  Value flat = builder.create<tensor::CollapseShapeOp>(loc, x, tokens3);
  Value positions = builder.create<tensor::CollapseShapeOp>(
      loc, rotary.getPositions(), tokens1);
  auto rotated = cast<RotaryOp>(builder.clone(*rotary));
  rotated->setOperand(0, flat);
  rotated->setOperand(1, positions);
  rotated->getResult(0).setType(flat.getType());

  SmallVector<OpFoldResult> shape;
  for (int64_t d = 0; d < 4; ++d) {
    if (xType.isDynamicDim(d))
      shape.push_back(builder.create<tensor::DimOp>(loc, x, d).getResult());
    else
      shape.push_back(builder.getIndexAttr(xType.getDimSize(d)));
  }
  Value y = builder.create<tensor::ExpandShapeOp>(loc, xType, rotated, tokens3,
                                                  shape);
  Type want = after.getResult(0).getType();
  if (y.getType() != want) {
    if (!tensor::CastOp::areCastCompatible(y.getType(), want))
      return false; // the new ops die with eraseDeadOps
    y = builder.create<tensor::CastOp>(loc, want, y);
  }
  after.getResult(0).replaceAllUsesWith(y);
  return true;
}

struct FoldRotaryTransposesPass
    : folio::impl::FolioFoldRotaryTransposesPassBase<FoldRotaryTransposesPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    OpBuilder builder(&getContext());
    bool changed = false;
    SmallVector<ONNXNodeOp> cuts;
    func.walk([&](ONNXNodeOp op) {
      if (op.getOpType() == "Slice" || op.getOpType() == "Split")
        cuts.push_back(op);
    });
    for (ONNXNodeOp op : cuts)
      changed |= sinkTransposeBelowCut(op, builder);
    SmallVector<RotaryOp> rotaries;
    func.walk([&](RotaryOp op) { rotaries.push_back(op); });
    for (RotaryOp op : rotaries)
      changed |= fold(op, builder);
    if (changed)
      eraseDeadOps(func);
  }
};

} // namespace
