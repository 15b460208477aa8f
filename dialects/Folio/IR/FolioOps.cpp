//===- FolioOps.cpp - folio dialect op verifiers --------------------------===//
//
// Verifiers check only what the types cannot: how operand shapes and
// attributes relate. Dynamic dims are compatible with anything; the runtime
// checks them again when it binds real buffers.
//
//===----------------------------------------------------------------------===//

#include "dialects/Folio/IR/FolioOps.h"
#include "dialects/Folio/IR/VerifierUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>
#include <sstream>

using namespace mlir;
using namespace mlir::folio;
using namespace mlir::folio::detail;

namespace {

/// A double as a person writes it ("0.5", "1e-05"), not "5.000000e-01".
std::string num(double value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

/// Checks a tensor's rank, naming it and its expected layout on failure.
LogicalResult checkRank(Operation *op, Value v, StringRef name, int64_t rank,
                        StringRef layout) {
  int64_t actual = tensorOf(v).getRank();
  if (actual == rank)
    return success();
  return op->emitOpError() << name << " must be rank " << rank << " " << layout
                           << ", got rank " << actual;
}

/// Checks that dim `i` of `a` and dim `j` of `b` can be equal.
LogicalResult checkDim(Operation *op, Value a, StringRef aName, int64_t i,
                       Value b, StringRef bName, int64_t j) {
  int64_t da = tensorOf(a).getDimSize(i), db = tensorOf(b).getDimSize(j);
  if (compatible(da, db))
    return success();
  return op->emitOpError() << aName << " dim " << i << " (" << dimString(da)
                           << ") does not match " << bName << " dim " << j
                           << " (" << dimString(db) << ")";
}

/// Checks that `result` has the shape and element type of `input`.
LogicalResult checkSameAsInput(Operation *op, Value input, Value result) {
  RankedTensorType in = tensorOf(input), out = tensorOf(result);
  if (in.getElementType() != out.getElementType())
    return op->emitOpError()
           << "result element type " << out.getElementType()
           << " differs from the input's " << in.getElementType();
  if (in.getRank() != out.getRank())
    return op->emitOpError() << "result rank " << out.getRank()
                             << " differs from the input's " << in.getRank();
  for (int64_t i = 0, e = in.getRank(); i < e; ++i)
    if (failed(checkDim(op, result, "result", i, input, "input", i)))
      return failure();
  return success();
}

/// The element types a cache or `folio.quantize` can store compressed.
bool isQuantizedElement(Type t) {
  return isa<Float8E4M3FNType, Float8E5M2Type>(t) || t.isSignlessInteger(8) ||
         t.isSignlessInteger(4) || t.isSignlessInteger(2);
}

LogicalResult checkNonNegative(Operation *op, StringRef name, double v) {
  if (std::isfinite(v) && v >= 0)
    return success();
  return op->emitOpError() << name << " must be a finite value >= 0, got "
                           << num(v);
}

LogicalResult checkPositive(Operation *op, StringRef name, double v) {
  if (std::isfinite(v) && v > 0)
    return success();
  return op->emitOpError() << name << " must be a finite value > 0, got "
                           << num(v);
}

/// Shared by quantize and dequantize: `scale` is rank 0 or broadcasts to
/// `data` dim by dim; `zeroPoint`, if any, has the scale's shape and is only
/// meaningful for integer data.
LogicalResult checkQuantParams(Operation *op, Value data, Value scale,
                               Value zeroPoint, Type quantElement,
                               int64_t blockSize = 0) {
  RankedTensorType dataType = tensorOf(data), scaleType = tensorOf(scale);
  if (blockSize < 0)
    return op->emitOpError() << "block_size must be >= 0, got " << blockSize;
  if (scaleType.getRank() != 0) {
    if (scaleType.getRank() != dataType.getRank())
      return op->emitOpError()
             << "scale must be rank 0 (per tensor) or rank "
             << dataType.getRank() << " like the data, got rank "
             << scaleType.getRank();
    for (int64_t i = 0, e = dataType.getRank(); i < e; ++i) {
      int64_t s = scaleType.getDimSize(i), d = dataType.getDimSize(i);
      if (s == 1 || compatible(s, d))
        continue;
      // Blocked: one scale per block_size elements along the dim.
      if (blockSize > 0 && !ShapedType::isDynamic(s) &&
          !ShapedType::isDynamic(d) && s == (d + blockSize - 1) / blockSize)
        continue;
      InFlightDiagnostic diag = op->emitOpError()
                                << "scale dim " << i << " (" << dimString(s)
                                << ") must be 1 or the data's (" << dimString(d)
                                << ")";
      if (blockSize > 0 && !ShapedType::isDynamic(d))
        diag << " or ceil(" << d << " / block_size " << blockSize
             << ") = " << (d + blockSize - 1) / blockSize;
      return diag;
    }
  }
  if (!zeroPoint)
    return success();
  if (!isa<IntegerType>(quantElement))
    return op->emitOpError() << "zero_point is only valid for integer "
                                "quantization, not "
                             << quantElement;
  if (tensorOf(zeroPoint).getShape() != scaleType.getShape())
    return op->emitOpError() << "zero_point shape must equal the scale's";
  return success();
}

} // namespace

namespace mlir::folio {
// Custom directives of the elementwise ops (FolioTensorOps.cpp): the kind
// as a bare keyword, `folio.binary add %a, %b`.
ParseResult parseBinaryKind(OpAsmParser &parser, BinaryKindAttr &kind);
void printBinaryKind(OpAsmPrinter &printer, Operation *op, BinaryKindAttr kind);
ParseResult parseUnaryKind(OpAsmParser &parser, UnaryKindAttr &kind);
void printUnaryKind(OpAsmPrinter &printer, Operation *op, UnaryKindAttr kind);
} // namespace mlir::folio

#define GET_OP_CLASSES
#include "dialects/Folio/IR/FolioOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Token-wise ops
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  Operation *op = getOperation();
  // ids are [T] in the serving form and [B, S] as imported.
  int64_t idsRank = tensorOf(getIds()).getRank();
  if (failed(checkRank(op, getTable(), "table", 2, "[vocab, hidden]")))
    return failure();
  if (idsRank < 1)
    return emitOpError("ids must have rank >= 1");
  if (failed(checkRank(op, getResult(), "result", idsRank + 1,
                       "(the ids' dims, then hidden)")))
    return failure();
  for (int64_t d = 0; d < idsRank; ++d)
    if (failed(checkDim(op, getResult(), "result", d, getIds(), "ids", d)))
      return failure();
  if (failed(
          checkDim(op, getResult(), "result", idsRank, getTable(), "table", 1)))
    return failure();
  if (tensorOf(getResult()).getElementType() !=
      tensorOf(getTable()).getElementType())
    return emitOpError("result element type must equal the table's");
  return checkPositive(op, "scale", getScale().convertToDouble());
}

