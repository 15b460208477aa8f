//===- Fused.cpp - Fused attention, norm and rotary ops
//--------------------===//
//
// The fused forms decoders arrive in: ONNX opset 23 Attention,
// RMSNormalization and RotaryEmbedding, and ONNX Runtime's com.microsoft
// GroupQueryAttention, MultiHeadAttention, RotaryEmbedding and
// (Skip)SimplifiedLayerNormalization,
// and com.microsoft MatMulNBits and GatherBlockQuantized (int4 weights and
// embedding tables).
//
//===----------------------------------------------------------------------===//

#include "compiler/ONNXOps/InferHelpers.h"

using namespace mlir;
using namespace mlir::folio;
using namespace mlir::folio::infer;

namespace {

/// Norms: Y keeps X's shape; optional statistics keep the leading dims.
LogicalResult inferNorm(ONNXInferenceContext &ctx, unsigned normalizedOutput) {
  if (failed(requireFloat(ctx, 0, "input")))
    return failure();
  FailureOr<double> epsilon = ctx.getFloat("epsilon", 1e-5);
  if (failed(epsilon))
    return failure();
  if (*epsilon < 0)
    return ctx.emitError() << "epsilon must be >= 0, got " << *epsilon;
  for (unsigned o = 0; o < ctx.getNumOutputs(); ++o) {
    ctx.output(o).elementType = ctx.input(0).elementType;
    if (o == 0 || o == normalizedOutput) {
      ctx.output(o).dims = ctx.input(0).dims;
      continue;
    }
    // mean / inv_std_var: [..., 1].
    if (ctx.input(0).dims) {
      Dims dims = *ctx.input(0).dims;
      if (!dims.empty())
        dims.back() = cst(ctx, 1);
      ctx.output(o).dims = dims;
    }
  }
  return success();
}

LogicalResult inferRMSNormalization(ONNXInferenceContext &ctx) {
  return inferNorm(ctx, ~0u);
}

LogicalResult inferSimplifiedLayerNormalization(ONNXInferenceContext &ctx) {
  return inferNorm(ctx, ~0u);
}

/// Outputs: output, mean, inv_std_var, input_skip_bias_sum (same as input);
/// SkipLayerNormalization too.
LogicalResult inferSkipSimplifiedLayerNormalization(ONNXInferenceContext &ctx) {
  return inferNorm(ctx, /*normalizedOutput=*/3);
}

/// RotaryEmbedding, both domains: the output has the input's shape.
LogicalResult inferRotaryEmbedding(ONNXInferenceContext &ctx) {
  if (failed(requireFloat(ctx, 0, "input")))
    return failure();
  if (std::optional<int64_t> rank = ctx.input(0).getRank();
      rank && *rank != 3 && *rank != 4)
    return ctx.emitError() << "input must be rank 3 [batch, seq, hidden] or "
                              "4, got rank "
                           << *rank;
  FailureOr<int64_t> interleaved = ctx.getInt("interleaved", 0);
  FailureOr<int64_t> rotaryDim = ctx.getInt("rotary_embedding_dim", 0);
  if (failed(interleaved) || failed(rotaryDim))
    return failure();
  if (*rotaryDim < 0 || *rotaryDim % 2 != 0)
    return ctx.emitError() << "rotary_embedding_dim must be even and >= 0, "
                              "got "
                           << *rotaryDim;
  passThrough(ctx);
  return success();
}

/// ONNX opset-23 Attention: Q [B, Hq, S, D] or [B, S, Hq*D] (with
/// q_num_heads), K/V likewise, optional mask and past K/V; outputs Y and
/// optionally present K/V (and qk output, which Folio does not produce).
LogicalResult inferAttention(ONNXInferenceContext &ctx) {
  for (unsigned i = 0; i < 3; ++i)
    if (failed(requireFloat(ctx, i, i == 0 ? "Q" : i == 1 ? "K" : "V")))
      return failure();
  if (ctx.getNumOutputs() > 3)
    return ctx.emitError() << "the qk_matmul_output output is not supported";
  const ONNXValueFacts &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
  FailureOr<int64_t> qHeads = ctx.getInt("q_num_heads", 0);
  FailureOr<int64_t> kvHeads = ctx.getInt("kv_num_heads", 0);
  FailureOr<double> softcap = ctx.getFloat("softcap", 0.0);
  if (failed(qHeads) || failed(kvHeads) || failed(softcap))
    return failure();
  if (*softcap < 0)
    return ctx.emitError() << "softcap must be >= 0";
  std::optional<int64_t> rank = q.getRank();
  if (rank && *rank != 3 && *rank != 4)
    return ctx.emitError() << "Q must be rank 3 or 4, got rank " << *rank;
  // K and V must have Q's layout: rank 3 [B, S, H*D] or rank 4
  // [B, H, S, D]. The shapes below index by that rank.
  for (unsigned i = 1; i < 3; ++i) {
    std::optional<int64_t> r = ctx.input(i).getRank();
    if (r && ((rank && *r != *rank) || (*r != 3 && *r != 4)))
      return ctx.emitError()
             << (i == 1 ? "K" : "V") << " has rank " << *r
             << "; it must be rank 3 or 4 and match Q"
             << (rank ? "'s rank " + std::to_string(*rank) : std::string());
  }
  if (rank == 3 && (*qHeads <= 0 || *kvHeads <= 0))
    return ctx.emitError() << "rank-3 inputs need q_num_heads and "
                              "kv_num_heads";
  ONNXValueFacts &y = ctx.output(0);
  y.elementType = q.elementType;
  if (q.dims && v.dims && rank == 4 && v.dims->size() == 4)
    y.dims = Dims{(*q.dims)[0], (*q.dims)[1], (*q.dims)[2], (*v.dims)[3]};
  else if (q.dims && v.dims && rank == 3 && v.dims->size() == 3) {
    AffineExpr vHidden = (*v.dims)[2];
    std::optional<int64_t> c = getConstantDim(vHidden);
    AffineExpr vHeadDim = c ? cst(ctx, *c / *kvHeads) : AffineExpr();
    y.dims = Dims{(*q.dims)[0], (*q.dims)[1],
                  vHeadDim ? vHeadDim * *qHeads : AffineExpr()};
  }
  // present = concat(past, new) along the sequence axis, [B, Hkv, P+L, D].
  for (unsigned o = 1; o < ctx.getNumOutputs(); ++o) {
    const ONNXValueFacts &fresh = o == 1 ? k : v;
    unsigned pastIndex = o == 1 ? 4 : 5;
    ONNXValueFacts &present = ctx.output(o);
    present.elementType = fresh.elementType;
    if (!ctx.hasInput(pastIndex) || !ctx.input(pastIndex).dims || !fresh.dims)
      continue;
    const Dims &past = *ctx.input(pastIndex).dims;
    if (past.size() != 4)
      return ctx.emitError() << "past key/value must be rank 4";
    AffineExpr freshLen =
        fresh.dims->size() == 4 ? (*fresh.dims)[2] : (*fresh.dims)[1];
    Dims dims = past;
    dims[2] = past[2] && freshLen ? past[2] + freshLen : AffineExpr();
    present.dims = dims;
  }
  return success();
}

/// com.microsoft GroupQueryAttention: query [B, S, Hq*D], key/value
/// [B, S, Hkv*D] (or both omitted: query is packed QKV [B, S, (Hq+2Hkv)*D]),
/// past [B, Hkv, P, D], seqlens_k, total_sequence_length, optional cos/sin
/// caches; outputs output [B, S, Hq*D] and present key/value [B, Hkv, P+S, D].
LogicalResult inferGroupQueryAttention(ONNXInferenceContext &ctx) {
  if (failed(requireFloat(ctx, 0, "query")))
    return failure();
  FailureOr<int64_t> numHeads = ctx.getInt("num_heads");
  FailureOr<int64_t> kvHeads = ctx.getInt("kv_num_heads");
  if (failed(numHeads) || failed(kvHeads))
    return failure();
  if (*numHeads <= 0 || *kvHeads <= 0 || *numHeads % *kvHeads != 0)
    return ctx.emitError() << "num_heads (" << *numHeads
                           << ") must be a positive multiple of kv_num_heads ("
                           << *kvHeads << ")";
  bool packed = !ctx.hasInput(1) && !ctx.hasInput(2);
  if (!packed && (!ctx.hasInput(1) || !ctx.hasInput(2)))
    return ctx.emitError() << "key and value come together (both given, or "
                              "both omitted for packed QKV in query)";
  if (!ctx.hasInput(5) || !ctx.hasInput(6))
    return ctx.emitError() << "needs seqlens_k (input 5) and "
                              "total_sequence_length (input 6)";
  const ONNXValueFacts &q = ctx.input(0);
  if (q.dims && q.dims->size() != 3)
    return ctx.emitError() << "query has rank " << q.dims->size()
                           << "; it must be [batch, seq, hidden]";
  // The head size, where the query's hidden dim is a constant.
  std::optional<int64_t> headDim;
  if (q.dims)
    if (std::optional<int64_t> hidden = getConstantDim((*q.dims)[2])) {
      int64_t parts = packed ? *numHeads + 2 * *kvHeads : *numHeads;
      if (*hidden % parts != 0)
        return ctx.emitError()
               << (packed ? "packed QKV" : "query") << " hidden size "
               << *hidden << " is not a multiple of "
               << (packed ? "num_heads + 2 * kv_num_heads (" : "num_heads (")
               << parts << ")";
      headDim = *hidden / parts;
    }
  ONNXValueFacts &out = ctx.output(0);
  out.elementType = q.elementType;
  out.dims = q.dims;
  if (packed && out.dims)
    (*out.dims)[2] = headDim ? cst(ctx, *headDim * *numHeads) : AffineExpr();
  for (unsigned o = 1; o < ctx.getNumOutputs(); ++o) {
    ONNXValueFacts &present = ctx.output(o);
    present.elementType = q.elementType;
    unsigned pastIndex = o == 1 ? 3 : 4;
    const ONNXValueFacts &fresh = packed ? q : ctx.input(o);
    if (!ctx.hasInput(pastIndex) || !ctx.input(pastIndex).dims || !fresh.dims ||
        fresh.dims->size() != 3)
      continue;
    Dims dims = *ctx.input(pastIndex).dims;
    if (dims.size() != 4)
      return ctx.emitError() << "past key/value must be rank 4";
    AffineExpr freshLen = (*fresh.dims)[1];
    dims[2] = dims[2] && freshLen ? dims[2] + freshLen : AffineExpr();
    // The builder names the past's head dim (kv_cache_dim); the present's
    // is the head size the query implies.
    if (headDim)
      dims[3] = cst(ctx, *headDim);
    present.dims = dims;
  }
  return success();
}

/// com.microsoft MultiHeadAttention (ONNX Runtime GenAI's builder writes it
/// for fp16 CPU models): query [B, S, N*H], key/value [B, L, N*Hk] or
/// [B, N, L, H], optional attention_bias [B|1, N|1, S, T] and past
/// key/value [B, N, P, H]; outputs output [B, S, N*Hv] and present
/// key/value [B, N, P+L, H]. What Folio does not take is refused here, by
/// input: packed QKV or KV, bias, key_padding_mask, past_sequence_length,
/// cache_indirection and the qk output.
LogicalResult inferMultiHeadAttention(ONNXInferenceContext &ctx) {
  if (!ctx.hasInput(1) || !ctx.hasInput(2))
    return ctx.emitError() << "needs key and value (inputs 1 and 2): packed "
                              "QKV in the query is not supported";
  static constexpr const char *kQKV[] = {"query", "key", "value"};
  for (unsigned i = 0; i < 3; ++i)
    if (failed(requireFloat(ctx, i, kQKV[i])))
      return failure();
  static constexpr const char *kRefused[] = {nullptr,
                                             nullptr,
                                             nullptr,
                                             "bias (input 3)",
                                             "key_padding_mask (input 4)",
                                             nullptr,
                                             nullptr,
                                             nullptr,
                                             "past_sequence_length (input 8)",
                                             "cache_indirection (input 9)"};
  for (unsigned i = 0; i < ctx.getNumInputs() && i < 10; ++i)
    if (kRefused[i] && ctx.hasInput(i))
      return ctx.emitError() << kRefused[i]
                             << " is not supported; supported: query, key, "
                                "value, attention_bias, past_key, past_value";
  if (ctx.getNumOutputs() > 3)
    return ctx.emitError() << "the qk output is not supported";
  if (ctx.hasInput(6) != ctx.hasInput(7))
    return ctx.emitError() << "past_key and past_value come together";
  FailureOr<int64_t> heads = ctx.getInt("num_heads");
  FailureOr<int64_t> unidirectional = ctx.getInt("unidirectional", 0);
  FailureOr<double> scale = ctx.getFloat("scale", 0.0);
  if (failed(heads) || failed(unidirectional) || failed(scale))
    return failure();
  if (*heads <= 0)
    return ctx.emitError() << "num_heads must be positive, got " << *heads;
  if (*unidirectional != 0 && *unidirectional != 1)
    return ctx.emitError() << "unidirectional must be 0 or 1, got "
                           << *unidirectional;
  if (*scale < 0)
    return ctx.emitError() << "scale must be >= 0 (0: 1/sqrt(head_size))";
  const ONNXValueFacts &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
  if (std::optional<int64_t> rank = q.getRank(); rank && *rank != 3)
    return ctx.emitError() << "query has rank " << *rank
                           << "; it must be [batch, seq, num_heads * "
                              "head_size] (packed QKV is not supported)";
  for (unsigned i = 1; i < 3; ++i)
    if (std::optional<int64_t> rank = ctx.input(i).getRank();
        rank && *rank != 3 && *rank != 4)
      return ctx.emitError()
             << kQKV[i] << " has rank " << *rank
             << "; it must be [batch, kv_seq, num_heads * head_size] or "
                "[batch, num_heads, kv_seq, head_size] (packed KV is not "
                "supported)";
  // Per-head size of a rank-3 [B, L, N*H] or rank-4 [B, N, L, H] input.
  auto headSize = [&](const ONNXValueFacts &x) -> AffineExpr {
    if (!x.dims)
      return {};
    if (x.dims->size() == 4)
      return (*x.dims)[3];
    std::optional<int64_t> hidden = getConstantDim((*x.dims)[2]);
    return hidden && *hidden % *heads == 0 ? cst(ctx, *hidden / *heads)
                                           : AffineExpr();
  };
  for (unsigned i = 0; i < 3; ++i) {
    const ONNXValueFacts &x = ctx.input(i);
    if (!x.dims || x.dims->size() != 3)
      continue;
    if (std::optional<int64_t> hidden = getConstantDim((*x.dims)[2]);
        hidden && *hidden % *heads != 0)
      return ctx.emitError()
             << kQKV[i] << " hidden size " << *hidden
             << " is not a multiple of num_heads (" << *heads << ")";
  }
  ONNXValueFacts &out = ctx.output(0);
  out.elementType = q.elementType;
  if (q.dims) {
    AffineExpr hv = headSize(v);
    out.dims =
        Dims{(*q.dims)[0], (*q.dims)[1], hv ? hv * *heads : AffineExpr()};
  }
  for (unsigned o = 1; o < ctx.getNumOutputs(); ++o) {
    const ONNXValueFacts &fresh = o == 1 ? k : v;
    ONNXValueFacts &present = ctx.output(o);
    present.elementType = fresh.elementType;
    if (!fresh.dims)
      continue;
    bool fourD = fresh.dims->size() == 4;
    AffineExpr batch = (*fresh.dims)[0];
    AffineExpr len = fourD ? (*fresh.dims)[2] : (*fresh.dims)[1];
    unsigned pastIndex = o == 1 ? 6 : 7;
    if (ctx.hasInput(pastIndex)) {
      const ONNXValueFacts &past = ctx.input(pastIndex);
      if (past.dims && past.dims->size() != 4)
        return ctx.emitError() << "past key/value must be rank 4 [batch, "
                                  "num_heads, past_seq, head_size]";
      AffineExpr pastLen = past.dims ? (*past.dims)[2] : AffineExpr();
      len = pastLen && len ? pastLen + len : AffineExpr();
    }
    present.dims = Dims{batch, cst(ctx, *heads), len, headSize(fresh)};
  }
  return success();
}

/// ONNX Runtime's block-quantized ops (MatMulNBits, GatherBlockQuantized)
/// take blocks of a power of 2 >= 16.
LogicalResult checkBlockSize(ONNXInferenceContext &ctx, int64_t blockSize) {
  if (blockSize < 16 || (blockSize & (blockSize - 1)) != 0)
    return ctx.emitError() << "block_size " << blockSize
                           << " must be a power of 2 >= 16";
  return success();
}

/// com.microsoft MatMulNBits (ONNX Runtime's model builder and Olive write
/// it for int4 weights): Y[..., N] = A[..., K] x dequant(B)^T (+ bias),
/// B the [N, ceil(K / block_size), block_size * bits / 8] uint8 codes of
/// the [N, K] weight, low nibble first, `scales` one per block, optional
/// packed uint8 `zero_points` (default 2^(bits-1)). folio-raise-linear
/// makes it a folio.dequantize feeding a folio.linear; what that cannot
/// express is refused here, by input and attribute.
LogicalResult inferMatMulNBits(ONNXInferenceContext &ctx) {
  if (failed(requireFloat(ctx, 0, "A")) ||
      failed(requireFloat(ctx, 2, "scales")))
    return failure();
  FailureOr<int64_t> k = ctx.getInt("K"), n = ctx.getInt("N"),
                     bits = ctx.getInt("bits", 4),
                     blockSize = ctx.getInt("block_size");
  if (failed(k) || failed(n) || failed(bits) || failed(blockSize))
    return failure();
  if (*k <= 0 || *n <= 0)
    return ctx.emitError() << "K (" << *k << ") and N (" << *n
                           << ") must be > 0";
  if (*bits != 4 && *bits != 8)
    return ctx.emitError() << "bits " << *bits
                           << " is not supported; supported: 4, 8";
  if (failed(checkBlockSize(ctx, *blockSize)))
    return failure();
  // ONNX Runtime's levels: 0 unset, 1 f32, 2 f16, 3 bf16, 4 int8.
  FailureOr<int64_t> accuracy = ctx.getInt("accuracy_level", 0);
  if (failed(accuracy))
    return failure();
  if (*accuracy < 0 || *accuracy > 4)
    return ctx.emitError() << "accuracy_level " << *accuracy
                           << " is not a level; ONNX Runtime's are 0 (unset), "
                              "1 (f32), 2 (f16), 3 (bf16) and 4 (int8)";
  if (ctx.hasInput(4))
    return ctx.emitError() << "g_idx (input 4, act-order weights) is not "
                              "supported; export without act-order";
  int64_t blocks = (*k + *blockSize - 1) / *blockSize;
  int64_t blobBytes = *blockSize * *bits / 8;
  const ONNXValueFacts &b = ctx.input(1);
  if (!b.elementType.isUnsignedInteger(8))
    return ctx.emitError() << "B must be uint8";
  if (std::optional<int64_t> count = b.getStaticNumElements();
      count && *count != *n * blocks * blobBytes)
    return ctx.emitError() << "B has " << *count << " elements; N " << *n
                           << " x " << blocks << " blocks x " << blobBytes
                           << " bytes = " << *n * blocks * blobBytes
                           << " expected";
  if (std::optional<int64_t> count = ctx.input(2).getStaticNumElements();
      count && *count != *n * blocks)
    return ctx.emitError() << "scales has " << *count << " elements; N " << *n
                           << " x " << blocks << " blocks = " << *n * blocks
                           << " expected";
  if (ctx.hasInput(3)) {
    const ONNXValueFacts &zp = ctx.input(3);
    if (!zp.elementType.isUnsignedInteger(8))
      return ctx.emitError() << "zero_points of type " << zp.elementType
                             << " are not supported; supported: uint8, "
                                "packed as B is";
    int64_t perRow = (blocks * *bits + 7) / 8;
    if (std::optional<int64_t> count = zp.getStaticNumElements();
        count && *count != *n * perRow)
      return ctx.emitError()
             << "zero_points has " << *count << " elements; N " << *n << " x "
             << perRow << " bytes = " << *n * perRow << " expected";
  }
  if (ctx.hasInput(5))
    if (std::optional<int64_t> count = ctx.input(5).getStaticNumElements();
        count && *count != *n)
      return ctx.emitError()
             << "bias has " << *count << " elements; N = " << *n << " expected";
  const ONNXValueFacts &a = ctx.input(0);
  ONNXValueFacts &y = ctx.output(0);
  y.elementType = a.elementType;
  if (!a.dims)
    return success();
  if (a.dims->empty())
    return ctx.emitError() << "A must have rank >= 1";
  if (std::optional<int64_t> last = getConstantDim(a.dims->back());
      last && *last != *k)
    return ctx.emitError() << "A's last dim " << *last << " is not K = " << *k;
  Dims dims = *a.dims;
  dims.back() = cst(ctx, *n);
  y.dims = dims;
  return success();
}

/// com.microsoft GatherBlockQuantized (ONNX Runtime's weight-only quantizer
/// and model builder write it for a quantized embedding table): the rows of
/// `data` that `indices` select, dequantized with one scale (and optional
/// zero point) per block of block_size along quantize_axis. int4/uint4 data
/// holds the codes one per element (default zero point 0); uint8 data holds
/// them packed as MatMulNBits does (bits 4: two a byte along the last axis,
/// low nibble first; default zero point 2^(bits-1)), and so do its zero
/// points. folio-raise-linear makes it a folio.embedding over the
/// dequantized table, so the embedding form is the one accepted: a rank-2
/// table gathered along axis 0 and quantized along axis 1.
LogicalResult inferGatherBlockQuantized(ONNXInferenceContext &ctx) {
  if (failed(requireFloat(ctx, 2, "scales")))
    return failure();
  FailureOr<int64_t> gatherAxis = ctx.getInt("gather_axis", 0),
                     quantizeAxis = ctx.getInt("quantize_axis", 1),
                     blockSize = ctx.getInt("block_size", 128),
                     bits = ctx.getInt("bits", 4);
  if (failed(gatherAxis) || failed(quantizeAxis) || failed(blockSize) ||
      failed(bits))
    return failure();
  const ONNXValueFacts &data = ctx.input(0), &indices = ctx.input(1),
                       &scales = ctx.input(2);
  auto dataType = dyn_cast<IntegerType>(data.elementType);
  bool packed = dataType && dataType.isUnsigned() && dataType.getWidth() == 8;
  bool nibbles = dataType && dataType.getWidth() == 4;
  if (!packed && !nibbles)
    return ctx.emitError() << "data of type " << data.elementType
                           << " is not supported; supported: int4, uint4, "
                              "uint8 (packed as MatMulNBits packs B)";
  if (*bits != 4 && (*bits != 8 || nibbles))
    return ctx.emitError() << "bits " << *bits << " is not supported for "
                           << data.elementType << " data; supported: 4"
                           << (nibbles ? "" : ", 8");
  if (failed(checkBlockSize(ctx, *blockSize)))
    return failure();
  if (!isIntegerLike(indices.elementType))
    return ctx.emitError() << "indices must be integers, got "
                           << indices.elementType;
  if (data.dims && data.dims->size() != 2)
    return ctx.emitError() << "data of rank " << data.dims->size()
                           << " is not supported; supported: a rank-2 "
                              "embedding table";
  if ((*gatherAxis != 0 && *gatherAxis != -2) ||
      (*quantizeAxis != 1 && *quantizeAxis != -1))
    return ctx.emitError() << "gather_axis " << *gatherAxis
                           << " with quantize_axis " << *quantizeAxis
                           << " is not supported; supported: a table "
                              "gathered along axis 0 and quantized along "
                              "axis 1 (an embedding)";
  ONNXValueFacts &out = ctx.output(0);
  out.elementType = scales.elementType;
  if (!data.dims)
    return success();
  std::optional<int64_t> rows = getConstantDim((*data.dims)[0]),
                         stored = getConstantDim((*data.dims)[1]);
  if (!rows || !stored)
    return ctx.emitError() << "data must have a static shape";
  int64_t k = packed ? *stored * 8 / *bits : *stored;
  int64_t blocks = (k + *blockSize - 1) / *blockSize;
  if (scales.dims) {
    SmallVector<std::optional<int64_t>, 2> dims;
    for (AffineExpr d : *scales.dims)
      dims.push_back(getConstantDim(d));
    if (dims.size() != 2 || dims[0] != *rows || dims[1] != blocks)
      return ctx.emitError()
             << "scales must be [" << *rows << ", " << blocks << "] (rows x "
             << "blocks of " << *blockSize << " along " << k << " columns)";
  }
  if (ctx.hasInput(3)) {
    const ONNXValueFacts &zp = ctx.input(3);
    if (zp.elementType != data.elementType)
      return ctx.emitError() << "zero_points of type " << zp.elementType
                             << " must have data's type " << data.elementType;
    int64_t perRow = packed ? (blocks * *bits + 7) / 8 : blocks;
    if (std::optional<int64_t> count = zp.getStaticNumElements();
        count && *count != *rows * perRow)
      return ctx.emitError()
             << "zero_points has " << *count << " elements; " << *rows
             << " rows x " << perRow << " = " << *rows * perRow << " expected";
  }
  if (!indices.dims)
    return success();
  Dims dims = *indices.dims;
  dims.push_back(cst(ctx, k));
  out.dims = dims;
  return success();
}

} // namespace

