//===- Speculative.cpp - The verify entries of speculative decoding -------===//
//
// Speculative decoding verifies a step's drafts against the target's logits
// with `folio.spec_verify`. That op is compiled like the rest: it gets entry
// functions of its own next to `forward`, which the plan carries and every
// executor runs, rather than a runtime routine outside the plan. The
// runtime's sampler has already turned the logits into each row's final
// distribution, so the entries take f32 logits whatever the model computes
// in, and only the vocabulary comes from `forward`.
//
//===----------------------------------------------------------------------===//

#include "dialects/Folio/IR/FolioOps.h"
#include "dialects/Folio/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"

#define DEBUG_TYPE "folio-speculative"

namespace mlir::folio {
#define GEN_PASS_DEF_FOLIOSPECULATIVEPASS
#include "dialects/Folio/Transforms/Passes.h.inc"
} // namespace mlir::folio

using namespace mlir;
using namespace mlir::folio;

namespace {

constexpr StringLiteral kArgNameAttr = "folio.onnx_name";

/// One verify entry: its name, mode and which optional operands it takes.
struct EntrySpec {
  StringLiteral name;
  SpecVerifyMode mode;
  bool draftProbs;
  bool uniforms;
};

constexpr EntrySpec kEntries[] = {
    {kVerifyGreedyEntry, SpecVerifyMode::greedy, false, false},
    {kVerifySampleEntry, SpecVerifyMode::sample, true, true},
    {kVerifySampleOneHotEntry, SpecVerifyMode::sample, false, true},
};

struct SpeculativePass
    : mlir::folio::impl::FolioSpeculativePassBase<SpeculativePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward || forward.isExternal())
      return;
    FunctionType forwardType = forward.getFunctionType();
    auto logits = forwardType.getNumResults() == 1
                      ? dyn_cast<RankedTensorType>(forwardType.getResult(0))
                      : RankedTensorType();
    if (!logits || logits.getRank() != 2 || logits.isDynamicDim(1)) {
      forward.emitError()
          << "folio-speculative: forward must return one logits tensor "
             "[rows, vocab] with a static vocab (the verify entries take "
             "it), got ("
          << forwardType.getResults() << ")";
      return signalPassFailure();
    }
    int64_t vocab = logits.getDimSize(1);
    for (const EntrySpec &spec : kEntries)
      if (failed(addEntry(module, spec, vocab)))
        return signalPassFailure();
  }

  LogicalResult addEntry(ModuleOp module, const EntrySpec &spec,
                         int64_t vocab) {
    MLIRContext *ctx = module.getContext();
    OpBuilder b(ctx);
    constexpr int64_t dyn = ShapedType::kDynamic;
    Type f32 = b.getF32Type(), i32 = b.getI32Type();
    auto logitsType = RankedTensorType::get({dyn, dyn, vocab}, f32);
    auto draftsType = RankedTensorType::get({dyn, dyn}, i32);
    auto probsType = RankedTensorType::get({dyn, dyn, vocab}, f32);
    auto uniformsType = RankedTensorType::get({dyn, dyn}, f32);
    auto acceptedType = RankedTensorType::get({dyn}, i32);
    auto tokensType = RankedTensorType::get({dyn, dyn}, i32);

    // Arguments in spec_verify's operand order, each with its name.
    SmallVector<Type> argTypes = {logitsType, draftsType};
    SmallVector<StringRef> argNames = {kVerifyArgNames[0], kVerifyArgNames[1]};
    if (spec.draftProbs) {
      argTypes.push_back(probsType);
      argNames.push_back(kVerifyArgNames[2]);
    }
    if (spec.uniforms) {
      argTypes.push_back(uniformsType);
      argNames.push_back(kVerifyArgNames[3]);
    }
    auto type = b.getFunctionType(argTypes, {acceptedType, tokensType});

    if (Operation *existing = SymbolTable::lookupSymbolIn(module, spec.name)) {
      auto func = dyn_cast<func::FuncOp>(existing);
      if (func && !func.isExternal() && func.getFunctionType() == type &&
          llvm::all_of(llvm::enumerate(argNames), [&](auto arg) {
            auto name = func.getArgAttrOfType<StringAttr>(unsigned(arg.index()),
                                                          kArgNameAttr);
            return name && name.getValue() == arg.value();
          }))
        return success();
      return existing->emitError()
             << "folio-speculative: the symbol '" << spec.name
             << "' is taken by something other than the verify entry "
                "(a function of type "
             << type << " whose arguments are named "
             << llvm::join(argNames, ", ") << "); rename it";
    }

    Location loc = NameLoc::get(b.getStringAttr(spec.name));
    b.setInsertionPointToEnd(module.getBody());
    auto func = b.create<func::FuncOp>(loc, spec.name, type);
    for (auto [i, name] : llvm::enumerate(argNames))
      func.setArgAttr(i, kArgNameAttr, b.getStringAttr(name));
    Block *body = func.addEntryBlock();
    b.setInsertionPointToStart(body);
    unsigned next = 2;
    Value probs = spec.draftProbs ? body->getArgument(next++) : Value();
    Value uniforms = spec.uniforms ? body->getArgument(next++) : Value();
    auto verify = b.create<SpecVerifyOp>(
        loc, acceptedType, tokensType, SpecVerifyModeAttr::get(ctx, spec.mode),
        body->getArgument(0), body->getArgument(1), probs, uniforms);
    b.create<func::ReturnOp>(loc, verify.getResults());
    return success();
  }
};

} // namespace