/// The weight dims holding K (reduction) and N (output) for a layout.
static std::pair<int64_t, int64_t> weightDims(WeightLayout layout) {
  return layout == WeightLayout::in_out ? std::make_pair(0, 1)
                                        : std::make_pair(1, 0);
}

LogicalResult LinearOp::verify() {
  Operation *op = getOperation();
  RankedTensorType in = tensorOf(getInput()), out = tensorOf(getResult());
  if (in.getRank() < 1)
    return emitOpError("input must have rank >= 1");
  if (failed(checkRank(op, getWeight(), "weight", 2,
                       getWeightLayout() == WeightLayout::in_out
                           ? "[in, out] for weight_layout in_out"
                           : "[out, in] for weight_layout out_in")))
    return failure();
  if (out.getRank() != in.getRank())
    return emitOpError() << "result rank " << out.getRank()
                         << " differs from the input's " << in.getRank();
  auto [kDim, nDim] = weightDims(getWeightLayout());
  int64_t last = in.getRank() - 1;
  if (failed(checkDim(op, getInput(), "input", last, getWeight(), "weight",
                      kDim)) ||
      failed(checkDim(op, getResult(), "result", last, getWeight(), "weight",
                      nDim)))
    return failure();
  for (int64_t i = 0; i < last; ++i)
    if (failed(checkDim(op, getResult(), "result", i, getInput(), "input", i)))
      return failure();
  if (out.getElementType() != in.getElementType())
    return emitOpError("result element type must equal the input's");
  if (Value bias = getBias())
    if (failed(checkRank(op, bias, "bias", 1, "[out]")) ||
        failed(checkDim(op, bias, "bias", 0, getWeight(), "weight", nDim)))
      return failure();
  return success();
}

