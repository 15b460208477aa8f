//===- FoldEmbeddingOffsets.cpp - Position offsets into table rows --------===//
//
// OPT's learned position embedding reads row position + 2 of its table.
// Imported literally that is an integer kernel per step (widen, add) in
// front of the gather, and, since the table is then not indexed by the
// positions themselves, no `max_positions` for the plan. The offset belongs
// in the table: rows [c, rows) indexed by the positions give the same rows
// for every position the serving contract allows (positions are never
// negative, and the gather refuses negative rows either way).
//
//===----------------------------------------------------------------------===//

#include "dialects/Folio/IR/FolioOps.h"
#include "dialects/Folio/Transforms/ConstantBlobs.h"
#include "dialects/Folio/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <string>

namespace mlir::folio {
#define GEN_PASS_DEF_FOLIOFOLDEMBEDDINGOFFSETSPASS
#include "dialects/Folio/Transforms/Passes.h.inc"
} // namespace mlir::folio

using namespace mlir;
using namespace mlir::folio;

namespace {

/// The value of a one-element (or splat) integer constant.
std::optional<int64_t> integerConstant(Value v) {
  auto constant = v.getDefiningOp<arith::ConstantOp>();
  auto dense =
      constant ? dyn_cast<DenseIntElementsAttr>(constant.getValue()) : nullptr;
  if (!dense || (!dense.isSplat() && dense.getNumElements() != 1))
    return std::nullopt;
  return dense.getSplatValue<APInt>().getSExtValue();
}

/// Whether `v` is the entry's `positions` argument, reached through
/// integer widening casts and reshapes (so it holds the same values, none
/// negative).
bool isPositions(Value v, func::FuncOp func) {
  for (int depth = 0; depth < 16; ++depth) {
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() != &func.getBody().front())
        return false;
      auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                    "folio.onnx_name");
      return name && name.getValue() == kServingArgNames[1];
    }
    Operation *def = v.getDefiningOp();
    if (auto reshape = dyn_cast_or_null<ReshapeOp>(def)) {
      v = reshape.getInput();
      continue;
    }
    auto cast = dyn_cast_or_null<CastOp>(def);
    if (!cast)
      return false;
    auto from =
        dyn_cast<IntegerType>(getElementTypeOrSelf(cast.getInput().getType()));
    auto to =
        dyn_cast<IntegerType>(getElementTypeOrSelf(cast.getResult().getType()));
    if (!from || !to || to.getWidth() < from.getWidth())
      return false;
    v = cast.getInput();
  }
  return false;
}

/// Rewrites `emb` if it reads a constant table at positions + c. Returns
/// whether it did.
bool fold(EmbeddingOp emb, func::FuncOp func, int &index) {
  auto add = emb.getIds().getDefiningOp<BinaryOp>();
  if (!add || add.getKind() != BinaryKind::add)
    return false;
  Value positions = add.getLhs();
  std::optional<int64_t> offset = integerConstant(add.getRhs());
  if (!offset) {
    positions = add.getRhs();
    offset = integerConstant(add.getLhs());
  }
  auto tableType = dyn_cast<RankedTensorType>(emb.getTable().getType());
  if (!offset || !tableType || !tableType.hasStaticShape() ||
      tableType.getRank() != 2 || *offset <= 0 ||
      *offset >= tableType.getDimSize(0) ||
      positions.getType() != add.getType() || !isPositions(positions, func))
    return false;
  std::optional<std::vector<char>> bytes = constantBytes(emb.getTable());
  if (!bytes)
    return false;
  const int64_t rows = tableType.getDimSize(0);
  const size_t rowBytes = bytes->size() / size_t(rows);
  std::vector<char> kept(bytes->begin() + size_t(*offset) * rowBytes,
                         bytes->end());
  auto keptType = RankedTensorType::get(
      {rows - *offset, tableType.getDimSize(1)}, tableType.getElementType());
  OpBuilder b(emb);
  Value table =
      createConstant(b, emb.getLoc(), keptType,
                     "folio_table_rows_" + std::to_string(index++), kept);
  Operation *oldTable = emb.getTable().getDefiningOp();
  emb.getTableMutable().assign(table);
  emb.getIdsMutable().assign(positions);
  if (add->use_empty()) {
    Operation *lhs = add.getLhs().getDefiningOp();
    Operation *rhs = add.getRhs().getDefiningOp();
    add->erase();
    for (Operation *op : {lhs, rhs})
      if (op && isa<arith::ConstantOp>(op) && op->use_empty())
        op->erase();
  }
  if (oldTable->use_empty())
    oldTable->erase();
  return true;
}

struct FoldEmbeddingOffsetsPass
    : mlir::folio::impl::FolioFoldEmbeddingOffsetsPassBase<
          FoldEmbeddingOffsetsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<EmbeddingOp> embeddings;
    func.walk([&](EmbeddingOp op) { embeddings.push_back(op); });
    int index = 0;
    for (EmbeddingOp op : embeddings)
      fold(op, func, index);
  }
};

} // namespace
