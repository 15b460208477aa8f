//===- VerifyLowered.cpp - The lowering phase boundary --------------------===//
//
// After folio-lower-onnx the serving entry must be a program over folio ops
// only: the plan lowering and every executor take this closed set and
// nothing else. Any op outside it stops the compiler here, with the node
// and the reason, rather than at load time in a runtime that cannot run it.
//
//===----------------------------------------------------------------------===//

#include "dialects/Folio/IR/ConstantData.h"
#include "dialects/Folio/IR/FolioOps.h"
#include "dialects/Folio/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#define DEBUG_TYPE "folio-verify-lowered"

namespace mlir::folio {
#define GEN_PASS_DEF_FOLIOVERIFYLOWEREDPASS
#include "dialects/Folio/Transforms/Passes.h.inc"
} // namespace mlir::folio

using namespace mlir;
using namespace mlir::folio;

namespace {

LogicalResult verifyOp(Operation *op) {
  if (auto node = dyn_cast<ONNXNodeOp>(op)) {
    InFlightDiagnostic diag = op->emitError();
    diag << "ONNX node '" << node.getNodeName() << "' (op " << node.getOpType()
         << ", domain "
         << (node.getDomain().empty() ? StringRef("ai.onnx") : node.getDomain())
         << ", opset " << node.getOpset() << ") was not lowered to folio ops";
    if (auto reason = op->getAttrOfType<StringAttr>(kLoweringErrorAttrName))
      diag << ": " << reason.getValue();
    return failure();
  }
  if (isa<AttentionOp>(op))
    return op->emitError()
           << "folio.attention is left after page-kv; the serving entry "
              "reads the KV cache through folio.paged_attention";
  // A quantized weight (over constants) is data the plan stores packed;
  // over computed values it would be work no kernel does.
  if (isa<QuantizeOp>(op) || (isa<DequantizeOp>(op) && !isWeightDequantize(op)))
    return op->emitError() << "'" << op->getName()
                           << "' has no kernel in plans yet; the serving "
                              "entry cannot use it"
                           << (isa<DequantizeOp>(op)
                                   ? " (only weights, over constants, are "
                                     "dequantized: the plan stores them)"
                                   : "");
  // Verification runs in entries of its own (folio-speculative), after the
  // sampler has processed the logits forward returns.
  if (isa<SpecVerifyOp>(op) &&
      op->getParentOfType<func::FuncOp>().getName() == "forward")
    return op->emitError()
           << "'folio.spec_verify' runs in the verify entries ("
           << kVerifyGreedyEntry << ", " << kVerifySampleEntry << ", "
           << kVerifySampleOneHotEntry
           << ", added by folio-speculative), not in the serving entry "
              "'forward'";
  if (isa<FolioDialect>(op->getDialect()) || isa<func::FuncOp>(op) ||
      isa<func::ReturnOp>(op))
    return success();
  if (auto constant = dyn_cast<arith::ConstantOp>(op))
    if (isa<ElementsAttr>(constant.getValue()))
      return success();
  return op->emitError() << "'" << op->getName()
                         << "' is not part of the lowered form (folio ops, "
                            "tensor constants and the return)";
}

struct VerifyLoweredPass
    : mlir::folio::impl::FolioVerifyLoweredPassBase<VerifyLoweredPass> {
  void runOnOperation() override {
    bool failed = false;
    for (auto func : getOperation().getOps<func::FuncOp>())
      func.walk([&](Operation *op) {
        if (op != func.getOperation() && mlir::failed(verifyOp(op)))
          failed = true;
      });
    if (failed)
      signalPassFailure();
  }
};

} // namespace