void mlir::folio::appendFusedOps(std::vector<ONNXOpSchema> &table) {
  table.push_back({kONNXDomain, "Attention", 23, 3, 6, 1, 4, inferAttention});
  table.push_back(
      {kONNXDomain, "RMSNormalization", 23, 2, 2, 1, 1, inferRMSNormalization});
  table.push_back(
      {kONNXDomain, "RotaryEmbedding", 23, 3, 4, 1, 1, inferRotaryEmbedding});
  // ONNX Runtime registers SimplifiedLayerNormalization in the default
  // domain (opset 1) although it is not an ONNX op; exporters follow it.
  table.push_back({kONNXDomain, "SimplifiedLayerNormalization", 1, 2, 2, 1, 2,
                   inferSimplifiedLayerNormalization});
  table.push_back({kMicrosoftDomain, "SimplifiedLayerNormalization", 1, 2, 2, 1,
                   2, inferSimplifiedLayerNormalization});
  table.push_back({kMicrosoftDomain, "SkipSimplifiedLayerNormalization", 1, 3,
                   4, 1, 4, inferSkipSimplifiedLayerNormalization});
  // input, skip, gamma, beta, bias; the outputs of the simplified form.
  table.push_back({kMicrosoftDomain, "SkipLayerNormalization", 1, 3, 5, 1, 4,
                   inferSkipSimplifiedLayerNormalization});
  table.push_back({kMicrosoftDomain, "RotaryEmbedding", 1, 4, 4, 1, 1,
                   inferRotaryEmbedding});
  // key/value (1, 2: omitted for packed QKV) and past_key/past_value (3, 4)
  // are optional; seqlens_k and total_sequence_length (5, 6) are checked by
  // the handler.
  table.push_back({kMicrosoftDomain, "GroupQueryAttention", 1, 1, 12, 1, 3,
                   inferGroupQueryAttention});
  // query, key, value, then bias, key_padding_mask, attention_bias,
  // past_key, past_value, past_sequence_length, cache_indirection.
  table.push_back({kMicrosoftDomain, "MultiHeadAttention", 1, 1, 10, 1, 4,
                   inferMultiHeadAttention});
  // A, B, scales, then zero_points, g_idx and bias (optional).
  table.push_back(
      {kMicrosoftDomain, "MatMulNBits", 1, 3, 6, 1, 1, inferMatMulNBits});
  // data, indices, scales, then zero_points (optional).
  table.push_back({kMicrosoftDomain, "GatherBlockQuantized", 1, 3, 4, 1, 1,
                   inferGatherBlockQuantized});
}
