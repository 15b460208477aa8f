//===- SinkGatherRows.cpp - The lm_head on the sampled rows only ----------===//
//
// The serving entry returns logits only for `logits_indices`, but exported
// graphs compute the final norm, the lm_head and a soft-cap for every token
// and gather afterwards: a 512-token prefill multiplies 512 rows by the
// vocabulary-sized weight to keep one. Those ops are row-wise, so the
// gather moves before them: same values, R rows of work instead of T.
//
//===----------------------------------------------------------------------===//

#include "dialects/Folio/IR/FolioOps.h"
#include "dialects/Folio/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "folio-sink-gather-rows"

namespace mlir::folio {
#define GEN_PASS_DEF_FOLIOSINKGATHERROWSPASS
#include "dialects/Folio/Transforms/Passes.h.inc"
} // namespace mlir::folio

using namespace mlir;
using namespace mlir::folio;

namespace {

/// A reshape that only merges or splits leading dims: the last dim, and so
/// every row, stays as it is.
bool keepsRows(ReshapeOp op) {
  auto in = cast<RankedTensorType>(op.getInput().getType());
  auto out = cast<RankedTensorType>(op.getType());
  return in.getRank() >= 1 && out.getRank() >= 1 &&
         in.getShape().back() == out.getShape().back() &&
         !ShapedType::isDynamic(in.getShape().back());
}

/// A constant that broadcasts along rows only: every dim but the last is 1
/// (or absent), so applying the op to a subset of rows is the same.
bool isRowConstant(Value v) {
  if (!v.getDefiningOp<arith::ConstantOp>())
    return false;
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getRank() > 2) // would broadcast [R, N] up to a higher rank
    return false;
  for (int64_t i = 0; i + 1 < t.getRank(); ++i)
    if (t.getDimSize(i) != 1)
      return false;
  return true;
}

/// Whether `op` computes each row of its result from the same row of its
/// row operand alone; `row` is set to that operand.
bool isRowWise(Operation *op, Value &row) {
  if (auto l = dyn_cast<LinearOp>(op))
    return row = l.getInput(), true;
  if (auto n = dyn_cast<RMSNormOp>(op))
    return row = n.getInput(), true;
  if (auto n = dyn_cast<LayerNormOp>(op))
    return row = n.getInput(), true;
  if (auto u = dyn_cast<UnaryOp>(op))
    return row = u.getInput(), true;
  if (auto b = dyn_cast<BinaryOp>(op)) {
    if (isRowConstant(b.getRhs()))
      return row = b.getLhs(), true;
    if (isRowConstant(b.getLhs()))
      return row = b.getRhs(), true;
  }
  return false;
}

/// `%g = gather_rows(reshape?(f_n(...f_1(%x))), %idx)`, every f_i row-wise
/// and used once, becomes `f_n(...f_1(gather_rows(reshape(%x))))`: the
/// lm_head, a final soft-cap and the final norm run on the sampled rows.
struct SinkGatherRows : OpRewritePattern<GatherRowsOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(GatherRowsOp gather,
                                PatternRewriter &rewriter) const override {
    SmallVector<Operation *> rowOps; // outermost first
    Value v = gather.getInput();
    while (Operation *def = v.getDefiningOp()) {
      if (!v.hasOneUse() || def->getNumResults() != 1)
        break;
      if (auto r = dyn_cast<ReshapeOp>(def)) {
        if (!keepsRows(r))
          break;
        v = r.getInput();
        continue;
      }
      Value row;
      if (!isRowWise(def, row))
        break;
      rowOps.push_back(def);
      v = row;
    }
    if (rowOps.empty())
      return failure();
    auto source = cast<RankedTensorType>(v.getType());
    if (source.getRank() < 1 || ShapedType::isDynamic(source.getShape().back()))
      return failure();

    int64_t dyn = ShapedType::kDynamic;
    auto rowsOf = [&](Value x) {
      auto t = cast<RankedTensorType>(x.getType());
      return RankedTensorType::get({dyn, t.getShape().back()},
                                   t.getElementType());
    };
    // The rebuilt chain ends in [?, last dim of the outermost op]: only a
    // gather of that type can be replaced (checked before building).
    if (rowsOf(rowOps.front()->getResult(0)) != gather.getType())
      return failure();
    Location loc = gather.getLoc();
    Value rows = v;
    if (rows.getType() != rowsOf(v))
      rows = rewriter.create<ReshapeOp>(loc, rowsOf(v), rows);
    Value result = rewriter.create<GatherRowsOp>(loc, rowsOf(v), rows,
                                                 gather.getIndices());
    // Replay the row-wise ops, innermost first, on the picked rows.
    for (Operation *op : llvm::reverse(rowOps)) {
      Value row;
      isRowWise(op, row);
      IRMapping map;
      map.map(row, result);
      Operation *copy = rewriter.clone(*op, map);
      copy->getResult(0).setType(rowsOf(op->getResult(0)));
      result = copy->getResult(0);
    }
    rewriter.replaceOp(gather, result);
    return success();
  }
};

struct SinkGatherRowsPass
    : mlir::folio::impl::FolioSinkGatherRowsPassBase<SinkGatherRowsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SinkGatherRows>(&getContext());
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