/// Norm weights (and biases) are rank 1 over the input's last dim.
static LogicalResult checkNormParam(Operation *op, Value input, Value param,
                                    StringRef name) {
  RankedTensorType in = tensorOf(input);
  if (in.getRank() < 1)
    return op->emitOpError("input must have rank >= 1");
  if (failed(checkRank(op, param, name, 1, "[hidden]")))
    return failure();
  return checkDim(op, param, name, 0, input, "input", in.getRank() - 1);
}

LogicalResult RMSNormOp::verify() {
  Operation *op = getOperation();
  if (failed(checkNormParam(op, getInput(), getWeight(), "weight")) ||
      failed(checkSameAsInput(op, getInput(), getResult())))
    return failure();
  return checkNonNegative(op, "epsilon", getEpsilon().convertToDouble());
}

LogicalResult LayerNormOp::verify() {
  Operation *op = getOperation();
  if (failed(checkNormParam(op, getInput(), getWeight(), "weight")) ||
      failed(checkSameAsInput(op, getInput(), getResult())))
    return failure();
  if (Value bias = getBias())
    if (failed(checkNormParam(op, getInput(), bias, "bias")))
      return failure();
  return checkNonNegative(op, "epsilon", getEpsilon().convertToDouble());
}

LogicalResult RotaryOp::verify() {
  Operation *op = getOperation();
  // [T, heads, head_dim] with positions [T] (the serving form), or the
  // imported [B, heads, S, head_dim] with positions [B, S].
  int64_t rank = tensorOf(getInput()).getRank();
  if (rank != 3 && rank != 4)
    return emitOpError() << "input must be rank 3 [tokens, heads, head_dim] "
                            "or rank 4 [batch, heads, seq, head_dim], got rank "
                         << rank;
  if (rank == 3 &&
      (failed(checkRank(op, getPositions(), "positions", 1, "[tokens]")) ||
       failed(checkDim(op, getPositions(), "positions", 0, getInput(), "input",
                       0))))
    return failure();
  if (rank == 4 &&
      (failed(checkRank(op, getPositions(), "positions", 2, "[batch, seq]")) ||
       failed(checkDim(op, getPositions(), "positions", 0, getInput(), "input",
                       0)) ||
       failed(checkDim(op, getPositions(), "positions", 1, getInput(), "input",
                       2))))
    return failure();
  if (failed(checkSameAsInput(op, getInput(), getResult())))
    return failure();

  int64_t rotaryDim = getRotaryDim();
  int64_t headDim = tensorOf(getInput()).getDimSize(rank - 1);
  if (rotaryDim <= 0 || rotaryDim % 2 != 0)
    return emitOpError() << "rotary_dim must be positive and even, got "
                         << rotaryDim;
  if (!ShapedType::isDynamic(headDim) && rotaryDim > headDim)
    return emitOpError() << "rotary_dim (" << rotaryDim
                         << ") exceeds head_dim (" << headDim << ")";
  if (failed(checkPositive(op, "base", getBase().convertToDouble())))
    return failure();

  if (Value cache = getCosSinCache()) {
    if (failed(checkRank(op, cache, "cos_sin_cache", 2,
                         "[max_position, rotary_dim]")))
      return failure();
    int64_t width = tensorOf(cache).getDimSize(1);
    if (!compatible(width, rotaryDim))
      return emitOpError() << "cos_sin_cache dim 1 (" << width
                           << ") must equal rotary_dim (" << rotaryDim << ")";
    if (getScaling() != RopeScaling::none)
      return emitOpError("cos_sin_cache already holds the scaled angles; "
                         "scaling must be 'none' with it");
  }

  RopeScaling scaling = getScaling();
  double factor = getScalingFactor().convertToDouble();
  bool hasLlama3 = getLowFreqFactor() || getHighFreqFactor();
  bool hasYarn = getBetaFast() || getBetaSlow();
  if (scaling == RopeScaling::none) {
    if (factor != 1.0 || hasLlama3 || hasYarn || getOriginalMaxPosition())
      return emitOpError("scaling parameters given but scaling is 'none'");
    return success();
  }
  if (failed(checkPositive(op, "scaling_factor", factor)))
    return failure();
  if (scaling != RopeScaling::llama3 && hasLlama3)
    return emitOpError("low_freq_factor/high_freq_factor are only valid with "
                       "scaling 'llama3'");
  if (scaling != RopeScaling::yarn && hasYarn)
    return emitOpError("beta_fast/beta_slow are only valid with scaling "
                       "'yarn'");
  if (scaling == RopeScaling::linear) {
    if (getOriginalMaxPosition())
      return emitOpError("original_max_position is not used by 'linear' "
                         "scaling");
    return success();
  }
  if (!getOriginalMaxPosition() || *getOriginalMaxPosition() <= 0)
    return emitOpError() << "scaling '" << stringifyRopeScaling(scaling)
                         << "' needs a positive original_max_position";
  if (scaling == RopeScaling::llama3) {
    if (!getLowFreqFactor() || !getHighFreqFactor())
      return emitOpError("scaling 'llama3' needs low_freq_factor and "
                         "high_freq_factor");
    double low = getLowFreqFactor()->convertToDouble();
    double high = getHighFreqFactor()->convertToDouble();
    if (!(low > 0 && high > low))
      return emitOpError() << "llama3 scaling needs 0 < low_freq_factor < "
                              "high_freq_factor, got "
                           << num(low) << " and " << num(high);
  }
  return success();
}

