//===- PageKV.cpp - Batch x seq graph to the paged serving entry ----------===//

#include "compiler/ONNXOps/DeadOps.h"
#include "compiler/ONNXOps/Match.h"
#include "compiler/ONNXOps/ShapeInference.h"
#include "compiler/RaiseAttention/MaskAnalysis.h"
#include "compiler/RaiseAttention/PositionAnalysis.h"
#include "compiler/RaiseAttention/RaiseUtils.h"
#include "compiler/Transforms/Passes.h"
#include "compiler/Transforms/TokenwiseCheck.h"
#include "dialects/Folio/IR/FolioOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "folio-page-kv"

namespace mlir::folio {
#define GEN_PASS_DEF_FOLIOPAGEKVPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::folio

using namespace mlir;
using namespace mlir::folio;

namespace {

constexpr StringLiteral kNameAttr = "folio.onnx_name";
constexpr StringLiteral kDimNamesAttr = "folio.dim_names";

/// The imported entry's inputs and outputs, by role.
struct EntryRoles {
  BlockArgument inputIds, positionIds, attentionMask;
  llvm::DenseSet<Value> pastArgs;
  std::optional<unsigned> logitsResult;
};

FailureOr<EntryRoles> classify(func::FuncOp func) {
  EntryRoles roles;
  for (BlockArgument arg : func.getArguments()) {
    auto name =
        func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kNameAttr);
    StringRef n = name ? name.getValue() : "";
    if (n == "input_ids")
      roles.inputIds = arg;
    else if (n == "position_ids")
      roles.positionIds = arg;
    else if (n == "attention_mask")
      roles.attentionMask = arg;
    else if (n.starts_with("past_key_values.") || n.starts_with("past_key.") ||
             n.starts_with("past_value."))
      roles.pastArgs.insert(arg);
    else
      return func.emitError()
             << "input " << arg.getArgNumber() << " ('" << n
             << "') is not part of the decoder contract; expected input_ids, "
                "attention_mask, position_ids and past_key_values.N.key|value";
  }
  if (!roles.inputIds)
    return func.emitError("the model has no 'input_ids' input");
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    auto name = func.getResultAttrOfType<StringAttr>(i, kNameAttr);
    StringRef n = name ? name.getValue() : "";
    if (n == "logits")
      roles.logitsResult = i;
    else if (!n.starts_with("present"))
      return func.emitError()
             << "output " << i << " ('" << n
             << "') is not part of the decoder contract; expected logits and "
                "present.N.key|value";
  }
  if (!roles.logitsResult)
    return func.emitError("the model has no 'logits' output");
  return roles;
}

/// The step's new K (or V) rows: the second input of Concat(past, new) on
/// the sequence axis, or the value itself for a graph without cache.
FailureOr<Value> newRows(Value kv, const EntryRoles &roles,
                         AttentionOp attention, StringRef what) {
  if (ONNXNodeOp concat = matchONNX(kv, "Concat")) {
    int64_t axis = getONNXIntAttr(concat, "axis", 0);
    if (concat.getInputs().size() == 2 && (axis == 2 || axis == -2) &&
        roles.pastArgs.contains(concat.getInputs()[0]))
      return concat.getInputs()[1];
  }
  if (roles.pastArgs.contains(kv))
    return attention.emitError() << what
                                 << " comes straight from a past input with "
                                    "no new rows";
  return kv;
}

RankedTensorType permuted(RankedTensorType type, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(type.getDimSize(p));
  return RankedTensorType::get(shape, type.getElementType());
}

class Rewriter {
public:
  Rewriter(func::FuncOp func, EntryRoles roles, int64_t blockSize)
      : func(func), roles(roles), blockSize(blockSize), b(func.getContext()) {}

  LogicalResult run();

private:
  BlockArgument addArg(Type type, StringRef name, ArrayRef<StringRef> dims);
  Value transpose0213(Location loc, Value v);
  Value toTokenMajor(Location loc, Value v);
  Value fromTokenMajor(Location loc, Value v, Type originalType);
  Value asBatchOfOne(Location loc, Value flat, Type originalType);
  LogicalResult rewriteAttention(AttentionOp attention, unsigned layer);
  LogicalResult planPositions();
  LogicalResult replacePositions();
  LogicalResult rewriteLogits();
  void foldPastShapes();
  LogicalResult dropImportedInterface();

