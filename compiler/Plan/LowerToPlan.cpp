//===- LowerToPlan.cpp - The serving entry as a plan ----------------------===//
//
// One step per folio op of the lowered serving entry (folio-verify-lowered
// has checked that nothing else is left): shapes are static but for the
// token count, so a reshape carries its target shape with -1 for that dim
// and no step computes a shape at run time.
//
//===----------------------------------------------------------------------===//

#include "compiler/Plan/LowerToPlan.h"
#include "compiler/Target/Target.h"

#include "dialects/Folio/IR/ConstantData.h"
#include "dialects/Folio/IR/FolioOps.h"
#include "dialects/Folio/IR/FolioTypes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>

using namespace mlir;
namespace plan = ::folio::plan;

namespace mlir::folio {
namespace {

llvm::Error opError(Operation *op, const Twine &message) {
  std::string loc;
  llvm::raw_string_ostream os(loc);
  op->getLoc().print(os);
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 op->getName().getStringRef().str() + " at " +
                                     loc + ": " + message.str());
}

std::optional<plan::ElemType> elemTypeOf(Type t) {
  if (t.isF32())
    return plan::ElemType::F32;
  if (t.isF16())
    return plan::ElemType::F16;
  if (t.isBF16())
    return plan::ElemType::BF16;
  if (t.isIndex() || t.isInteger(64))
    return plan::ElemType::I64;
  if (t.isInteger(32))
    return plan::ElemType::I32;
  return std::nullopt;
}

/// A KV cache's dtype: the tensor types plus the cache-only fp8 and
/// integer ones.
std::optional<plan::ElemType> cacheElemTypeOf(Type t) {
  if (isa<Float8E4M3FNType>(t))
    return plan::ElemType::F8E4M3;
  if (isa<Float8E5M2Type>(t))
    return plan::ElemType::F8E5M2;
  if (t.isSignlessInteger(8))
    return plan::ElemType::I8;
  if (t.isSignlessInteger(4))
    return plan::ElemType::I4;
  if (t.isSignlessInteger(2))
    return plan::ElemType::I2;
  if (t.isF32() || t.isF16() || t.isBF16())
    return elemTypeOf(t);
  return std::nullopt;
}

std::optional<plan::ValueInfo::KVScale> kvScaleOf(ScaleLayout scale) {
  using S = plan::ValueInfo::KVScale;
  switch (scale) {
  case ScaleLayout::none:
    return S::None;
  case ScaleLayout::per_tensor:
    return S::PerTensor;
  case ScaleLayout::per_head:
    return S::PerHead;
  case ScaleLayout::per_token_head:
    return S::PerTokenHead;
  case ScaleLayout::per_token_group:
    return S::PerTokenGroup;
  case ScaleLayout::kivi:
    return S::Kivi;
  }
  return std::nullopt;
}

/// The first attribute payload between '<' and '>' of a dialect enum attr
/// (`#folio.rope_style<interleaved>` -> "interleaved").
std::string enumSpelling(Attribute attr) {
  std::string s;
  llvm::raw_string_ostream os(s);
  attr.print(os);
  size_t open = s.find('<'), close = s.rfind('>');
  if (open == std::string::npos || close == std::string::npos || close < open)
    return s;
  return s.substr(open + 1, close - open - 1);
}

std::optional<plan::AttrValue> convertAttr(Attribute attr) {
  if (auto b = dyn_cast<BoolAttr>(attr))
    return plan::AttrValue(int64_t(b.getValue()));
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return plan::AttrValue(i.getValue().getSExtValue());
  if (auto f = dyn_cast<FloatAttr>(attr))
    return plan::AttrValue(f.getValueAsDouble());
  if (auto s = dyn_cast<StringAttr>(attr))
    return plan::AttrValue(s.getValue().str());
  if (auto a = dyn_cast<DenseI64ArrayAttr>(attr)) {
    std::vector<int64_t> v(a.asArrayRef().begin(), a.asArrayRef().end());
    for (int64_t &d : v)
      if (ShapedType::isDynamic(d))
        d = -1;
    return plan::AttrValue(v);
  }
  if (auto arr = dyn_cast<ArrayAttr>(attr)) {
    std::vector<int64_t> ints;
    std::vector<double> floats;
    for (Attribute e : arr) {
      if (auto i = dyn_cast<IntegerAttr>(e))
        ints.push_back(i.getValue().getSExtValue());
      else if (auto f = dyn_cast<FloatAttr>(e))
        floats.push_back(f.getValueAsDouble());
      else
        return std::nullopt;
    }
    if (!floats.empty() && ints.empty())
      return plan::AttrValue(floats);
    if (floats.empty())
      return plan::AttrValue(ints);
    return std::nullopt;
  }
  if (attr.getDialect().getNamespace() == "folio")
    return plan::AttrValue(enumSpelling(attr));
  return std::nullopt;
}

class Lowering {
public:
  explicit Lowering(plan::Plan &p) : p(p) {}

