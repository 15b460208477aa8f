//===- DefaultDomainGtoQ.cpp - ai.onnx ops G to Q -------------------------===//

#include "compiler/ONNXOps/InferHelpers.h"

#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using namespace mlir::folio;
using namespace mlir::folio::infer;

namespace {

/// GatherElements(data, indices, axis): out[i][j][k] = data[indices[i][j][k]]
/// along `axis` (GPT-J gathers its sin/cos rows by position this way). The
/// result has the indices' shape.
LogicalResult inferGatherElements(ONNXInferenceContext &ctx) {
  const ONNXValueFacts &data = ctx.input(0), &indices = ctx.input(1);
  if (!isIntegerLike(indices.elementType))
    return ctx.emitError() << "indices must be integers, got "
                           << indices.elementType;
  ONNXValueFacts &out = ctx.output(0);
  out.elementType = data.elementType;
  if (!indices.dims)
    return success();
  if (data.dims) {
    int64_t rank = data.dims->size();
    if (int64_t(indices.dims->size()) != rank)
      return ctx.emitError() << "data and indices must have the same rank, got "
                             << rank << " and " << indices.dims->size();
    FailureOr<int64_t> axis = ctx.getInt("axis", 0);
    if (failed(axis) ||
        failed(ctx.normalizeAxis(*axis, std::max<int64_t>(rank, 1), "axis")))
      return failure();
  }
  out.dims = *indices.dims;
  return success();
}

LogicalResult inferGather(ONNXInferenceContext &ctx) {
  const ONNXValueFacts &data = ctx.input(0), &indices = ctx.input(1);
  if (!isIntegerLike(indices.elementType))
    return ctx.emitError() << "indices must be integers, got "
                           << indices.elementType;
  ONNXValueFacts &out = ctx.output(0);
  out.elementType = data.elementType;
  if (!data.dims || !indices.dims)
    return success();
  FailureOr<int64_t> axisAttr = ctx.getInt("axis", 0);
  if (failed(axisAttr))
    return failure();
  int64_t rank = data.dims->size();
  FailureOr<int64_t> axis = ctx.normalizeAxis(*axisAttr, rank, "axis");
  if (failed(axis))
    return failure();
  Dims dims(data.dims->begin(), data.dims->begin() + *axis);
  dims.append(indices.dims->begin(), indices.dims->end());
  dims.append(data.dims->begin() + *axis + 1, data.dims->end());
  out.dims = dims;

  // Gathering from a shape vector: the Shape -> Gather -> Unsqueeze chains
  // every exporter writes.
  std::optional<SmallVector<int64_t, 4>> picks = indices.getConstantInts();
  if (rank == 1 && data.ints && picks && dims.size() <= 1) {
    Dims values;
    int64_t n = data.ints->size();
    for (int64_t index : *picks) {
      if (index < -n || index >= n)
        return ctx.emitError() << "index " << index
                               << " is out of range for a dim of size " << n;
      values.push_back((*data.ints)[index < 0 ? index + n : index]);
    }
    out.ints = values;
  }
  if (rank == 1 && data.floats && picks && dims.size() <= 1) {
    SmallVector<double, 4> values;
    int64_t n = data.floats->size();
    for (int64_t index : *picks)
      if (index >= -n && index < n)
        values.push_back((*data.floats)[index < 0 ? index + n : index]);
    if (values.size() == picks->size())
      out.floats = values;
  }
  return success();
}

/// GatherND: indices [..., k] name slices of data's dims batch_dims ..
/// batch_dims + k; the result is indices' leading dims followed by the
/// rest of data's. Exporters write it for advanced indexing (torch.export's
/// padding-mask lookup mask[batch_idx, kv_idx]); Folio evaluates it where
/// it builds a mask and lowers it nowhere else.
LogicalResult inferGatherND(ONNXInferenceContext &ctx) {
  const ONNXValueFacts &data = ctx.input(0), &indices = ctx.input(1);
  if (!indices.elementType.isInteger(64))
    return ctx.emitError() << "indices must be int64, got "
                           << indices.elementType;
  FailureOr<int64_t> batchDims = ctx.getInt("batch_dims", 0);
  if (failed(batchDims))
    return failure();
  ONNXValueFacts &out = ctx.output(0);
  out.elementType = data.elementType;
  if (!data.dims || !indices.dims)
    return success();
  int64_t rank = data.dims->size(), irank = indices.dims->size();
  if (rank < 1 || irank < 1)
    return ctx.emitError() << "data and indices must have rank >= 1, got "
                           << rank << " and " << irank;
  if (*batchDims < 0 || *batchDims >= std::min(rank, irank))
    return ctx.emitError() << "batch_dims " << *batchDims << " must be in [0, "
                           << std::min(rank, irank) << ")";
  std::optional<int64_t> depth = getConstantDim(indices.dims->back());
  if (!depth)
    return ctx.emitError() << "indices' last dim must be static";
  if (*depth < 1 || *depth > rank - *batchDims)
    return ctx.emitError() << "indices' last dim " << *depth
                           << " must be in [1, " << rank - *batchDims << "]";
  Dims dims(indices.dims->begin(), indices.dims->end() - 1);
  dims.append(data.dims->begin() + *batchDims + *depth, data.dims->end());
  out.dims = dims;
  return success();
}

LogicalResult inferGelu(ONNXInferenceContext &ctx) {
  FailureOr<std::string> approximate = ctx.getString("approximate", "none");
  if (failed(approximate))
    return failure();
  if (*approximate != "none" && *approximate != "tanh")
    return ctx.emitError() << "approximate must be 'none' or 'tanh', got '"
                           << *approximate << "'";
  if (failed(requireFloat(ctx, 0, "input")))
    return failure();
  passThrough(ctx);
  return success();
}

LogicalResult inferGemm(ONNXInferenceContext &ctx) {
  const ONNXValueFacts &a = ctx.input(0), &b = ctx.input(1);
  if (failed(requireFloat(ctx, 0, "A")) || failed(requireFloat(ctx, 1, "B")))
    return failure();
  FailureOr<int64_t> transA = ctx.getInt("transA", 0);
  FailureOr<int64_t> transB = ctx.getInt("transB", 0);
  if (failed(transA) || failed(transB))
    return failure();
  if ((a.dims && a.dims->size() != 2) || (b.dims && b.dims->size() != 2))
    return ctx.emitError() << "A and B must be 2-D";
  ONNXValueFacts &out = ctx.output(0);
  out.elementType = a.elementType;
  AffineExpr m = a.dims ? (*a.dims)[*transA ? 1 : 0] : AffineExpr();
  AffineExpr n = b.dims ? (*b.dims)[*transB ? 0 : 1] : AffineExpr();
  AffineExpr ka = a.dims ? (*a.dims)[*transA ? 0 : 1] : AffineExpr();
  AffineExpr kb = b.dims ? (*b.dims)[*transB ? 1 : 0] : AffineExpr();
  std::optional<int64_t> cka = getConstantDim(ka), ckb = getConstantDim(kb);
  if (cka && ckb && *cka != *ckb)
    return ctx.emitError() << "inner dims differ: " << *cka << " vs " << *ckb;
  out.dims = Dims{m, n};
  return success();
}

enum class Compare { Less, LessOrEqual, Greater, GreaterOrEqual };

LogicalResult inferCompare(ONNXInferenceContext &ctx, Compare kind) {
  if (ctx.input(0).elementType != ctx.input(1).elementType)
    return ctx.emitError() << "inputs have different element types ("
                           << ctx.input(0).elementType << " and "
                           << ctx.input(1).elementType << ")";
  // On the sign of a - b, which holds for every value of the symbols.
  auto decide = [kind](int sign) {
    switch (kind) {
    case Compare::Less:
      return sign < 0;
    case Compare::LessOrEqual:
      return sign <= 0;
    case Compare::Greater:
      return sign > 0;
    case Compare::GreaterOrEqual:
      return sign >= 0;
    }
    return false;
  };
  return inferElementwise(
      ctx, IntegerType::get(ctx.getContext(), 1),
      [decide](AffineExpr a, AffineExpr b) -> AffineExpr {
        std::optional<int> sign = compareDims(a, b);
        if (!sign)
          return AffineExpr();
        return getAffineConstantExpr(decide(*sign), a.getContext());
      },
      nullptr);
}

LogicalResult inferLess(ONNXInferenceContext &ctx) {
  return inferCompare(ctx, Compare::Less);
}
LogicalResult inferLessOrEqual(ONNXInferenceContext &ctx) {
  return inferCompare(ctx, Compare::LessOrEqual);
}
LogicalResult inferGreater(ONNXInferenceContext &ctx) {
  return inferCompare(ctx, Compare::Greater);
}
LogicalResult inferGreaterOrEqual(ONNXInferenceContext &ctx) {
  return inferCompare(ctx, Compare::GreaterOrEqual);
}

LogicalResult inferIdentity(ONNXInferenceContext &ctx) {
  ctx.output(0) = ctx.input(0);
  return success();
}

/// IsNaN: a bool per element (SDPA exports guard fully masked softmax rows
/// with Where(IsNaN(p), 0, p)).
LogicalResult inferIsNaN(ONNXInferenceContext &ctx) {
  if (failed(requireFloat(ctx, 0, "X")))
    return failure();
  passThrough(ctx);
  ctx.output(0).elementType = IntegerType::get(ctx.getContext(), 1);
  return success();
}

LogicalResult inferLayerNormalization(ONNXInferenceContext &ctx) {
  if (failed(requireFloat(ctx, 0, "X")) ||
      failed(requireFloat(ctx, 1, "Scale")))
    return failure();
  FailureOr<int64_t> axis = ctx.getInt("axis", -1);
  FailureOr<double> epsilon = ctx.getFloat("epsilon", 1e-5);
  if (failed(axis) || failed(epsilon))
    return failure();
  passThrough(ctx);
  // Mean and InvStdDev keep the leading dims and reduce the rest to 1.
  const ONNXValueFacts &x = ctx.input(0);
  for (unsigned o = 1; o < ctx.getNumOutputs(); ++o) {
    ONNXValueFacts &stat = ctx.output(o);
    stat.elementType = x.elementType;
    if (!x.dims)
      continue;
    FailureOr<int64_t> a = ctx.normalizeAxis(*axis, x.dims->size(), "axis");
    if (failed(a))
      return failure();
    Dims dims(x.dims->begin(), x.dims->end());
    for (size_t d = *a; d < dims.size(); ++d)
      dims[d] = cst(ctx, 1);
    stat.dims = dims;
  }
  return success();
}

LogicalResult inferLog(ONNXInferenceContext &ctx) {
  return inferUnaryFloat(ctx, [](double x) { return std::log(x); });
}

LogicalResult inferMatMul(ONNXInferenceContext &ctx) {
  const ONNXValueFacts &a = ctx.input(0), &b = ctx.input(1);
  if (a.elementType != b.elementType)
    return ctx.emitError() << "inputs have different element types ("
                           << a.elementType << " and " << b.elementType << ")";
  ONNXValueFacts &out = ctx.output(0);
  out.elementType = a.elementType;
  if (!a.dims || !b.dims)
    return success();
  Dims da = *a.dims, db = *b.dims;
  if (da.empty() || db.empty())
    return ctx.emitError() << "inputs must have rank >= 1";
  bool vecA = da.size() == 1, vecB = db.size() == 1;
  if (vecA)
    da.insert(da.begin(), cst(ctx, 1));
  if (vecB)
    db.push_back(cst(ctx, 1));
  AffineExpr ka = da.back(), kb = db[db.size() - 2];
  std::optional<int64_t> cka = getConstantDim(ka), ckb = getConstantDim(kb);
  if (cka && ckb && *cka != *ckb)
    return ctx.emitError() << "inner dims differ: " << *cka << " vs " << *ckb;
  ONNXValueFacts batchA, batchB;
  batchA.dims = Dims(da.begin(), da.end() - 2);
  batchB.dims = Dims(db.begin(), db.end() - 2);
  FailureOr<std::optional<Dims>> batch =
      broadcastInputs(ctx, {&batchA, &batchB});
  if (failed(batch))
    return failure();
  Dims dims = **batch;
  if (!vecA)
    dims.push_back(da[da.size() - 2]);
  if (!vecB)
    dims.push_back(db.back());
  out.dims = dims;
  return success();
}

LogicalResult inferMaxMin(ONNXInferenceContext &ctx, bool isMax) {
  for (unsigned i = 1; i < ctx.getNumInputs(); ++i)
    if (ctx.input(i).elementType != ctx.input(0).elementType)
      return ctx.emitError() << "inputs have different element types";
  if (ctx.getNumInputs() != 2) {
    SmallVector<const ONNXValueFacts *> all;
    for (unsigned i = 0; i < ctx.getNumInputs(); ++i)
      all.push_back(&ctx.input(i));
    FailureOr<std::optional<Dims>> dims = broadcastInputs(ctx, all);
    if (failed(dims))
      return failure();
    ctx.output(0).elementType = ctx.input(0).elementType;
    ctx.output(0).dims = *dims;
    return success();
  }
  return inferElementwise(
      ctx, ctx.input(0).elementType,
      [isMax](AffineExpr a, AffineExpr b) -> AffineExpr {
        std::optional<int64_t> ca = getConstantDim(a), cb = getConstantDim(b);
        if (!ca || !cb)
          return AffineExpr();
        return getAffineConstantExpr(
            isMax ? std::max(*ca, *cb) : std::min(*ca, *cb), a.getContext());
      },
      [isMax](double a, double b) -> std::optional<double> {
        return isMax ? std::max(a, b) : std::min(a, b);
      });
}

LogicalResult inferMax(ONNXInferenceContext &ctx) {
  return inferMaxMin(ctx, true);
}
LogicalResult inferMin(ONNXInferenceContext &ctx) {
  return inferMaxMin(ctx, false);
}

LogicalResult inferMul(ONNXInferenceContext &ctx) {
  return inferElementwise(
      ctx, ctx.input(0).elementType,
      [](AffineExpr a, AffineExpr b) { return a * b; },
      [](double a, double b) -> std::optional<double> { return a * b; });
}

LogicalResult inferNeg(ONNXInferenceContext &ctx) {
  passThrough(ctx);
  const ONNXValueFacts &in = ctx.input(0);
  if (in.ints) {
    Dims values;
    for (AffineExpr v : *in.ints)
      values.push_back(v ? -v : AffineExpr());
    ctx.output(0).ints = values;
  }
  if (in.floats) {
    SmallVector<double, 4> values;
    for (double v : *in.floats)
      values.push_back(-v);
    ctx.output(0).floats = values;
  }
  return success();
}

LogicalResult inferNot(ONNXInferenceContext &ctx) {
  if (!ctx.input(0).elementType.isInteger(1))
    return ctx.emitError() << "input must be bool";
  passThrough(ctx);
  if (ctx.input(0).ints) {
    Dims values;
    for (AffineExpr v : *ctx.input(0).ints) {
      std::optional<int64_t> c = getConstantDim(v);
      values.push_back(c ? cst(ctx, !*c) : AffineExpr());
    }
    ctx.output(0).ints = values;
  }
  return success();
}

LogicalResult inferOr(ONNXInferenceContext &ctx) {
  for (unsigned i = 0; i < 2; ++i)
    if (!ctx.input(i).elementType.isInteger(1))
      return ctx.emitError() << "input " << i << " must be bool";
  return inferElementwise(
      ctx, IntegerType::get(ctx.getContext(), 1),
      [](AffineExpr a, AffineExpr b) -> AffineExpr {
        std::optional<int64_t> ca = getConstantDim(a), cb = getConstantDim(b);
        if (!ca || !cb)
          return AffineExpr();
        return getAffineConstantExpr(*ca || *cb, a.getContext());
      },
      nullptr);
}

LogicalResult inferPow(ONNXInferenceContext &ctx) {
  return inferElementwise(ctx, ctx.input(0).elementType, nullptr,
                          [](double a, double b) -> std::optional<double> {
                            return std::pow(a, b);
                          });
}

/// QuantizeLinear: y = saturate(round(x / y_scale) + y_zero_point), x's
/// shape, the zero point's integer type (uint8 without one). Folio takes
/// it on activations followed by DequantizeLinear (static quantization's
/// QDQ pairs), which folio-onnx-simplify expands to float arithmetic; 8-bit
/// integer outputs only.
LogicalResult inferQuantizeLinear(ONNXInferenceContext &ctx) {
  const ONNXValueFacts &x = ctx.input(0), &scale = ctx.input(1);
  if (!isa<FloatType>(x.elementType) || !isa<FloatType>(scale.elementType))
    return ctx.emitError() << "x and y_scale must be float tensors";
  FailureOr<int64_t> outputDtype = ctx.getInt("output_dtype", 0);
  if (failed(outputDtype))
    return failure();
  Type out = IntegerType::get(ctx.getContext(), 8, IntegerType::Unsigned);
  if (ctx.getNumInputs() > 2 && ctx.hasInput(2))
    out = ctx.input(2).elementType;
  else if (*outputDtype != 0)
    out = elementTypeFromONNX(ctx.getContext(), *outputDtype);
  if (!out || !out.isInteger(8))
    return ctx.emitError() << "quantizing to " << out
                           << " is not supported; supported: int8, uint8";
  ctx.output(0).elementType = out;
  ctx.output(0).dims = x.dims;
  return success();
}

} // namespace