  func::FuncOp func;
  EntryRoles roles;
  int64_t blockSize;
  OpBuilder b;
  BlockArgument tokens, positions, queryStartLoc, seqLens, blockTables,
      slotMapping, logitsIndices;
  Value numTokens;
  /// Values computed inside the graph that equal `positions`.
  SmallVector<Value> positionValues;
  unsigned numOriginalArgs = 0, numOriginalResults = 0;
};

BlockArgument Rewriter::addArg(Type type, StringRef name,
                               ArrayRef<StringRef> dims) {
  unsigned index = func.getNumArguments();
  SmallVector<Attribute> dimNames;
  for (StringRef d : dims)
    dimNames.push_back(b.getStringAttr(d));
  NamedAttribute attrs[] = {
      b.getNamedAttr(kNameAttr, b.getStringAttr(name)),
      b.getNamedAttr(kDimNamesAttr, b.getArrayAttr(dimNames))};
  func.insertArgument(index, type, b.getDictionaryAttr(attrs), func.getLoc());
  return func.getArgument(index);
}

Value Rewriter::transpose0213(Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> perm = {0, 2, 1, 3};
  return b
      .create<ONNXNodeOp>(loc, TypeRange{permuted(type, perm)},
                          b.getStringAttr("Transpose"), b.getStringAttr(""),
                          b.getI64IntegerAttr(13), b.getStringAttr("page_kv"),
                          b.getDictionaryAttr(b.getNamedAttr(
                              "perm", b.getDenseI64ArrayAttr(perm))),
                          b.getDenseI64ArrayAttr({}), ValueRange{v})
      .getResult(0);
}

/// [1, H, T, D] -> [T, H, D].
Value Rewriter::toTokenMajor(Location loc, Value v) {
  Value t = transpose0213(loc, v); // [1, T, H, D]
  auto type = cast<RankedTensorType>(t.getType());
  auto unit = RankedTensorType::get(
      {1, ShapedType::kDynamic, type.getDimSize(2), type.getDimSize(3)},
      type.getElementType());
  Value cast = b.create<tensor::CastOp>(loc, unit, t);
  return b.create<tensor::CollapseShapeOp>(
      loc, cast, SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}});
}

/// [T, H, D] -> [1, H, T, D], typed as `originalType`.
Value Rewriter::fromTokenMajor(Location loc, Value v, Type originalType) {
  auto type = cast<RankedTensorType>(v.getType());
  auto unit = RankedTensorType::get(
      {1, ShapedType::kDynamic, type.getDimSize(1), type.getDimSize(2)},
      type.getElementType());
  Value expanded = b.create<tensor::ExpandShapeOp>(
      loc, unit, v, SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}},
      SmallVector<OpFoldResult>{b.getIndexAttr(1), numTokens,
                                b.getIndexAttr(type.getDimSize(1)),
                                b.getIndexAttr(type.getDimSize(2))});
  Value t = transpose0213(loc, expanded);
  if (t.getType() == originalType)
    return t;
  return b.create<tensor::CastOp>(loc, originalType, t);
}

/// [T] -> [1, T] of `originalType`'s element type and type.
Value Rewriter::asBatchOfOne(Location loc, Value flat, Type originalType) {
  auto original = cast<RankedTensorType>(originalType);
  auto flatType = cast<RankedTensorType>(flat.getType());
  Type element = original.getElementType();
  if (flatType.getElementType() != element) {
    auto widened = RankedTensorType::get(flatType.getShape(), element);
    flat = element.getIntOrFloatBitWidth() > flatType.getElementTypeBitWidth()
               ? b.create<arith::ExtSIOp>(loc, widened, flat).getResult()
               : b.create<arith::TruncIOp>(loc, widened, flat).getResult();
  }
  auto unit = RankedTensorType::get({1, ShapedType::kDynamic}, element);
  Value expanded = b.create<tensor::ExpandShapeOp>(
      loc, unit, flat, SmallVector<ReassociationIndices>{{0, 1}},
      SmallVector<OpFoldResult>{b.getIndexAttr(1), numTokens});
  if (unit == original)
    return expanded;
  return b.create<tensor::CastOp>(loc, original, expanded);
}