  llvm::Expected<int32_t> valueFor(Value v) {
    auto it = slots.find(v);
    if (it != slots.end())
      return it->second;
    plan::ValueInfo info;
    Type t = v.getType();
    if (auto cache = dyn_cast<KVCacheType>(t)) {
      info.kind = plan::ValueInfo::Kind::KVCache;
      auto et = cacheElemTypeOf(cache.getDtype());
      auto scale = kvScaleOf(cache.getScale());
      if (!et || !scale) {
        std::string type;
        llvm::raw_string_ostream os(type);
        os << cache;
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "KV cache " + type +
                " is not supported by plans yet (f32, f16, bf16; fp8 with "
                "static scales; int8 and int4 with per-token scales; int2 "
                "with kivi)");
      }
      info.type = *et;
      info.kvHeads = cache.getHeads();
      info.headDim = cache.getHeadDim();
      info.blockSize = cache.getBlock();
      info.kvScale = *scale;
      info.kvGroup = cache.getGroup();
      info.kvResidual = cache.getResidual();
    } else if (auto rt = dyn_cast<RankedTensorType>(t)) {
      auto et = elemTypeOf(rt.getElementType());
      if (!et)
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "unsupported element type in a plan");
      info.type = *et;
      for (int64_t d : rt.getShape())
        info.dims.push_back(ShapedType::isDynamic(d) ? -1 : d);
    } else if (auto et = elemTypeOf(t)) {
      info.type = *et; // a scalar (index) value: rank 0
    } else {
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "unsupported value type in a plan");
    }
    int32_t id = p.addValue(std::move(info));
    slots[v] = id;
    return id;
  }

  llvm::Error lowerConstant(arith::ConstantOp op) {
    auto id = valueFor(op.getResult());
    if (!id)
      return opError(op, toString(id.takeError()));
    const plan::ValueInfo &info = p.values[size_t(*id)];
    size_t es = plan::elemTypeSize(info.type);
    std::vector<char> bytes;
    Attribute value = op.getValue();
    if (auto res = dyn_cast<DenseResourceElementsAttr>(value)) {
      AsmResourceBlob *blob = res.getRawHandle().getBlob();
      if (!blob)
        return opError(op, "the weight's resource blob is missing");
      ArrayRef<char> data = blob->getData();
      plan::Constant c{*id, p.blob.append(data.data(), data.size()),
                       data.size()};
      p.constants.push_back(c);
      return llvm::Error::success();
    }
    if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
      int64_t n = dense.getNumElements();
      bytes.resize(size_t(n) * es);
      Type et = dense.getElementType();
      if (isa<FloatType>(et)) {
        if (!et.isF32())
          return opError(op, "only f32 float constants are supported");
        auto vals = dense.getValues<float>();
        std::copy(vals.begin(), vals.end(),
                  reinterpret_cast<float *>(bytes.data()));
      } else {
        auto vals = dense.getValues<APInt>();
        int64_t i = 0;
        for (const APInt &v : vals) {
          int64_t x = v.getSExtValue();
          if (es == 8)
            reinterpret_cast<int64_t *>(bytes.data())[i++] = x;
          else
            reinterpret_cast<int32_t *>(bytes.data())[i++] = int32_t(x);
        }
      }
    } else if (auto i = dyn_cast<IntegerAttr>(value)) {
      bytes.resize(es);
      int64_t x = i.getValue().getSExtValue();
      if (es == 8)
        std::memcpy(bytes.data(), &x, 8);
      else {
        int32_t y = int32_t(x);
        std::memcpy(bytes.data(), &y, 4);
      }
    } else if (auto f = dyn_cast<FloatAttr>(value)) {
      float x = float(f.getValueAsDouble());
      bytes.resize(4);
      std::memcpy(bytes.data(), &x, 4);
    } else {
      return opError(op, "unsupported constant attribute");
    }
    plan::Constant c{*id, p.blob.append(bytes.data(), bytes.size()),
                     bytes.size()};
    p.constants.push_back(c);
    return llvm::Error::success();
  }

  /// A weight the model stores quantized (a folio.dequantize over
  /// constants): the plan holds it dequantized, as an f32 constant, and
  /// `sources` (when given) its codes and scales, for StoreWeights to store
  /// them exactly.
  llvm::Error
  lowerQuantizedWeight(DequantizeOp op,
                       std::vector<QuantizedWeightSource> *sources) {
    std::string why;
    FailureOr<QuantizedWeight> read = readQuantizedWeight(op, why);
    if (failed(read))
      return opError(op, why);
    QuantizedWeightSource q;
    static_cast<QuantizedWeight &>(q) = std::move(*read);
    size_t count = size_t(q.rows * q.cols);
    auto id = valueFor(op.getResult());
    if (!id)
      return opError(op, toString(id.takeError()));
    std::vector<float> values(count);
    for (int64_t i = 0; i < q.rows; ++i)
      for (int64_t j = 0; j < q.cols; ++j)
        values[size_t(i * q.cols + j)] = q.valueAt(i, j);
    p.constants.push_back(plan::Constant{
        *id, p.blob.append(values.data(), count * 4), count * 4});
    if (sources) {
      q.value = *id;
      sources->push_back(std::move(q));
    }
    return llvm::Error::success();
  }

  /// `v` names the same slot as `id` (a kernel's block argument and its
  /// operand, a kernel's result and the value its body yields).
  void alias(Value v, int32_t id) { slots[v] = id; }

  /// A folio.kernel: its body's ops become the kernel's steps.
  llvm::Error lowerKernel(KernelOp kernel) {
    plan::Kernel k;
    k.kind = kernel.getName().str();
    k.firstStep = int32_t(p.steps.size());
    Block &body = kernel.getBody().front();
    auto yield = cast<YieldOp>(body.getTerminator());
    // `v` names the slot of `slotOf` (a body argument its operand's, a
    // kernel result the yielded value's), which joins `list`.
    auto bind = [&](Value v, Value slotOf,
                    std::vector<int32_t> &list) -> llvm::Error {
      auto id = valueFor(slotOf);
      if (!id)
        return opError(kernel, toString(id.takeError()));
      alias(v, *id);
      list.push_back(*id);
      return llvm::Error::success();
    };
    for (auto [arg, input] : llvm::zip(body.getArguments(), kernel.getInputs()))
      if (auto err = bind(arg, input, k.inputs))
        return err;
    for (Operation &op : body.without_terminator())
      if (auto err = lowerOp(&op))
        return err;
    for (auto [result, yielded] :
         llvm::zip(kernel.getResults(), yield.getOperands()))
      if (auto err = bind(result, yielded, k.outputs))
        return err;
    k.numSteps = int32_t(p.steps.size()) - k.firstStep;
    if (k.numSteps == 0)
      return opError(kernel, "a kernel without ops");
    p.kernels.push_back(std::move(k));
    return llvm::Error::success();
  }

  /// An op outside any kernel (an entry that did not run folio-fuse): a
  /// kernel of its own.
  llvm::Error lowerAlone(Operation *op) {
    plan::Kernel k;
    k.kind = op->getName().stripDialect().str();
    k.firstStep = int32_t(p.steps.size());
    if (auto err = lowerOp(op))
      return err;
    k.numSteps = 1;
    k.inputs = p.steps.back().operands;
    llvm::erase_if(k.inputs, [](int32_t id) { return id < 0; });
    k.outputs = p.steps.back().results;
    p.kernels.push_back(std::move(k));
    return llvm::Error::success();
  }

  llvm::Error lowerOp(Operation *op) { return lowerOp(op, p.steps); }

  /// One step for `op`, appended to `steps` (forward's or an entry's).
  llvm::Error lowerOp(Operation *op, std::vector<plan::Step> &steps) {
    if (op->getNumRegions() != 0)
      return opError(op, "nested regions are not part of the lowered form");
    plan::Step step;
    step.kind = op->getName().stripDialect().str();
    if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
      step.name = loc.getName().str();
    // spec_verify's operands keep their places, -1 for an absent optional
    // one (the executors read them by position); other ops list what they
    // have (kv_write's and paged_attention's trailing scales).
    SmallVector<Value> operands(op->getOperands());
    if (auto verify = dyn_cast<SpecVerifyOp>(op))
      operands = {verify.getTargetLogits(), verify.getDraftTokens(),
                  verify.getDraftProbs(), verify.getUniforms()};
    for (Value v : operands) {
      if (!v) {
        step.operands.push_back(-1);
        continue;
      }
      auto id = valueFor(v);
      if (!id)
        return opError(op, toString(id.takeError()));
      step.operands.push_back(*id);
    }
    for (Value v : op->getResults()) {
      auto id = valueFor(v);
      if (!id)
        return opError(op, toString(id.takeError()));
      step.results.push_back(*id);
    }
    auto addAttr = [&](StringRef name, Attribute a) -> llvm::Error {
      std::optional<plan::AttrValue> v = convertAttr(a);
      if (!v)
        return opError(op, "attribute '" + name + "' cannot be represented");
      step.attrs.push_back({name.str(), std::move(*v)});
      return llvm::Error::success();
    };
    if (!isa<FolioDialect>(op->getDialect()) || isa<ONNXNodeOp>(op))
      return opError(op, "is not a folio op; plans take the lowered form "
                         "(run the whole pipeline)");
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      std::vector<int64_t> shape;
      for (int64_t d : reshape.getType().getShape())
        shape.push_back(ShapedType::isDynamic(d) ? -1 : d);
      step.attrs.push_back({"shape", shape});
    } else if (auto castOp = dyn_cast<CastOp>(op)) {
      std::string to;
      llvm::raw_string_ostream os(to);
      os << castOp.getType().getElementType();
      step.attrs.push_back({"to", to});
    } else {
      for (NamedAttribute a : op->getAttrs())
        if (a.getName() != "operandSegmentSizes")
          if (auto err = addAttr(a.getName(), a.getValue()))
            return err;
    }
    steps.push_back(std::move(step));
    return llvm::Error::success();
  }

  /// A verify entry (folio-speculative): its arguments by name, its ops as
  /// steps that run alone (a folio.kernel region's body is lowered in
  /// place: an entry has no kernels), its results.
  llvm::Error lowerEntry(func::FuncOp func, plan::Entry &e) {
    e.name = func.getName().str();
    for (BlockArgument arg : func.getArguments()) {
      auto id = valueFor(arg);
      if (!id)
        return id.takeError();
      auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                    "folio.onnx_name");
      if (!name)
        return opError(func, "argument " + Twine(arg.getArgNumber()) +
                                 " of the verify entry has no "
                                 "folio.onnx_name (run folio-speculative)");
      e.inputs.push_back({name.getValue().str(), *id});
    }
    for (Operation &op : func.getBody().front()) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (Value v : ret.getOperands()) {
          auto id = valueFor(v);
          if (!id)
            return id.takeError();
          e.outputs.push_back(*id);
        }
        continue;
      }
      if (auto kernel = dyn_cast<KernelOp>(op)) {
        Block &body = kernel.getBody().front();
        for (auto [arg, input] :
             llvm::zip(body.getArguments(), kernel.getInputs())) {
          auto id = valueFor(input);
          if (!id)
            return opError(kernel, toString(id.takeError()));
          alias(arg, *id);
        }
        for (Operation &inner : body.without_terminator())
          if (auto err = lowerOp(&inner, e.steps))
            return err;
        auto yield = cast<YieldOp>(body.getTerminator());
        for (auto [result, yielded] :
             llvm::zip(kernel.getResults(), yield.getOperands())) {
          auto id = valueFor(yielded);
          if (!id)
            return opError(kernel, toString(id.takeError()));
          alias(result, *id);
        }
        continue;
      }
      if (isa<arith::ConstantOp>(op))
        return opError(&op, "a verify entry takes no constants");
      if (auto err = lowerOp(&op, e.steps))
        return err;
    }
    return llvm::Error::success();
  }

  /// Whether `v` is computed from the `positions` argument by views and
  /// casts only (then a table it indexes bounds the positions).
  bool fromPositions(Value v, Value positions) {
    for (int depth = 0; depth < 32 && v; ++depth) {
      if (v == positions)
        return true;
      // Across kernel boundaries: a body argument is the kernel's operand,
      // a kernel result the value its body yields.
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        auto kernel = dyn_cast<KernelOp>(arg.getOwner()->getParentOp());
        if (!kernel)
          return false;
        v = kernel.getInputs()[arg.getArgNumber()];
        continue;
      }
      Operation *def = v.getDefiningOp();
      if (auto kernel = dyn_cast<KernelOp>(def)) {
        auto yield = cast<YieldOp>(kernel.getBody().front().getTerminator());
        v = yield.getOperand(cast<OpResult>(v).getResultNumber());
        continue;
      }
      if (!def || def->getNumOperands() == 0 || !isa<CastOp, ReshapeOp>(def))
        return false;
      v = def->getOperand(0);
    }
    return false;
  }

