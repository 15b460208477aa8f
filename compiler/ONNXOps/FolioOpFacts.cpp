//===- FolioOpFacts.cpp - Symbolic dims through folio and tensor ops ------===//
//
// Once raising has replaced subgraphs by folio ops, and page-kv has added
// reshapes, later analyses still need symbolic dims through them.
//
//===----------------------------------------------------------------------===//

#include "compiler/ONNXOps/ShapeInference.h"

#include "dialects/Folio/IR/FolioOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::folio;

using Dims = SmallVector<AffineExpr, 4>;

namespace {

/// The dims known for `v`: its facts, refined by constants in its type.
std::optional<Dims> dimsOf(ONNXShapeInference &engine, Value v) {
  const ONNXValueFacts *facts = engine.lookup(v);
  if (facts && facts->dims)
    return *facts->dims;
  return engine.factsForType(v.getType()).dims;
}

AffineExpr cst(MLIRContext *ctx, int64_t v) {
  return getAffineConstantExpr(v, ctx);
}

/// Dims of a result: `dims` where the type leaves a dim dynamic, the type's
/// constant otherwise.
ONNXValueFacts withDims(ONNXShapeInference &engine, Value result,
                        std::optional<Dims> dims) {
  ONNXValueFacts facts = engine.factsForType(result.getType());
  if (!dims || !facts.dims || dims->size() != facts.dims->size())
    return facts;
  for (auto [known, inferred] : llvm::zip(*facts.dims, *dims))
    if (!getConstantDim(known))
      known = inferred;
  return facts;
}

/// The symbolic value of an index-typed size: a constant, or `tensor.dim`
/// of a value whose dims are known; null otherwise.
AffineExpr dimOfSize(ONNXShapeInference &engine, OpFoldResult size) {
  MLIRContext *ctx = engine.getContext();
  if (std::optional<int64_t> c = getConstantIntValue(size))
    return cst(ctx, *c);
  auto dim = dyn_cast_if_present<Value>(size)
                 ? cast<Value>(size).getDefiningOp<tensor::DimOp>()
                 : tensor::DimOp();
  if (!dim)
    return AffineExpr();
  std::optional<int64_t> index = dim.getConstantIndex();
  std::optional<Dims> dims = dimsOf(engine, dim.getSource());
  if (!index || !dims || *index < 0 || *index >= int64_t(dims->size()))
    return AffineExpr();
  return (*dims)[*index];
}

} // namespace

std::optional<ONNXValueFacts>
mlir::folio::inferNonONNXOp(Operation *op, ONNXShapeInference &engine) {
  if (op->getNumResults() != 1)
    return std::nullopt;
  Value result = op->getResult(0);
  MLIRContext *ctx = op->getContext();
  auto sameAs = [&](Value input) {
    return withDims(engine, result, dimsOf(engine, input));
  };
  return llvm::TypeSwitch<Operation *, std::optional<ONNXValueFacts>>(op)
      .Case<RMSNormOp, LayerNormOp, RotaryOp, GatedMLPOp, PagedAttentionOp>(
          [&](auto typed) { return sameAs(typed->getOperand(0)); })
      .Case<EmbeddingOp>([&](EmbeddingOp e) {
        std::optional<Dims> dims = dimsOf(engine, e.getIds());
        if (dims)
          dims->push_back(cst(ctx, e.getTable().getType().getDimSize(1)));
        return withDims(engine, result, dims);
      })
      .Case<LinearOp>([&](LinearOp l) {
        std::optional<Dims> dims = dimsOf(engine, l.getInput());
        auto w = cast<RankedTensorType>(l.getWeight().getType());
        int64_t n =
            w.getDimSize(l.getWeightLayout() == WeightLayout::in_out ? 1 : 0);
        if (dims && !dims->empty())
          dims->back() = ShapedType::isDynamic(n) ? AffineExpr() : cst(ctx, n);
        return withDims(engine, result, dims);
      })
      .Case<AttentionOp>([&](AttentionOp a) {
        std::optional<Dims> q = dimsOf(engine, a.getQuery()),
                            v = dimsOf(engine, a.getValue());
        std::optional<Dims> dims;
        if (q && v && q->size() == 4 && v->size() == 4)
          dims = Dims{(*q)[0], (*q)[1], (*q)[2], (*v)[3]};
        return withDims(engine, result, dims);
      })
      .Case<GatherRowsOp>([&](GatherRowsOp g) {
        std::optional<Dims> rows = dimsOf(engine, g.getIndices()),
                            input = dimsOf(engine, g.getInput());
        std::optional<Dims> dims;
        if (rows && input && rows->size() == 1 && input->size() == 2)
          dims = Dims{(*rows)[0], (*input)[1]};
        return withDims(engine, result, dims);
      })
      .Case<tensor::CastOp, arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp,
            arith::SIToFPOp, arith::FPToSIOp, arith::ExtFOp, arith::TruncFOp>(
          [&](auto typed) { return sameAs(typed->getOperand(0)); })
      .Case<tensor::ExpandShapeOp>([&](tensor::ExpandShapeOp e) {
        std::optional<Dims> in = dimsOf(engine, e.getSrc());
        auto outType = e.getResultType();
        std::optional<Dims> dims;
        if (in) {
          dims.emplace(outType.getRank(), AffineExpr());
          for (auto [i, group] : llvm::enumerate(e.getReassociationIndices())) {
            // One dynamic dim in the group takes the whole input dim.
            SmallVector<int64_t> dynamic;
            for (int64_t d : group)
              if (outType.isDynamicDim(d))
                dynamic.push_back(d);
            if (dynamic.size() == 1)
              (*dims)[dynamic[0]] = (*in)[i];
          }
          // Several dynamic dims in a group: the output_shape operands say
          // what each is (constants, or dims read off other tensors).
          Builder builder(ctx);
          for (auto [d, size] : llvm::enumerate(getMixedValues(
                   e.getStaticOutputShape(), e.getOutputShape(), builder)))
            if (!(*dims)[d])
              (*dims)[d] = dimOfSize(engine, size);
        }
        return withDims(engine, result, dims);
      })
      .Case<tensor::CollapseShapeOp>([&](tensor::CollapseShapeOp c) {
        std::optional<Dims> in = dimsOf(engine, c.getSrc());
        std::optional<Dims> dims;
        if (in) {
          dims.emplace();
          for (const ReassociationIndices &group :
               c.getReassociationIndices()) {
            AffineExpr product = cst(ctx, 1);
            for (int64_t d : group)
              product = product && (*in)[d] ? product * (*in)[d] : AffineExpr();
            dims->push_back(product);
          }
        }
        return withDims(engine, result, dims);
      })
      .Default([](Operation *) { return std::nullopt; });
}