LogicalResult Rewriter::rewriteAttention(AttentionOp attention,
                                         unsigned layer) {
  FailureOr<Value> k = newRows(attention.getKey(), roles, attention, "key");
  FailureOr<Value> v = newRows(attention.getValue(), roles, attention, "value");
  if (failed(k) || failed(v))
    return failure();
  auto kType = cast<RankedTensorType>(k->getType());
  auto vType = cast<RankedTensorType>(v->getType());
  int64_t heads = kType.getDimSize(1), headDim = kType.getDimSize(3);
  if (ShapedType::isDynamic(heads) || ShapedType::isDynamic(headDim) ||
      vType.getDimSize(1) != heads || vType.getDimSize(3) != headDim)
    return attention.emitError()
           << "layer " << layer
           << ": KV heads and head_dim must be static and equal for K and V "
              "to page the cache, got K "
           << kType << " and V " << vType;

  auto cacheType =
      KVCacheType::get(func.getContext(), heads, headDim, blockSize,
                       kType.getElementType(), ScaleLayout::none, 0, 0);
  BlockArgument cache =
      addArg(cacheType, ("kv_cache." + Twine(layer)).str(), {});

  Location loc = attention.getLoc();
  b.setInsertionPoint(attention);
  Value q = toTokenMajor(loc, attention.getQuery());
  Value kRows = toTokenMajor(loc, *k);
  Value vRows = toTokenMajor(loc, *v);
  b.create<KVWriteOp>(loc, cache, kRows, vRows, slotMapping);
  auto paged = b.create<PagedAttentionOp>(
      loc, q.getType(), q, cache, blockTables, seqLens, queryStartLoc,
      /*k_scale=*/Value(), /*v_scale=*/Value(), attention.getScaleAttr(),
      attention.getCausalAttr(), attention.getSlidingWindowAttr(),
      attention.getSoftcapAttr());
  Value out =
      fromTokenMajor(loc, paged.getResult(), attention.getResult().getType());
  attention.getResult().replaceAllUsesWith(out);
  attention.erase();
  return success();
}

/// What the value of `v` is computed from: the graph inputs it reads the
/// values of (not only the shape), and whether a shape enters it as data
/// (Range(past_len, past_len + seq) reads no input's values).
struct ValueSources {
  llvm::SmallPtrSet<Value, 4> inputs;
  bool fromShapes = false;
};

ValueSources findValueSources(Value v) {
  ValueSources sources;
  llvm::SmallPtrSet<Operation *, 32> seen;
  SmallVector<Value> stack = {v};
  while (!stack.empty()) {
    Value value = stack.pop_back_val();
    Operation *def = value.getDefiningOp();
    if (!def) {
      sources.inputs.insert(value);
      continue;
    }
    if (!seen.insert(def).second)
      continue;
    auto node = dyn_cast<ONNXNodeOp>(def);
    if (node && (node.getOpType() == "Shape" || node.getOpType() == "Size")) {
      sources.fromShapes = true;
      continue;
    }
    llvm::append_range(stack, def->getOperands());
  }
  return sources;
}

/// `v`, then what it is computed from through Cast and the addition of a
/// constant (OPT adds 2 to its positions to index its table): the values
/// that may be the positions themselves.
SmallVector<Value> positionCandidates(Value v) {
  SmallVector<Value> chain = {v};
  while (chain.size() < 8) {
    ONNXNodeOp node = dyn_cast_or_null<ONNXNodeOp>(v.getDefiningOp());
    if (!node || !node.getDomain().empty())
      break;
    StringRef op = node.getOpType();
    if (op == "Cast" && node.getInputs().size() == 1) {
      v = node.getInputs()[0];
    } else if ((op == "Add" || op == "Sub") && node.getInputs().size() == 2 &&
               getScalarConstant(node.getInputs()[1])) {
      v = node.getInputs()[0];
    } else if (op == "Add" && node.getInputs().size() == 2 &&
               getScalarConstant(node.getInputs()[0])) {
      v = node.getInputs()[1];
    } else {
      break;
    }
    chain.push_back(v);
  }
  return chain;
}