private:
  plan::Plan &p;
  llvm::DenseMap<Value, int32_t> slots;
};

/// What the one dynamic dim of each tensor value counts: the entry's
/// arguments say it by name (num_tokens, num_rows, num_seqs); every op's
/// result inherits it from its first operand that has one, except
/// gather_rows, whose rows are its indices'.
void assignDimSymbols(plan::Plan &p, func::FuncOp func) {
  auto symbolOf = [](StringRef name) {
    if (name == "num_tokens")
      return plan::DimSymbol::Tokens;
    if (name == "num_rows")
      return plan::DimSymbol::Rows;
    if (name == "num_seqs")
      return plan::DimSymbol::Seqs;
    return plan::DimSymbol::None;
  };
  auto dynamicDims = [](const plan::ValueInfo &v) {
    return std::count(v.dims.begin(), v.dims.end(), int64_t(-1));
  };
  for (auto [arg, input] : llvm::zip(func.getArguments(), p.inputs)) {
    auto names =
        func.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), "folio.dim_names");
    plan::ValueInfo &v = p.values[size_t(input.value)];
    if (!names || dynamicDims(v) != 1)
      continue;
    for (auto [d, name] : llvm::enumerate(names))
      if (d < v.dims.size() && v.dims[d] < 0)
        if (auto str = dyn_cast<StringAttr>(name))
          v.symbol = symbolOf(str.getValue());
  }
  for (const plan::Step &s : p.steps) {
    plan::DimSymbol from = plan::DimSymbol::None;
    if (s.kind == "gather_rows" && s.operands.size() == 2)
      from = p.values[size_t(s.operands[1])].symbol;
    else
      for (int32_t id : s.operands)
        if (id >= 0 && p.values[size_t(id)].symbol != plan::DimSymbol::None) {
          from = p.values[size_t(id)].symbol;
          break;
        }
    // The symbol carries over only where the dynamic dim counts the same:
    // a reshape that merges it with static dims ([?, 4, 8] -> [?, 8])
    // makes a dim the symbol does not describe.
    auto staticProduct = [](const plan::ValueInfo &v) {
      int64_t n = 1;
      for (int64_t d : v.dims)
        if (d >= 0)
          n *= d;
      return n;
    };
    for (int32_t id : s.results) {
      plan::ValueInfo &v = p.values[size_t(id)];
      if (v.kind != plan::ValueInfo::Kind::Tensor || dynamicDims(v) != 1)
        continue;
      v.symbol = from;
      if (s.kind == "reshape" && !s.operands.empty() && s.operands[0] >= 0 &&
          staticProduct(p.values[size_t(s.operands[0])]) != staticProduct(v))
        v.symbol = plan::DimSymbol::None;
    }
  }
}