LogicalResult GatedMLPOp::verify() {
  Operation *op = getOperation();
  RankedTensorType in = tensorOf(getInput());
  if (in.getRank() < 1)
    return emitOpError("input must have rank >= 1");
  StringRef layout = getWeightLayout() == WeightLayout::in_out
                         ? "for weight_layout in_out"
                         : "for weight_layout out_in";
  for (auto [v, name] : {std::make_pair(getGateWeight(), "gate_weight"),
                         std::make_pair(getUpWeight(), "up_weight"),
                         std::make_pair(getDownWeight(), "down_weight")})
    if (failed(checkRank(op, v, name, 2, layout)))
      return failure();
  auto [kDim, nDim] = weightDims(getWeightLayout());
  int64_t last = in.getRank() - 1;
  // gate/up map hidden -> ffn, down maps ffn -> hidden.
  if (failed(checkDim(op, getInput(), "input", last, getGateWeight(),
                      "gate_weight", kDim)) ||
      failed(checkDim(op, getUpWeight(), "up_weight", kDim, getGateWeight(),
                      "gate_weight", kDim)) ||
      failed(checkDim(op, getUpWeight(), "up_weight", nDim, getGateWeight(),
                      "gate_weight", nDim)) ||
      failed(checkDim(op, getDownWeight(), "down_weight", kDim, getGateWeight(),
                      "gate_weight", nDim)) ||
      failed(checkDim(op, getDownWeight(), "down_weight", nDim, getInput(),
                      "input", last)))
    return failure();
  return checkSameAsInput(op, getInput(), getResult());
}