/// Finds, before anything is rewritten, the values that stand for the
/// serving contract's `positions`. A rotary's positions and a position
/// embedding's ids (an embedding whose ids do not read input_ids) are either
/// the position_ids input, computed from it, or computed inside the graph;
/// the last must be proven equal to each token's position in its sequence
/// (provePositions), or the model is refused: a value such as Range(0, seq)
/// over the flattened batch would be wrong for every sequence but the first.
LogicalResult Rewriter::planPositions() {
  // Facts only when some value needs a proof: most graphs have
  // position_ids.
  std::optional<ONNXShapeInference> inference;
  int64_t maxContext = 0;
  if (auto attr = func->getAttrOfType<IntegerAttr>(kMaxContextAttrName))
    maxContext = attr.getInt();
  llvm::SmallPtrSet<Value, 4> proven;
  int64_t provenContext = 0;
  auto settle = [&](Operation *consumer, Value v,
                    StringRef what) -> LogicalResult {
    ValueSources sources = findValueSources(v);
    if (sources.inputs.empty() && !sources.fromShapes)
      return success(); // Constant: the same for every token.
    std::string firstError;
    Operation *firstErrorOp = nullptr;
    for (Value candidate : positionCandidates(v)) {
      if (candidate == roles.positionIds || proven.contains(candidate))
        return success();
      if (!inference) {
        inference.emplace(func.getContext());
        if (failed(inference->run(func)))
          return failure();
      }
      int64_t context = 0;
      std::string error;
      Operation *errorOp = nullptr;
      if (succeeded(provePositions(func, *inference, candidate, maxContext,
                                   context, error, errorOp))) {
        LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] positions proven up to "
                                << context << ": " << candidate << "\n");
        proven.insert(candidate);
        positionValues.push_back(candidate);
        provenContext =
            provenContext ? std::min(provenContext, context) : context;
        return success();
      }
      if (firstError.empty()) {
        firstError = error;
        firstErrorOp = errorOp;
      }
    }
    std::string producer = "a graph input";
    if (Operation *def = v.getDefiningOp()) {
      auto node = dyn_cast<ONNXNodeOp>(def);
      producer = node && !node.getNodeName().empty()
                     ? "node '" + node.getNodeName().str() + "'"
                     : "'" + def->getName().getStringRef().str() + "'";
    }
    InFlightDiagnostic diag =
        consumer->emitError()
        << "the " << what << " are computed inside the graph (by " << producer
        << ") and cannot be proven equal to each token's position in its "
           "sequence, which is what serving provides: "
        << firstError
        << "; supported are a position_ids input, past length + "
           "Range(seq), Range(0, seq) without a KV cache, and "
           "cumsum(attention_mask) - 1 (GroupQueryAttention's rotary: "
           "seqlens_k = ReduceSum(attention_mask) - 1)";
    if (firstErrorOp && firstErrorOp != consumer)
      diag.attachNote(firstErrorOp->getLoc()) << "evaluation stopped here";
    return failure();
  };
  WalkResult walk = func.walk([&](Operation *op) {
    LogicalResult result = success();
    if (auto rotary = dyn_cast<RotaryOp>(op)) {
      result = settle(op, rotary.getPositions(), "positions of this rotary");
    } else if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
      // Token embeddings read input_ids; the others are indexed by position.
      if (!findValueSources(embedding.getIds()).inputs.contains(roles.inputIds))
        result =
            settle(op, embedding.getIds(), "ids of this position embedding");
    }
    return failed(result) ? WalkResult::interrupt() : WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (provenContext > 0 && (maxContext == 0 || provenContext < maxContext))
    func->setAttr(kMaxContextAttrName, b.getI64IntegerAttr(provenContext));
  return success();
}

/// Positions come from `positions`: the position_ids input and the values
/// planPositions proved equal to it.
LogicalResult Rewriter::replacePositions() {
  b.setInsertionPointAfter(numTokens.getDefiningOp());
  if (roles.positionIds) {
    Value pos =
        asBatchOfOne(func.getLoc(), positions, roles.positionIds.getType());
    roles.positionIds.replaceAllUsesWith(pos);
  }
  for (Value value : positionValues) {
    Value pos = asBatchOfOne(value.getLoc(), positions, value.getType());
    value.replaceAllUsesWith(pos);
  }
  return success();
}