/// Each value's buffer is free after the last kernel that reads it (or the
/// one that makes it, if none does): decided here, once, for every
/// executor. Constants, the outputs and the KV caches live on.
void planReleases(plan::Plan &p) {
  std::vector<int64_t> last(p.values.size(), -1);
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    const plan::Kernel &kernel = p.kernels[k];
    for (int32_t s = kernel.firstStep; s < kernel.firstStep + kernel.numSteps;
         ++s) {
      for (int32_t id : p.steps[size_t(s)].operands)
        if (id >= 0)
          last[size_t(id)] = int64_t(k);
      for (int32_t id : p.steps[size_t(s)].results)
        last[size_t(id)] = std::max(last[size_t(id)], int64_t(k));
    }
  }
  std::vector<bool> keep(p.values.size(), false);
  for (int32_t id : p.outputs)
    keep[size_t(id)] = true;
  for (const plan::Constant &c : p.constants)
    keep[size_t(c.value)] = true;
  for (size_t id = 0; id < last.size(); ++id)
    if (last[id] >= 0 && !keep[id] &&
        p.values[id].kind != plan::ValueInfo::Kind::KVCache)
      p.kernels[size_t(last[id])].releases.push_back(int32_t(id));
}

/// Buffers shared by values whose lifetimes do not overlap, decided here
/// for every executor: a forward then needs one allocation per buffer, not
/// per value. A value lives from the kernel that makes it to the last
/// kernel that reads it or any view of it (reshape, slice and transpose may
/// return views of their input, so their readers keep the input alive).
/// Buffers are reused only between values of the same size expression, and
/// not within the kernel that frees them (its inputs are read while its
/// outputs are written).
void planBuffers(plan::Plan &p) {
  size_t n = p.values.size();
  std::vector<int64_t> def(n, -1), last(n, -1);
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    const plan::Kernel &kernel = p.kernels[k];
    for (int32_t s = kernel.firstStep; s < kernel.firstStep + kernel.numSteps;
         ++s) {
      for (int32_t id : p.steps[size_t(s)].operands)
        if (id >= 0)
          last[size_t(id)] = std::max(last[size_t(id)], int64_t(k));
      for (int32_t id : p.steps[size_t(s)].results) {
        if (def[size_t(id)] < 0)
          def[size_t(id)] = int64_t(k);
        last[size_t(id)] = std::max(last[size_t(id)], int64_t(k));
      }
    }
  }
  std::vector<bool> view(n, false), keep(n, false);
  for (auto it = p.steps.rbegin(); it != p.steps.rend(); ++it) {
    const plan::Step &s = *it;
    if ((s.kind != "reshape" && s.kind != "slice" && s.kind != "transpose") ||
        s.operands.empty() || s.operands[0] < 0 || s.results.size() != 1)
      continue;
    size_t src = size_t(s.operands[0]), dst = size_t(s.results[0]);
    view[dst] = true;
    last[src] = std::max(last[src], last[dst]);
  }
  for (int32_t id : p.outputs)
    keep[size_t(id)] = true;
  std::map<std::pair<int64_t, int>, std::vector<int32_t>> free;
  auto keyOf = [&](const plan::ValueInfo &v) {
    int64_t bytes = int64_t(plan::elemTypeSize(v.type));
    for (int64_t d : v.dims)
      if (d >= 0)
        bytes *= d;
    bool dynamic = std::count(v.dims.begin(), v.dims.end(), int64_t(-1)) > 0;
    return std::make_pair(bytes,
                          int(dynamic ? v.symbol : plan::DimSymbol::None));
  };
  auto planned = [&](size_t id) {
    const plan::ValueInfo &v = p.values[id];
    if (def[id] < 0 || view[id] || keep[id] ||
        v.kind != plan::ValueInfo::Kind::Tensor)
      return false;
    int64_t dynamic = std::count(v.dims.begin(), v.dims.end(), int64_t(-1));
    return dynamic == 0 || (dynamic == 1 && v.symbol != plan::DimSymbol::None);
  };
  std::vector<std::vector<int32_t>> madeIn(p.kernels.size()),
      freedIn(p.kernels.size());
  for (size_t id = 0; id < n; ++id)
    if (planned(id)) {
      madeIn[size_t(def[id])].push_back(int32_t(id));
      freedIn[size_t(last[id])].push_back(int32_t(id));
    }
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    for (int32_t id : madeIn[k]) {
      plan::ValueInfo &v = p.values[size_t(id)];
      std::pair<int64_t, int> key = keyOf(v);
      std::vector<int32_t> &pool = free[key];
      if (!pool.empty()) {
        v.buffer = pool.back();
        pool.pop_back();
      } else {
        v.buffer = int32_t(p.buffers.size());
        p.buffers.push_back({key.first, plan::DimSymbol(key.second)});
      }
    }
    for (int32_t id : freedIn[k])
      free[keyOf(p.values[size_t(id)])].push_back(p.values[size_t(id)].buffer);
  }
}

} // namespace