LogicalResult GatherRowsOp::verify() {
  Operation *op = getOperation();
  if (failed(checkRank(op, getInput(), "input", 2, "[tokens, width]")) ||
      failed(checkRank(op, getIndices(), "indices", 1, "[rows]")) ||
      failed(checkRank(op, getResult(), "result", 2, "[rows, width]")) ||
      failed(
          checkDim(op, getResult(), "result", 0, getIndices(), "indices", 0)) ||
      failed(checkDim(op, getResult(), "result", 1, getInput(), "input", 1)))
    return failure();
  if (tensorOf(getResult()).getElementType() !=
      tensorOf(getInput()).getElementType())
    return emitOpError("result element type must equal the input's");
  return success();
}

//===----------------------------------------------------------------------===//
// Attention and the paged KV cache
//===----------------------------------------------------------------------===//

/// Checks the attributes paged and logical attention share.
static LogicalResult checkAttentionAttrs(Operation *op, double scale,
                                         bool causal, int64_t window,
                                         double softcap) {
  if (failed(checkPositive(op, "scale", scale)) ||
      failed(checkNonNegative(op, "softcap", softcap)))
    return failure();
  if (window < 0)
    return op->emitOpError()
           << "sliding_window must be >= 0 (0 = none), got " << window;
  if (window > 0 && !causal)
    return op->emitOpError("sliding_window needs causal attention");
  return success();
}

/// GQA: query heads are a whole multiple of KV heads.
static LogicalResult checkGroupedHeads(Operation *op, int64_t qHeads,
                                       int64_t kvHeads) {
  if (ShapedType::isDynamic(qHeads) || ShapedType::isDynamic(kvHeads))
    return success();
  if (kvHeads > 0 && qHeads % kvHeads == 0)
    return success();
  return op->emitOpError() << "query heads (" << qHeads
                           << ") must be a multiple of the KV heads ("
                           << kvHeads << ") for grouped-query attention";
}

LogicalResult AttentionOp::verify() {
  Operation *op = getOperation();
  Value q = getQuery(), k = getKey(), v = getValue(), r = getResult();
  if (failed(checkRank(op, q, "query", 4, "[batch, heads, seq, head_dim]")) ||
      failed(
          checkRank(op, k, "key", 4, "[batch, kv_heads, kv_seq, head_dim]")) ||
      failed(checkRank(op, v, "value", 4,
                       "[batch, kv_heads, kv_seq, v_head_dim]")) ||
      failed(checkRank(op, r, "result", 4, "[batch, heads, seq, v_head_dim]")))
    return failure();
  if (failed(checkDim(op, k, "key", 0, q, "query", 0)) ||
      failed(checkDim(op, v, "value", 0, q, "query", 0)) ||
      failed(checkDim(op, k, "key", 3, q, "query", 3)) ||
      failed(checkDim(op, v, "value", 1, k, "key", 1)) ||
      failed(checkDim(op, v, "value", 2, k, "key", 2)) ||
      failed(checkDim(op, r, "result", 0, q, "query", 0)) ||
      failed(checkDim(op, r, "result", 1, q, "query", 1)) ||
      failed(checkDim(op, r, "result", 2, q, "query", 2)) ||
      failed(checkDim(op, r, "result", 3, v, "value", 3)) ||
      failed(checkGroupedHeads(op, tensorOf(q).getDimSize(1),
                               tensorOf(k).getDimSize(1))))
    return failure();
  if (Value mask = getKeyPaddingMask())
    if (failed(checkRank(op, mask, "key_padding_mask", 2, "[batch, kv_seq]")) ||
        failed(checkDim(op, mask, "key_padding_mask", 0, q, "query", 0)) ||
        failed(checkDim(op, mask, "key_padding_mask", 1, k, "key", 2)))
      return failure();
  return checkAttentionAttrs(op, getScale().convertToDouble(), getCausal(),
                             getSlidingWindow(),
                             getSoftcap().convertToDouble());
}

