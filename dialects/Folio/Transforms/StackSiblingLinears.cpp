//===- StackSiblingLinears.cpp - One GEMM for q, k and v ------------------===//
//
// A layer's q, k and v projections read the same normalised input. Run
// apart, decode pays three weight streams, three thread-pool jobs and three
// GEMV tails per layer; stacked along N they are one GEMM (what vLLM's
// QKVParallelLinear and every GPU engine do). The pass concatenates the
// weights (and biases) of `folio.linear` ops that share their input, weight
// layout, in-features and element type into one constant and slices the
// result per member with `folio.slice` on the last dim, which the CPU
// executor turns into views when the slice is contiguous (one token).
//
//===----------------------------------------------------------------------===//

#include "dialects/Folio/IR/FolioOps.h"
#include "dialects/Folio/Transforms/ConstantBlobs.h"
#include "dialects/Folio/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

#include <tuple>

#define DEBUG_TYPE "folio-stack-sibling-linears"

namespace mlir::folio {
#define GEN_PASS_DEF_FOLIOSTACKSIBLINGLINEARSPASS
#include "dialects/Folio/Transforms/Passes.h.inc"
} // namespace mlir::folio

using namespace mlir;
using namespace mlir::folio;

namespace {

struct StackSiblingLinearsPass
    : mlir::folio::impl::FolioStackSiblingLinearsPassBase<
          StackSiblingLinearsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // Same input, layout, weight type, in-features and bias element type
    // (null when there is none).
    using Key = std::tuple<Value, unsigned, Type, int64_t, Type>;
    llvm::MapVector<Key, SmallVector<LinearOp>> groups;
    func.walk([&](LinearOp op) {
      auto w = cast<RankedTensorType>(op.getWeight().getType());
      if (w.getRank() != 2 || !w.hasStaticShape() ||
          !op.getWeight().getDefiningOp<arith::ConstantOp>() ||
          (op.getBias() && !op.getBias().getDefiningOp<arith::ConstantOp>()))
        return;
      bool inOut = op.getWeightLayout() == WeightLayout::in_out;
      int64_t k = inOut ? w.getDimSize(0) : w.getDimSize(1);
      Type biasType =
          op.getBias()
              ? cast<RankedTensorType>(op.getBias().getType()).getElementType()
              : Type();
      groups[Key{op.getInput(), unsigned(op.getWeightLayout()),
                 w.getElementType(), k, biasType}]
          .push_back(op);
    });
    unsigned counter = 0;
    for (auto &[key, members] : groups)
      if (members.size() >= 2 && failed(stack(members, counter++)))
        return signalPassFailure();
  }

  LogicalResult stack(SmallVector<LinearOp> &members, unsigned index) {
    LinearOp first = members.front();
    bool inOut = first.getWeightLayout() == WeightLayout::in_out;
    auto w0 = cast<RankedTensorType>(first.getWeight().getType());
    int64_t k = inOut ? w0.getDimSize(0) : w0.getDimSize(1);
    size_t es = w0.getElementTypeBitWidth() / 8;
    SmallVector<int64_t> widths;
    SmallVector<std::vector<char>> weights, biases;
    for (LinearOp op : members) {
      auto w = cast<RankedTensorType>(op.getWeight().getType());
      widths.push_back(inOut ? w.getDimSize(1) : w.getDimSize(0));
      std::optional<std::vector<char>> bytes = constantBytes(op.getWeight());
      if (!bytes)
        return success(); // not a plain constant: leave the group alone
      weights.push_back(std::move(*bytes));
      if (op.getBias()) {
        std::optional<std::vector<char>> b = constantBytes(op.getBias());
        if (!b)
          return success();
        biases.push_back(std::move(*b));
      }
      auto out = cast<RankedTensorType>(op.getType());
      if (ShapedType::isDynamic(out.getShape().back()) ||
          out.getShape().back() != widths.back())
        return success();
    }
    int64_t total = 0;
    for (int64_t n : widths)
      total += n;

    // [N, K] weights append; [K, N] weights interleave row by row.
    std::vector<char> stacked;
    stacked.reserve(size_t(total * k) * es);
    if (inOut) {
      for (int64_t row = 0; row < k; ++row)
        for (auto [n, bytes] : llvm::zip(widths, weights))
          stacked.insert(stacked.end(), bytes.begin() + row * n * es,
                         bytes.begin() + (row + 1) * n * es);
    } else {
      for (const std::vector<char> &bytes : weights)
        stacked.insert(stacked.end(), bytes.begin(), bytes.end());
    }

    OpBuilder b(first);
    Location loc = b.getFusedLoc(llvm::to_vector(
        llvm::map_range(members, [](LinearOp op) { return op.getLoc(); })));
    std::string name = "folio_stacked_" + std::to_string(index);
    auto weightType = RankedTensorType::get(inOut ? ArrayRef<int64_t>{k, total}
                                                  : ArrayRef<int64_t>{total, k},
                                            w0.getElementType());
    Value weight = createConstant(b, loc, weightType, name, stacked);
    Value bias;
    if (first.getBias()) {
      std::vector<char> all;
      for (const std::vector<char> &bytes : biases)
        all.insert(all.end(), bytes.begin(), bytes.end());
      auto biasType = RankedTensorType::get(
          {total},
          cast<RankedTensorType>(first.getBias().getType()).getElementType());
      bias = createConstant(b, loc, biasType, name + "_bias", all);
    }
    auto out0 = cast<RankedTensorType>(first.getType());
    SmallVector<int64_t> shape(out0.getShape());
    shape.back() = total;
    auto outType = RankedTensorType::get(shape, out0.getElementType());
    Value all = b.create<LinearOp>(loc, outType, first.getInput(), weight, bias,
                                   first.getWeightLayoutAttr());
    int64_t start = 0, axis = outType.getRank() - 1;
    for (auto [op, n] : llvm::zip(members, widths)) {
      Value part = b.create<SliceOp>(
          op.getLoc(), op.getType(), all, b.getI64IntegerAttr(axis),
          b.getI64IntegerAttr(start), b.getI64IntegerAttr(n));
      op.getResult().replaceAllUsesWith(part);
      start += n;
    }
    for (LinearOp op : members) {
      Operation *w = op.getWeight().getDefiningOp();
      Operation *bias = op.getBias() ? op.getBias().getDefiningOp() : nullptr;
      op.erase();
      for (Operation *c : {w, bias})
        if (c && c->use_empty())
          c->erase();
    }
    return success();
  }
};

} // namespace
