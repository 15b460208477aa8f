//===- LowerONNX.cpp - What is left of the model, to folio ops ------------===//
//
// After page-kv the serving entry still holds the model's residual adds,
// written-out activations, reshapes and the Shape -> Gather -> Concat
// chains that computed their shapes, plus the tensor views and integer
// casts page-kv placed. This pass makes every shape static but the token
// count and lowers the rest to folio ops:
//
// 1. Types: shape inference runs once; every result it knows better (batch
//    1, head counts) gets the refined type, so a view between two such
//    types is a folio.reshape with one dynamic dim at most.
// 2. Patterns under the greedy driver: each folio.onnx_node through its
//    lowering hook (compiler/ONNXOps/Lowering.h); tensor.expand_shape /
//    collapse_shape to folio.reshape, tensor.cast to its source, integer
//    arith casts to folio.cast; folders and folio.reshape's canonicalizer
//    compose what results. Shape arithmetic left without users dies.
// 3. Whatever could not be lowered keeps a `folio.lowering_error` saying
//    why, for folio-verify-lowered to report with node, op and opset.
//
//===----------------------------------------------------------------------===//

#include "compiler/ONNXOps/Lowering.h"
#include "compiler/ONNXOps/ShapeAnalysis.h"
#include "compiler/ONNXOps/ShapeInference.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/Folio/IR/FolioOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "folio-lower-onnx"

namespace mlir::folio {
#define GEN_PASS_DEF_FOLIOLOWERONNXPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::folio

using namespace mlir;
using namespace mlir::folio;

namespace {

using Reasons = llvm::DenseMap<Operation *, std::string>;

struct LowerNode : OpRewritePattern<ONNXNodeOp> {
  LowerNode(MLIRContext *context, ONNXShapeInference &inference,
            Reasons &reasons)
      : OpRewritePattern(context), inference(inference), reasons(reasons) {}

  LogicalResult matchAndRewrite(ONNXNodeOp node,
                                PatternRewriter &rewriter) const override {
    StringRef domain =
        node.getDomain().empty() ? StringRef(kONNXDomain) : node.getDomain();
    const ONNXLowering *lowering =
        lookupONNXLowering(domain, node.getOpType(), node.getOpset());
    if (!lowering)
      return failure(); // the default reason is given after the driver
    ONNXLoweringContext ctx(node, rewriter, inference, reasons);
    return lowering->lower(ctx);
  }

  ONNXShapeInference &inference;
  Reasons &reasons;
};

/// tensor.expand_shape / collapse_shape -> folio.reshape to the refined
/// result type.
template <typename OpTy> struct LowerTensorView : OpRewritePattern<OpTy> {
  LowerTensorView(MLIRContext *context, ONNXShapeInference &inference)
      : OpRewritePattern<OpTy>(context), inference(inference) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getResult().getType());
    type = refineType(type, inference.lookup(op.getResult()));
    if (llvm::count_if(type.getShape(), ShapedType::isDynamic) > 1)
      return failure();
    rewriter.replaceOp(op,
                       createReshape(rewriter, op.getLoc(), op.getSrc(), type));
    return success();
  }

  ONNXShapeInference &inference;
};

/// A tensor.cast between types that agree once refined is its source; any
/// other is a reshape view.
struct LowerTensorCast : OpRewritePattern<tensor::CastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::CastOp op,
                                PatternRewriter &rewriter) const override {
    auto from = cast<RankedTensorType>(op.getSource().getType());
    auto to = cast<RankedTensorType>(op.getType());
    bool returned = llvm::any_of(op->getUsers(), [](Operation *user) {
      return isa<func::ReturnOp>(user);
    });
    if (from == to || !returned) {
      // Users are folio ops, whose verifiers take static and dynamic dims
      // alike, so they read the more precise source.
      rewriter.replaceOp(op, op.getSource());
      return success();
    }
    if (llvm::count_if(to.getShape(), ShapedType::isDynamic) > 1)
      return failure();
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, to, op.getSource());
    return success();
  }
};

/// Integer casts of whole tensors (page-kv widens tokens and positions).
template <typename OpTy> struct LowerIntCast : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    auto from = dyn_cast<RankedTensorType>(op.getIn().getType());
    auto to = dyn_cast<RankedTensorType>(op.getType());
    if (!from || !to)
      return failure();
    auto ok = [](Type t) {
      return t.isSignlessInteger(32) || t.isSignlessInteger(64);
    };
    if (!ok(from.getElementType()) || !ok(to.getElementType()))
      return failure();
    rewriter.replaceOpWithNewOp<CastOp>(op, to, op.getIn());
    return success();
  }
};

/// Why a node without a lowering hook stayed.
std::string defaultReason(ONNXNodeOp node) {
  StringRef domain =
      node.getDomain().empty() ? StringRef(kONNXDomain) : node.getDomain();
  bool integer = llvm::any_of(node.getResultTypes(), [](Type t) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    return tensor && tensor.getElementType().isSignlessInteger();
  });
  if (integer)
    return "it computes an integer tensor (a shape or index) at run time "
           "that Folio could not fold into static shapes";
  return "Folio has no lowering for " + node.getOpType().str() + " in " +
         domain.str() + "; it lowers " + listLoweredONNXOps(domain) +
         " (and raises norms, rotary, attention, linears, embeddings and "
         "gated MLPs)";
}

struct LowerONNXPass
    : mlir::folio::impl::FolioLowerONNXPassBase<LowerONNXPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto &shapes = getAnalysis<ONNXShapeAnalysis>();
    if (!shapes.succeeded())
      return signalPassFailure();
    ONNXShapeInference &inference = shapes.get();

    // 1. Refined types. Returned values keep the signature's types; the
    // views get theirs from their patterns.
    func.walk([&](Operation *op) {
      if (isa<arith::ConstantOp, func::ReturnOp, tensor::ExpandShapeOp,
              tensor::CollapseShapeOp>(op))
        return;
      for (Value result : op->getResults()) {
        auto type = dyn_cast<RankedTensorType>(result.getType());
        if (!type || llvm::any_of(result.getUsers(), [](Operation *user) {
              return isa<func::ReturnOp>(user);
            }))
          continue;
        RankedTensorType refined = refineType(type, inference.lookup(result));
        if (refined != type)
          result.setType(refined);
      }
    });

    // 2. Lowering.
    Reasons reasons;
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    patterns.add<LowerNode>(context, inference, reasons);
    patterns.add<LowerTensorView<tensor::ExpandShapeOp>,
                 LowerTensorView<tensor::CollapseShapeOp>>(context, inference);
    patterns.add<LowerTensorCast, LowerIntCast<arith::ExtSIOp>,
                 LowerIntCast<arith::TruncIOp>>(context);
    ReshapeOp::getCanonicalizationPatterns(patterns, context);
    if (failed(applyPatternsAndFoldGreedily(func, std::move(patterns))))
      LLVM_DEBUG(llvm::dbgs() << "greedy driver did not converge\n");

    // 3. Reasons on what is left.
    func.walk([&](ONNXNodeOp node) {
      auto it = reasons.find(node.getOperation());
      std::string reason =
          it != reasons.end() ? it->second : defaultReason(node);
      node->setAttr(kLoweringErrorAttrName, StringAttr::get(context, reason));
    });
  }
};

} // namespace