/// K/V rows written to a cache are [T, cache heads, cache head_dim].
static LogicalResult checkCacheRows(Operation *op, Value rows, StringRef name,
                                    KVCacheType cache) {
  if (failed(checkRank(op, rows, name, 3, "[tokens, kv_heads, head_dim]")))
    return failure();
  RankedTensorType t = tensorOf(rows);
  if (!compatible(t.getDimSize(1), cache.getHeads()))
    return op->emitOpError() << name << " has " << dimString(t.getDimSize(1))
                             << " heads but the cache has " << cache.getHeads();
  if (!compatible(t.getDimSize(2), cache.getHeadDim()))
    return op->emitOpError()
           << name << " head_dim (" << dimString(t.getDimSize(2))
           << ") differs from the cache's (" << cache.getHeadDim() << ")";
  return success();
}

/// Static scales (`per_head`, `per_tensor`) are the op's k_scale and
/// v_scale operands: both present exactly for such a cache, f32, `[heads]`
/// for per_head and rank 0 for per_tensor.
static LogicalResult checkStaticScales(Operation *op, KVCacheType cache,
                                       Value kScale, Value vScale) {
  if (bool(kScale) != bool(vScale))
    return op->emitOpError("takes k_scale and v_scale together or neither");
  if (!cache.hasStaticScales()) {
    if (kScale)
      return op->emitOpError()
             << "takes no scale operands for a cache with scale '"
             << stringifyScaleLayout(cache.getScale())
             << "'; only per_head and per_tensor scales are operands";
    return success();
  }
  if (!kScale)
    return op->emitOpError()
           << "needs scales(k_scale, v_scale) for a cache with static scale '"
           << stringifyScaleLayout(cache.getScale()) << "'";
  bool perHead = cache.getScale() == ScaleLayout::per_head;
  for (auto [v, name] : {std::pair(kScale, "k_scale"), {vScale, "v_scale"}}) {
    RankedTensorType t = tensorOf(v);
    bool shapeOk = perHead ? t.getRank() == 1 &&
                                 t.getDimSize(0) == int64_t(cache.getHeads())
                           : t.getRank() == 0;
    if (!t.getElementType().isF32() || !shapeOk)
      return op->emitOpError()
             << name << " must be "
             << (perHead ? "tensor<" + std::to_string(cache.getHeads()) +
                               "xf32> (per_head)"
                         : std::string("tensor<f32> (per_tensor)"))
             << ", got " << t;
  }
  return success();
}

LogicalResult KVWriteOp::verify() {
  Operation *op = getOperation();
  KVCacheType cache = getCache().getType();
  if (failed(checkCacheRows(op, getKey(), "key", cache)) ||
      failed(checkCacheRows(op, getValue(), "value", cache)) ||
      failed(checkRank(op, getSlotMapping(), "slot_mapping", 1, "[tokens]")) ||
      failed(checkDim(op, getValue(), "value", 0, getKey(), "key", 0)) ||
      failed(checkDim(op, getSlotMapping(), "slot_mapping", 0, getKey(), "key",
                      0)))
    return failure();
  return checkStaticScales(op, cache, getKScale(), getVScale());
}