/// logits [1, T, V] -> gather_rows(logits_indices) -> [R, V].
LogicalResult Rewriter::rewriteLogits() {
  auto ret = cast<func::ReturnOp>(func.front().getTerminator());
  Value logits = ret.getOperand(*roles.logitsResult);
  auto type = dyn_cast<RankedTensorType>(logits.getType());
  if (!type || type.getRank() != 3)
    return func.emitError() << "logits must be rank 3 [batch, seq, vocab], got "
                            << logits.getType();
  b.setInsertionPoint(ret);
  Location loc = ret.getLoc();
  auto unit = RankedTensorType::get(
      {1, ShapedType::kDynamic, type.getDimSize(2)}, type.getElementType());
  Value cast = b.create<tensor::CastOp>(loc, unit, logits);
  Value flat = b.create<tensor::CollapseShapeOp>(
      loc, cast, SmallVector<ReassociationIndices>{{0, 1}, {2}});
  auto rowsType = RankedTensorType::get(
      {ShapedType::kDynamic, type.getDimSize(2)}, type.getElementType());
  Value rows =
      b.create<GatherRowsOp>(loc, rowsType, flat, logitsIndices).getResult();
  b.create<func::ReturnOp>(loc, rows);
  ret.erase();
  return success();
}

/// Dim `d` of a past input as the paged entry knows it: batch 1 (the tokens
/// are one flattened sequence, as input_ids becomes [1, T]) and the static
/// heads and head_dim; not the past length, which differs per sequence.
static std::optional<int64_t> pagedPastDim(RankedTensorType type, int64_t d) {
  if (d == 0)
    return 1;
  if (d == 2 || type.isDynamicDim(d))
    return std::nullopt;
  return type.getDimSize(d);
}

/// Replaces `value` with the i64 constant `values` if its type holds them.
static bool replaceWithConstant(OpBuilder &b, Value value,
                                ArrayRef<int64_t> values) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isInteger(64) ||
      type.getNumElements() != int64_t(values.size()))
    return false;
  b.setInsertionPointAfterValue(value);
  value.replaceAllUsesWith(
      b.create<arith::ConstantOp>(value.getLoc(),
                                  DenseElementsAttr::get(type, values))
          .getResult());
  return true;
}

/// Replaces reads of a past input's batch, heads or head_dim through Shape
/// (its start/end range, or Gather of constant indices from it) with
/// constants: torch.export takes the batch size from the first layer's past.
/// A read of the past length is left for dropImportedInterface to refuse.
void Rewriter::foldPastShapes() {
  for (Value past : roles.pastArgs) {
    auto type = dyn_cast<RankedTensorType>(past.getType());
    if (!type || type.getRank() != 4)
      continue;
    for (Operation *user : llvm::make_early_inc_range(past.getUsers())) {
      auto shape = dyn_cast<ONNXNodeOp>(user);
      if (!shape || shape.getOpType() != "Shape" || !shape.getDomain().empty())
        continue;
      auto clampDim = [](int64_t d) {
        return std::clamp<int64_t>(d < 0 ? d + 4 : d, 0, 4);
      };
      int64_t start = clampDim(getONNXIntAttr(shape, "start", 0));
      int64_t end = clampDim(getONNXIntAttr(shape, "end", 4));
      SmallVector<std::optional<int64_t>> dims;
      for (int64_t d = start; d < end; ++d)
        dims.push_back(pagedPastDim(type, d));
      Value result = shape.getResult(0);
      if (llvm::all_of(dims, [](auto d) { return d.has_value(); })) {
        SmallVector<int64_t> values;
        for (std::optional<int64_t> d : dims)
          values.push_back(*d);
        replaceWithConstant(b, result, values);
        continue;
      }
      for (Operation *use : llvm::make_early_inc_range(result.getUsers())) {
        auto gather = dyn_cast<ONNXNodeOp>(use);
        if (!gather || gather.getOpType() != "Gather" ||
            !gather.getDomain().empty() || gather.getInputs().size() != 2 ||
            gather.getInputs()[0] != result ||
            getONNXIntAttr(gather, "axis", 0) != 0)
          continue;
        std::optional<SmallVector<int64_t>> indices =
            getIntConstants(gather.getInputs()[1]);
        if (!indices)
          continue;
        SmallVector<int64_t> values;
        for (int64_t i : *indices) {
          std::optional<int64_t> at = normalizeAxis(i, int64_t(dims.size()));
          if (!at || !dims[*at])
            break;
          values.push_back(*dims[*at]);
        }
        if (values.size() == indices->size())
          replaceWithConstant(b, gather.getResult(0), values);
      }
    }
  }
}

