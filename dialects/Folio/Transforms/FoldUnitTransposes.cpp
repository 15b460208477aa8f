//===- FoldUnitTransposes.cpp - Transposes that move only unit dims -------===//
//
// torch.export writes multi-query attention (Falcon) by moving the heads of
// the fused projection to the front, [B, S, H, D] -> [H, B, S, D], gathering
// K's and V's one head from there and swapping [1, B, ...] dims after. Once
// a slice takes the single head before the transpose, every one of these
// transposes moves only dims of size 1: the same elements in the same
// order, a reshape. And the rotary of a head-major [B, 1, S, D] tensor is
// the serving form's rotary of [B * S, 1, D]. This pass makes those three
// rewrites, so the copies go and the kernels are the ones every other
// model's plan has.
//
//===----------------------------------------------------------------------===//

#include "dialects/Folio/IR/FolioOps.h"
#include "dialects/Folio/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::folio {
#define GEN_PASS_DEF_FOLIOFOLDUNITTRANSPOSESPASS
#include "dialects/Folio/Transforms/Passes.h.inc"
} // namespace mlir::folio

using namespace mlir;
using namespace mlir::folio;

namespace {

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Whether `perm` keeps the order of every dim of `in` that is not 1
/// (dynamic dims count as not 1): then the transpose is a reshape.
bool movesOnlyUnitDims(ArrayRef<int64_t> perm, RankedTensorType in) {
  int64_t last = -1;
  for (int64_t p : perm) {
    if (in.getDimSize(p) == 1)
      continue;
    if (p < last)
      return false;
    last = p;
  }
  return true;
}

/// slice(transpose(x, perm), axis a) -> transpose(slice(x, perm[a]), perm)
/// when every user of the transpose is a slice: each then transposes only
/// its own part (and the transpose of one head is a reshape, below).
bool sinkSlicesBelow(TransposeOp t) {
  if (t->use_empty() || !llvm::all_of(t->getUsers(), [](Operation *u) {
        return isa<SliceOp>(u);
      }))
    return false;
  ArrayRef<int64_t> perm = t.getPermutation();
  RankedTensorType in = tensorType(t.getInput());
  for (Operation *user : llvm::make_early_inc_range(t->getUsers())) {
    auto slice = cast<SliceOp>(user);
    int64_t axis = perm[size_t(slice.getAxis())];
    SmallVector<int64_t> shape(in.getShape());
    shape[size_t(axis)] = slice.getSize();
    OpBuilder b(slice);
    Value part = b.create<SliceOp>(
        slice.getLoc(), RankedTensorType::get(shape, in.getElementType()),
        t.getInput(), b.getI64IntegerAttr(axis), slice.getStartAttr(),
        slice.getSizeAttr());
    Value moved = b.create<TransposeOp>(slice.getLoc(), slice.getType(), part,
                                        t.getPermutationAttr());
    slice.replaceAllUsesWith(moved);
    slice.erase();
  }
  t.erase();
  return true;
}

/// A transpose that moves only unit dims becomes a reshape.
bool toReshape(TransposeOp t) {
  RankedTensorType in = tensorType(t.getInput()), out = t.getType();
  if (!movesOnlyUnitDims(t.getPermutation(), in) ||
      llvm::count_if(out.getShape(), ShapedType::isDynamic) > 1)
    return false;
  OpBuilder b(t);
  Value r = b.create<ReshapeOp>(t.getLoc(), out, t.getInput());
  t.replaceAllUsesWith(r);
  t.erase();
  return true;
}

/// rotary of [B, 1, S, D] with positions [B, S] -> the serving form on
/// [B * S, 1, D] with positions [B * S]: with one head the two layouts are
/// the same memory.
bool oneHeadRotary(RotaryOp r) {
  RankedTensorType x = tensorType(r.getInput());
  RankedTensorType pos = tensorType(r.getPositions());
  if (x.getRank() != 4 || x.getDimSize(1) != 1 ||
      (ShapedType::isDynamic(x.getDimSize(0)) &&
       ShapedType::isDynamic(x.getDimSize(2))))
    return false;
  int64_t tokens = ShapedType::isDynamic(x.getDimSize(0)) ||
                           ShapedType::isDynamic(x.getDimSize(2))
                       ? ShapedType::kDynamic
                       : x.getDimSize(0) * x.getDimSize(2);
  OpBuilder b(r);
  Location loc = r.getLoc();
  Value rows = b.create<ReshapeOp>(
      loc,
      RankedTensorType::get({tokens, 1, x.getDimSize(3)}, x.getElementType()),
      r.getInput());
  Value flat = b.create<ReshapeOp>(
      loc, RankedTensorType::get({tokens}, pos.getElementType()),
      r.getPositions());
  SmallVector<Value> operands = {rows, flat};
  if (Value table = r.getCosSinCache())
    operands.push_back(table);
  OperationState state(loc, r->getName());
  state.addOperands(operands);
  state.addTypes(rows.getType());
  state.addAttributes(r->getAttrs());
  Operation *rotated = b.create(state);
  Value back = b.create<ReshapeOp>(loc, x, rotated->getResult(0));
  r.replaceAllUsesWith(back);
  r.erase();
  return true;
}

struct FoldUnitTransposesPass
    : public mlir::folio::impl::FolioFoldUnitTransposesPassBase<
          FoldUnitTransposesPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // Slices first, so that the transposes they leave move one head only.
    SmallVector<TransposeOp> transposes;
    func.walk([&](TransposeOp t) { transposes.push_back(t); });
    SmallVector<TransposeOp> left;
    for (TransposeOp t : transposes)
      if (!sinkSlicesBelow(t))
        left.push_back(t);
    transposes.clear();
    func.walk([&](TransposeOp t) { transposes.push_back(t); });
    for (TransposeOp t : transposes)
      toReshape(t);
    SmallVector<RotaryOp> rotaries;
    func.walk([&](RotaryOp r) { rotaries.push_back(r); });
    for (RotaryOp r : rotaries)
      oneHeadRotary(r);
  }
};

} // namespace