LogicalResult PagedAttentionOp::verify() {
  Operation *op = getOperation();
  KVCacheType cache = getCache().getType();
  Value q = getQuery();
  if (failed(checkRank(op, q, "query", 3, "[tokens, heads, head_dim]")))
    return failure();
  int64_t headDim = tensorOf(q).getDimSize(2);
  if (!compatible(headDim, cache.getHeadDim()))
    return emitOpError() << "query head_dim (" << dimString(headDim)
                         << ") differs from the cache's (" << cache.getHeadDim()
                         << ")";
  if (failed(
          checkGroupedHeads(op, tensorOf(q).getDimSize(1), cache.getHeads())) ||
      failed(checkRank(op, getBlockTables(), "block_tables", 2,
                       "[seqs, max_blocks]")) ||
      failed(checkRank(op, getSeqLens(), "seq_lens", 1, "[seqs]")) ||
      failed(checkRank(op, getQueryStartLoc(), "query_start_loc", 1,
                       "[seqs + 1]")) ||
      failed(checkDim(op, getSeqLens(), "seq_lens", 0, getBlockTables(),
                      "block_tables", 0)) ||
      failed(checkSameAsInput(op, q, getResult())) ||
      failed(checkStaticScales(op, cache, getKScale(), getVScale())))
    return failure();
  int64_t seqs = tensorOf(getSeqLens()).getDimSize(0);
  int64_t starts = tensorOf(getQueryStartLoc()).getDimSize(0);
  if (!ShapedType::isDynamic(seqs) && !compatible(starts, seqs + 1))
    return emitOpError() << "query_start_loc must have seqs + 1 = " << seqs + 1
                         << " entries, got " << starts;
  return checkAttentionAttrs(op, getScale().convertToDouble(), getCausal(),
                             getSlidingWindow(),
                             getSoftcap().convertToDouble());
}

//===----------------------------------------------------------------------===//
// Quantization
//===----------------------------------------------------------------------===//

LogicalResult QuantizeOp::verify() {
  RankedTensorType in = tensorOf(getInput()), out = tensorOf(getResult());
  if (!isQuantizedElement(out.getElementType()))
    return emitOpError() << "result element type must be i8, i4, i2, "
                            "f8E4M3FN or f8E5M2, got "
                         << out.getElementType();
  if (in.getShape() != out.getShape())
    return emitOpError("result shape must equal the input's");
  return checkQuantParams(getOperation(), getInput(), getScale(),
                          getZeroPoint(), out.getElementType());
}

LogicalResult DequantizeOp::verify() {
  RankedTensorType in = tensorOf(getInput()), out = tensorOf(getResult());
  if (!isQuantizedElement(in.getElementType()))
    return emitOpError() << "input element type must be i8, i4, i2, "
                            "f8E4M3FN or f8E5M2, got "
                         << in.getElementType();
  if (in.getShape() != out.getShape())
    return emitOpError("result shape must equal the input's");
  if (getInt8Activations() && !isa<IntegerType>(in.getElementType()))
    return emitOpError() << "int8_activations applies to integer codes, not "
                         << in.getElementType();
  return checkQuantParams(getOperation(), getInput(), getScale(),
                          getZeroPoint(), in.getElementType(), getBlockSize());
}

//===----------------------------------------------------------------------===//
// Speculative decoding
//===----------------------------------------------------------------------===//

/// Checks that `v` holds `want` elements (the spec_verify kernels take f32
/// logits and i32 tokens, nothing else).
static LogicalResult checkElement(Operation *op, Value v, StringRef name,
                                  Type want) {
  Type got = tensorOf(v).getElementType();
  if (got == want)
    return success();
  return op->emitOpError() << name << " must have " << want << " elements, got "
                           << got;
}