/// Drops the imported inputs and outputs; fails naming what still uses one.
LogicalResult Rewriter::dropImportedInterface() {
  // Results first: present.* keep the past inputs alive through Concat.
  SmallVector<Type> argTypes(func.getArgumentTypes());
  func.setType(
      FunctionType::get(func.getContext(), argTypes,
                        func.front().getTerminator()->getOperandTypes()));
  func.setAllResultAttrs(ArrayRef<DictionaryAttr>{b.getDictionaryAttr(
      b.getNamedAttr(kNameAttr, b.getStringAttr("logits")))});

  eraseDeadOps(func);
  foldPastShapes();
  eraseDeadOps(func);

  llvm::BitVector drop(func.getNumArguments());
  for (unsigned i = 0; i < numOriginalArgs; ++i) {
    BlockArgument arg = func.getArgument(i);
    if (!arg.use_empty()) {
      Operation *user = *arg.getUsers().begin();
      auto name = func.getArgAttrOfType<StringAttr>(i, kNameAttr);
      return user->emitError()
             << "input '" << (name ? name.getValue() : "?")
             << "' is still used here after paging the KV cache; outside "
                "attention masks, positions and the KV concat, a decoder "
                "may not read it";
    }
    drop.set(i);
  }
  func.eraseArguments(drop);
  return success();
}

LogicalResult Rewriter::run() {
  numOriginalArgs = func.getNumArguments();
  numOriginalResults = func.getNumResults();
  SmallVector<AttentionOp> attentions;
  func.walk([&](AttentionOp op) { attentions.push_back(op); });
  if (attentions.empty())
    return func.emitError(
        "no folio.attention to page: run the raise passes first, or the "
        "model's attention was not recognised");
  if (failed(planPositions()))
    return failure();

  MLIRContext *ctx = func.getContext();
  auto i32 = IntegerType::get(ctx, 32), i64 = IntegerType::get(ctx, 64);
  auto vec = [](Type t) {
    return RankedTensorType::get({ShapedType::kDynamic}, t);
  };
  tokens = addArg(vec(i32), kServingArgNames[0], {kNumTokensDim});
  positions = addArg(vec(i32), kServingArgNames[1], {kNumTokensDim});
  queryStartLoc = addArg(vec(i32), kServingArgNames[2], {"num_seqs_plus_1"});
  seqLens = addArg(vec(i32), kServingArgNames[3], {"num_seqs"});
  blockTables = addArg(
      RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic}, i32),
      kServingArgNames[4], {"num_seqs", "max_blocks"});
  slotMapping = addArg(vec(i64), kServingArgNames[5], {kNumTokensDim});
  logitsIndices = addArg(vec(i32), kServingArgNames[6], {"num_rows"});

  b.setInsertionPointToStart(&func.front());
  numTokens = b.create<tensor::DimOp>(func.getLoc(), tokens, 0);
  Value ids = asBatchOfOne(func.getLoc(), tokens, roles.inputIds.getType());
  roles.inputIds.replaceAllUsesWith(ids);

  for (auto [layer, attention] : llvm::enumerate(attentions))
    if (failed(rewriteAttention(attention, layer)))
      return failure();
  if (failed(replacePositions()) || failed(rewriteLogits()) ||
      failed(dropImportedInterface()))
    return failure();
  return checkTokenwise(func);
}

struct PageKVPass : mlir::folio::impl::FolioPageKVPassBase<PageKVPass> {
  using FolioPageKVPassBase::FolioPageKVPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(entry);
    if (!func) {
      module.emitError() << "no function '" << entry << "' to page";
      return signalPassFailure();
    }
    int64_t blockSize = 16;
    if (auto attr = module->getAttrOfType<IntegerAttr>(kBlockSizeAttrName))
      blockSize = attr.getInt();
    FailureOr<EntryRoles> roles = classify(func);
    if (failed(roles) || failed(Rewriter(func, *roles, blockSize).run()))
      return signalPassFailure();
    SymbolTable symbols(module);
    if (failed(symbols.rename(func, "forward")))
      return signalPassFailure();
  }
};

} // namespace
