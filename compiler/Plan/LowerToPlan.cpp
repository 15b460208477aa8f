//===- LowerToPlan.cpp - The serving entry as a plan ----------------------===//
//
// One step per folio op of the lowered serving entry (folio-verify-lowered
// has checked that nothing else is left): shapes are static but for the
// token count, so a reshape carries its target shape with -1 for that dim
// and no step computes a shape at run time.
//
//===----------------------------------------------------------------------===//

#include "compiler/Plan/LowerToPlan.h"

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
      auto et = elemTypeOf(cache.getDtype());
      if (!et)
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "KV cache dtype is not supported by plans yet (f32, f16, bf16)");
      info.type = *et;
      info.kvHeads = cache.getHeads();
      info.headDim = cache.getHeadDim();
      info.blockSize = cache.getBlock();
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

  llvm::Error lowerOp(Operation *op) {
    if (op->getNumRegions() != 0)
      return opError(op, "ops with regions are not supported in plans yet");
    plan::Step step;
    step.kind = op->getName().getStringRef().str();
    if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
      step.name = loc.getName().str();
    for (Value v : op->getOperands()) {
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
        if (auto err = addAttr(a.getName(), a.getValue()))
          return err;
    }
    p.steps.push_back(std::move(step));
    return llvm::Error::success();
  }

  /// Whether `v` is computed from the `positions` argument by views and
  /// casts only (then a table it indexes bounds the positions).
  bool fromPositions(Value v, Value positions) {
    for (int depth = 0; depth < 16 && v; ++depth) {
      if (v == positions)
        return true;
      Operation *def = v.getDefiningOp();
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

} // namespace

llvm::Expected<plan::Plan> lowerModuleToPlan(ModuleOp module) {
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
  int64_t maxPositions = INT64_MAX;
  for (Operation &op : func.getBody().front()) {
    if (auto c = dyn_cast<arith::ConstantOp>(op)) {
      if (auto err = lowering.lowerConstant(c))
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
    // Tables indexed by position bound the context a model supports.
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
    if (auto err = lowering.lowerOp(&op))
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
  if (maxPositions != INT64_MAX)
    p.config.emplace_back("max_positions", maxPositions);
  // The context the attention masks were proven for (folio-raise-attention
  // sets it where a mask was evaluated): longer sequences are refused.
  if (auto proven = func->getAttrOfType<IntegerAttr>("folio.max_context"))
    p.config.emplace_back("max_context", proven.getInt());
  return p;
}

} // namespace mlir::folio
