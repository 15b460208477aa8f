//===- VerifyServingContract.cpp - The page-kv phase boundary -------------===//

#include "dialects/Folio/IR/FolioOps.h"
#include "dialects/Folio/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#define DEBUG_TYPE "folio-verify-serving-contract"

namespace mlir::folio {
#define GEN_PASS_DEF_FOLIOVERIFYSERVINGCONTRACTPASS
#include "dialects/Folio/Transforms/Passes.h.inc"
} // namespace mlir::folio

using namespace mlir;
using namespace mlir::folio;

namespace {

LogicalResult verifyEntry(func::FuncOp func) {
  MLIRContext *ctx = func.getContext();
  auto i32 = IntegerType::get(ctx, 32), i64 = IntegerType::get(ctx, 64);
  int64_t dyn = ShapedType::kDynamic;
  Type expected[] = {
      RankedTensorType::get({dyn}, i32),      RankedTensorType::get({dyn}, i32),
      RankedTensorType::get({dyn}, i32),      RankedTensorType::get({dyn}, i32),
      RankedTensorType::get({dyn, dyn}, i32), RankedTensorType::get({dyn}, i64),
      RankedTensorType::get({dyn}, i32)};
  unsigned numFixed = std::size(kServingArgNames);
  if (func.getNumArguments() <= numFixed)
    return func.emitError() << "forward needs the " << numFixed
                            << " serving arguments and at least one KV cache, "
                               "got "
                            << func.getNumArguments() << " arguments";
  for (unsigned i = 0; i < numFixed; ++i) {
    auto name = func.getArgAttrOfType<StringAttr>(i, "folio.onnx_name");
    if (!name || name.getValue() != kServingArgNames[i] ||
        func.getArgument(i).getType() != expected[i])
      return func.emitError()
             << "argument " << i << " must be '" << kServingArgNames[i]
             << "' of type " << expected[i] << ", got "
             << (name ? name.getValue() : "<unnamed>") << " of type "
             << func.getArgument(i).getType();
  }
  for (unsigned i = numFixed; i < func.getNumArguments(); ++i) {
    BlockArgument cache = func.getArgument(i);
    if (!isa<KVCacheType>(cache.getType()))
      return func.emitError()
             << "argument " << i << " must be a !folio.kv_cache, got "
             << cache.getType();
    unsigned writes = 0, reads = 0;
    Operation *firstWrite = nullptr;
    for (Operation *user : cache.getUsers()) {
      if (isa<KVWriteOp>(user)) {
        ++writes;
        firstWrite = user;
      } else if (auto read = dyn_cast<PagedAttentionOp>(user)) {
        ++reads;
        if (firstWrite && read->isBeforeInBlock(firstWrite))
          return read.emitError("reads the KV cache before this step's rows "
                                "are written");
      } else {
        return user->emitError() << "uses KV cache argument " << i
                                 << "; only kv_write and paged_attention may";
      }
    }
    if (writes != 1 || reads < 1)
      return func.emitError() << "KV cache argument " << i << " has " << writes
                              << " kv_write and " << reads
                              << " paged_attention users; each layer needs "
                                 "exactly one write and at least one read";
  }
  if (func.getNumResults() != 1)
    return func.emitError() << "forward must return only the logits, got "
                            << func.getNumResults() << " results";
  auto logits = dyn_cast<RankedTensorType>(func.getResultTypes()[0]);
  if (!logits || logits.getRank() != 2 ||
      !isa<FloatType>(logits.getElementType()))
    return func.emitError() << "forward must return logits[rows, vocab] as "
                               "a float tensor, got "
                            << func.getResultTypes()[0];
  WalkResult walk = func.walk([](AttentionOp attention) {
    attention.emitError("folio.attention is left in the serving entry");
    return WalkResult::interrupt();
  });
  return failure(walk.wasInterrupted());
}

struct VerifyServingContractPass
    : mlir::folio::impl::FolioVerifyServingContractPassBase<
          VerifyServingContractPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("forward");
    if (!func) {
      module.emitError("no 'forward' entry: the module has not been through "
                       "folio-page-kv");
      return signalPassFailure();
    }
    if (failed(verifyEntry(func)))
      signalPassFailure();
  }
};

} // namespace