llvm::Expected<plan::Plan>
lowerModuleToPlan(ModuleOp module,
                  std::vector<QuantizedWeightSource> *sources) {
  auto func = module.lookupSymbol<func::FuncOp>("forward");
  if (!func || func.isExternal())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "the module has no 'forward' serving entry (run the whole pipeline, "
        "not --stop-after)");
  plan::Plan p;
  Lowering lowering(p);
  Value positions;
  for (BlockArgument arg : func.getArguments()) {
    auto id = lowering.valueFor(arg);
    if (!id)
      return id.takeError();
    std::string name = "arg" + std::to_string(arg.getArgNumber());
    if (auto n = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                   "folio.onnx_name"))
      name = n.getValue().str();
    if (name == "positions")
      positions = arg;
    p.inputs.push_back({name, *id});
  }
  // Tables indexed by position bound the context a model supports.
  int64_t maxPositions = INT64_MAX;
  func.walk([&](Operation *op) {
    if (auto emb = dyn_cast<EmbeddingOp>(op)) {
      if (positions && lowering.fromPositions(emb.getIds(), positions))
        maxPositions = std::min<int64_t>(
            maxPositions,
            cast<RankedTensorType>(emb.getTable().getType()).getDimSize(0));
    } else if (auto rot = dyn_cast<RotaryOp>(op)) {
      if (Value table = rot.getCosSinCache())
        maxPositions = std::min<int64_t>(
            maxPositions,
            cast<RankedTensorType>(table.getType()).getDimSize(0));
    }
  });
  for (Operation &op : func.getBody().front()) {
    if (auto c = dyn_cast<arith::ConstantOp>(op)) {
      // The codes and scales of quantized weights are read with them.
      if (!c->use_empty() && llvm::all_of(c->getUsers(), isWeightDequantize))
        continue;
      if (auto err = lowering.lowerConstant(c))
        return std::move(err);
      continue;
    }
    if (isWeightDequantize(&op)) {
      if (auto err =
              lowering.lowerQuantizedWeight(cast<DequantizeOp>(op), sources))
        return std::move(err);
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (Value v : ret.getOperands()) {
        auto id = lowering.valueFor(v);
        if (!id)
          return id.takeError();
        p.outputs.push_back(*id);
      }
      continue;
    }
    if (auto kernel = dyn_cast<KernelOp>(op)) {
      if (auto err = lowering.lowerKernel(kernel))
        return std::move(err);
      continue;
    }
    if (auto err = lowering.lowerAlone(&op))
      return std::move(err);
  }
  assignDimSymbols(p, func);
  planReleases(p);
  planBuffers(p);
  // The verify entries after forward's memory plan: their values are bound
  // to the caller's arrays, never to planned buffers.
  for (StringRef name : {plan::kVerifyGreedyEntry, plan::kVerifySampleEntry,
                         plan::kVerifySampleOneHotEntry}) {
    auto entry = module.lookupSymbol<func::FuncOp>(name);
    if (!entry || entry.isExternal())
      continue;
    p.entries.emplace_back();
    if (auto err = lowering.lowerEntry(entry, p.entries.back()))
      return std::move(err);
  }
  if (p.outputs.size() != 1)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "forward must return exactly the logits");
  const plan::ValueInfo &logits = p.values[size_t(p.outputs[0])];
  if (logits.dims.size() == 2 && logits.dims[1] > 0)
    p.config.emplace_back("vocab", logits.dims[1]);
  if (auto bs = module->getAttrOfType<IntegerAttr>("folio.block_size"))
    p.config.emplace_back("block_size", bs.getInt());
  // The KV dtype that was asked for (folio-set-target resolved `auto`), so
  // tools can name it even when every layer was kept at 16 bits.
  if (auto dtype = module->getAttrOfType<StringAttr>("folio.kv_cache_dtype")) {
    std::optional<::folio::KVCacheDType> parsed =
        ::folio::parseKVCacheDType(dtype.getValue().str());
    if (!parsed || *parsed == ::folio::KVCacheDType::Auto)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "the module's folio.kv_cache_dtype '" + dtype.getValue().str() +
              "' is not a resolved KV-cache dtype (one of " +
              ::folio::supportedKVCacheDTypes() +
              " other than auto; run folio-set-target)");
    p.config.emplace_back("kv_cache_dtype", int64_t(*parsed));
  }
  if (maxPositions != INT64_MAX)
    p.config.emplace_back("max_positions", maxPositions);
  // The context the attention masks were proven for (folio-raise-attention
  // sets it where a mask was evaluated): longer sequences are refused.
  if (auto proven = func->getAttrOfType<IntegerAttr>("folio.max_context"))
    p.config.emplace_back("max_context", proven.getInt());
  return p;
}

} // namespace mlir::folio