LogicalResult SpecVerifyOp::verify() {
  Operation *op = getOperation();
  Value logits = getTargetLogits(), drafts = getDraftTokens();
  Builder b(getContext());
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  if (failed(checkElement(op, logits, "target_logits", f32)) ||
      failed(checkElement(op, drafts, "draft_tokens", i32)) ||
      failed(checkElement(op, getAccepted(), "accepted", i32)) ||
      failed(checkElement(op, getTokens(), "tokens", i32)) ||
      (getDraftProbs() &&
       failed(checkElement(op, getDraftProbs(), "draft_probs", f32))) ||
      (getUniforms() &&
       failed(checkElement(op, getUniforms(), "uniforms", f32))))
    return failure();
  if (failed(checkRank(op, logits, "target_logits", 3,
                       "[seqs, draft_len + 1, vocab]")) ||
      failed(checkRank(op, drafts, "draft_tokens", 2, "[seqs, draft_len]")) ||
      failed(checkRank(op, getAccepted(), "accepted", 1, "[seqs]")) ||
      failed(
          checkRank(op, getTokens(), "tokens", 2, "[seqs, draft_len + 1]")) ||
      failed(checkDim(op, drafts, "draft_tokens", 0, logits, "target_logits",
                      0)) ||
      failed(checkDim(op, getAccepted(), "accepted", 0, logits, "target_logits",
                      0)) ||
      failed(
          checkDim(op, getTokens(), "tokens", 0, logits, "target_logits", 0)) ||
      failed(
          checkDim(op, getTokens(), "tokens", 1, logits, "target_logits", 1)))
    return failure();
  int64_t k = tensorOf(drafts).getDimSize(1);
  int64_t rows = tensorOf(logits).getDimSize(1);
  if (!ShapedType::isDynamic(k) && !compatible(rows, k + 1))
    return emitOpError() << "target_logits needs draft_len + 1 = " << k + 1
                         << " rows per sequence, got " << rows;

  if (getMode() == SpecVerifyMode::greedy) {
    if (getDraftProbs() || getUniforms())
      return emitOpError("greedy verification takes no draft_probs or "
                         "uniforms");
    return success();
  }
  if (!getUniforms())
    return emitOpError("sample verification needs uniforms [seqs, draft_len "
                       "+ 1] (draft_probs are optional)");
  if (failed(checkRank(op, getUniforms(), "uniforms", 2,
                       "[seqs, draft_len + 1]")) ||
      failed(checkDim(op, getUniforms(), "uniforms", 0, logits, "target_logits",
                      0)) ||
      failed(checkDim(op, getUniforms(), "uniforms", 1, logits, "target_logits",
                      1)))
    return failure();
  if (Value probs = getDraftProbs())
    if (failed(checkRank(op, probs, "draft_probs", 3,
                         "[seqs, draft_len, vocab]")) ||
        failed(checkDim(op, probs, "draft_probs", 0, logits, "target_logits",
                        0)) ||
        failed(
            checkDim(op, probs, "draft_probs", 1, drafts, "draft_tokens", 1)) ||
        failed(
            checkDim(op, probs, "draft_probs", 2, logits, "target_logits", 2)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Kernel regions
//===----------------------------------------------------------------------===//

LogicalResult KernelOp::verify() {
  if (getName().empty())
    return emitOpError("needs a non-empty name");
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError() << "body has " << body.getNumArguments()
                         << " arguments for " << getInputs().size()
                         << " inputs";
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip(body.getArgumentTypes(), getInputs())))
    if (std::get<0>(pair) != std::get<1>(pair).getType())
      return emitOpError() << "body argument " << i << " has type "
                           << std::get<0>(pair) << " but input " << i
                           << " has type " << std::get<1>(pair).getType();
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end with folio.yield");
  if (yield.getOperandTypes() != getResultTypes())
    return emitOpError() << "yields " << yield.getNumOperands()
                         << " values of types (" << yield.getOperandTypes()
                         << ") but the kernel returns (" << getResultTypes()
                         << ")";
  return success();
}

//===----------------------------------------------------------------------===//
// Import
//===----------------------------------------------------------------------===//

LogicalResult ONNXNodeOp::verify() {
  if (getOpType().empty())
    return emitOpError("needs a non-empty op_type");
  if (getOpset() < 1)
    return emitOpError() << "opset must be >= 1, got " << getOpset();
  int64_t total = getNumONNXInputs(), previous = -1;
  for (int64_t index : getAbsentInputs()) {
    if (index <= previous || index >= total)
      return emitOpError() << "absent_inputs must be increasing positions "
                              "below the node's "
                           << total << " inputs, got " << index;
    previous = index;
  }
  return success();
}