void mlir::folio::appendDefaultDomainGtoQ(std::vector<ONNXOpSchema> &table) {
  auto add = [&](StringRef op, int64_t since, unsigned minIn, unsigned maxIn,
                 ONNXInferFn fn, unsigned maxOut = 1) {
    table.push_back({kONNXDomain, op, since, minIn, maxIn, 1, maxOut, fn});
  };
  add("Gather", 11, 2, 2, inferGather);
  add("GatherElements", 11, 2, 2, inferGatherElements);
  add("GatherND", 11, 2, 2, inferGatherND);
  add("Gelu", 20, 1, 1, inferGelu);
  add("Gemm", 11, 2, 3, inferGemm);
  add("Greater", 7, 2, 2, inferGreater);
  add("GreaterOrEqual", 12, 2, 2, inferGreaterOrEqual);
  add("Identity", 1, 1, 1, inferIdentity);
  add("IsNaN", 13, 1, 1, inferIsNaN);
  add("LayerNormalization", 17, 2, 3, inferLayerNormalization, 3);
  add("Less", 7, 2, 2, inferLess);
  add("LessOrEqual", 12, 2, 2, inferLessOrEqual);
  add("Log", 6, 1, 1, inferLog);
  add("MatMul", 9, 2, 2, inferMatMul);
  add("Max", 8, 1, ~0u, inferMax);
  add("Min", 8, 1, ~0u, inferMin);
  add("Mul", 7, 2, 2, inferMul);
  add("Neg", 6, 1, 1, inferNeg);
  add("Not", 1, 1, 1, inferNot);
  add("Or", 7, 2, 2, inferOr);
  add("Pow", 7, 2, 2, inferPow);
  add("QuantizeLinear", 13, 2, 3, inferQuantizeLinear);
}
