//===- Evaluator.cpp - Run small ONNX subgraphs on concrete inputs --------===//

#include "compiler/RaiseAttention/Evaluator.h"

#include "compiler/ONNXOps/Match.h"
#include "dialects/Folio/IR/FolioOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

using namespace mlir;
using namespace mlir::folio;

using Kind = ConcreteTensor::Kind;

/// Subgraphs the passes evaluate are masks and angle tables; anything larger
/// means the walk left them (e.g. reached the hidden states).
static constexpr int64_t kMaxElements = int64_t(1) << 22;
static constexpr unsigned kMaxOps = 20000;

/// The element count of `shape`, saturated: INT64_MAX when a dim is
/// negative or the product overflows, so every "> kMaxElements" check
/// refuses it.
static int64_t countElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || llvm::MulOverflow(n, d, n))
      return std::numeric_limits<int64_t>::max();
  return n;
}

int64_t ConcreteTensor::getNumElements() const { return countElements(shape); }

double ConcreteTensor::at(ArrayRef<int64_t> index) const {
  int64_t offset = 0;
  for (auto [i, d] : llvm::enumerate(shape))
    offset = offset * d + (d == 1 ? 0 : index[i]);
  return data[offset];
}

std::string ConcreteTensor::describeShape() const {
  std::string out = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    out += (i ? ", " : "") + std::to_string(d);
  return out + "]";
}

ConcreteTensor ConcreteTensor::filled(Kind kind, ArrayRef<int64_t> shape,
                                      double value) {
  ConcreteTensor t;
  t.kind = kind;
  t.shape.assign(shape.begin(), shape.end());
  // Callers check the size; a shape over the bound gets no elements (and so
  // fails every data.size() == getNumElements() check) instead of a huge
  // allocation.
  int64_t n = t.getNumElements();
  if (n <= kMaxElements)
    t.data.assign(n, value);
  return t;
}

static Kind kindOf(Type type) {
  if (auto shaped = dyn_cast<ShapedType>(type))
    type = shaped.getElementType();
  if (type.isInteger(1))
    return Kind::Bool;
  if (isa<IntegerType, IndexType>(type))
    return Kind::Int;
  return Kind::Float;
}

/// Applies the result element type's value semantics.
static double convertTo(Kind kind, double v) {
  switch (kind) {
  case Kind::Bool:
    return v != 0 ? 1 : 0;
  case Kind::Int:
    if (std::isnan(v))
      return 0;
    return std::trunc(v);
  case Kind::Float:
    return v;
  }
  return v;
}

static SmallVector<int64_t, 4> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t, 4> strides(shape.size(), 1);
  for (int64_t i = int64_t(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// Numpy broadcasting of several shapes.
static FailureOr<SmallVector<int64_t, 4>>
broadcastShapes(ArrayRef<const ConcreteTensor *> inputs) {
  size_t rank = 0;
  for (const ConcreteTensor *t : inputs)
    rank = std::max(rank, t->shape.size());
  SmallVector<int64_t, 4> out(rank, 1);
  for (const ConcreteTensor *t : inputs) {
    size_t offset = rank - t->shape.size();
    for (auto [i, d] : llvm::enumerate(t->shape)) {
      int64_t &o = out[offset + i];
      if (o == 1)
        o = d;
      else if (d != 1 && d != o)
        return failure();
    }
  }
  return out;
}

/// For each element of `outShape`, the offset of the element of a tensor of
/// shape `inShape` that broadcasts to it.
static std::vector<int64_t> broadcastOffsets(ArrayRef<int64_t> outShape,
                                             ArrayRef<int64_t> inShape) {
  size_t rank = outShape.size();
  size_t offset = rank - inShape.size();
  SmallVector<int64_t, 4> inStrides = stridesOf(inShape);
  SmallVector<int64_t, 4> strides(rank, 0);
  for (size_t i = 0; i < inShape.size(); ++i)
    strides[offset + i] = inShape[i] == 1 ? 0 : inStrides[i];
  int64_t n = 1;
  for (int64_t d : outShape)
    n *= d;
  std::vector<int64_t> result(n);
  SmallVector<int64_t, 4> index(rank, 0);
  int64_t current = 0;
  for (int64_t e = 0; e < n; ++e) {
    result[e] = current;
    for (int64_t i = int64_t(rank) - 1; i >= 0; --i) {
      ++index[i];
      current += strides[i];
      if (index[i] < outShape[i])
        break;
      current -= strides[i] * index[i];
      index[i] = 0;
    }
  }
  return result;
}

/// Reads a constant's elements (dense or resource) as doubles.
static FailureOr<ConcreteTensor> readConstant(ElementsAttr attr) {
  auto type = cast<ShapedType>(attr.getType());
  ConcreteTensor t;
  t.kind = kindOf(type);
  t.shape.assign(type.getShape().begin(), type.getShape().end());
  int64_t n = t.getNumElements();
  if (n > kMaxElements)
    return failure();
  Type element = type.getElementType();
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    t.data.reserve(n);
    if (isa<FloatType>(element)) {
      for (APFloat v : dense.getValues<APFloat>()) {
        bool losesInfo = false;
        v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven,
                  &losesInfo);
        t.data.push_back(v.convertToDouble());
      }
    } else if (auto intType = dyn_cast<IntegerType>(element)) {
      for (const APInt &v : dense.getValues<APInt>())
        t.data.push_back(intType.isUnsigned() || intType.getWidth() == 1
                             ? double(v.getZExtValue())
                             : double(v.getSExtValue()));
    } else {
      return failure();
    }
    return t;
  }
  auto resource = dyn_cast<DenseResourceElementsAttr>(attr);
  if (!resource)
    return failure();
  const AsmResourceBlob *blob = resource.getRawHandle().getBlob();
  if (!blob)
    return failure();
  ArrayRef<char> bytes = blob->getData();
  unsigned bits = element.getIntOrFloatBitWidth();
  if (bits % 8 != 0 || int64_t(bytes.size()) != n * int64_t(bits / 8))
    return failure();
  t.data.resize(n);
  const char *p = bytes.data();
  for (int64_t i = 0; i < n; ++i) {
    uint64_t raw = 0;
    std::memcpy(&raw, p + i * (bits / 8), bits / 8);
    if (auto floatType = dyn_cast<FloatType>(element)) {
      APFloat v(floatType.getFloatSemantics(), APInt(bits, raw));
      bool losesInfo = false;
      v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven,
                &losesInfo);
      t.data[i] = v.convertToDouble();
    } else if (auto intType = dyn_cast<IntegerType>(element)) {
      APInt v(bits, raw);
      t.data[i] = intType.isUnsigned() ? double(v.getZExtValue())
                                       : double(v.getSExtValue());
    } else {
      return failure();
    }
  }
  return t;
}

static int64_t toIndex(double v) {
  if (v >= 9.2e18)
    return std::numeric_limits<int64_t>::max();
  if (v <= -9.2e18)
    return std::numeric_limits<int64_t>::min();
  return int64_t(v);
}

/// The row-major offset, over dims `first` .. `first + depth` of `shape`,
/// of the index tuple `tuple` (ScatterND's and GatherND's indices; negative
/// entries count from the end); failure, with `error` naming the entry,
/// when one is out of range.
static FailureOr<int64_t> tupleOffset(ArrayRef<int64_t> shape, int64_t first,
                                      const double *tuple, int64_t depth,
                                      std::string &error) {
  int64_t offset = 0;
  for (int64_t d = 0; d < depth; ++d) {
    int64_t size = shape[first + d], i = toIndex(tuple[d]);
    int64_t at = i < 0 ? i + size : i;
    if (at < 0 || at >= size) {
      error = "index " + std::to_string(i) + " is out of range for dim " +
              std::to_string(first + d) + " of size " + std::to_string(size);
      return failure();
    }
    offset = offset * size + at;
  }
  return offset;
}

void ONNXEvaluator::bind(Value value, ConcreteTensor tensor) {
  values[value] = std::move(tensor);
}

void ONNXEvaluator::bindSymbol(AffineExpr symbol, int64_t value) {
  if (auto s = dyn_cast_or_null<AffineSymbolExpr>(symbol))
    symbols[s.getPosition()] = value;
}

std::optional<int64_t> ONNXEvaluator::evaluateExpr(AffineExpr expr) const {
  if (!expr)
    return std::nullopt;
  if (auto c = dyn_cast<AffineConstantExpr>(expr))
    return c.getValue();
  if (auto s = dyn_cast<AffineSymbolExpr>(expr)) {
    auto it = symbols.find(s.getPosition());
    if (it == symbols.end())
      return std::nullopt;
    return it->second;
  }
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return std::nullopt;
  std::optional<int64_t> l = evaluateExpr(binary.getLHS());
  std::optional<int64_t> r = evaluateExpr(binary.getRHS());
  if (!l || !r)
    return std::nullopt;
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return *l + *r;
  case AffineExprKind::Mul:
    return *l * *r;
  case AffineExprKind::FloorDiv:
    if (*r == 0)
      return std::nullopt;
    return llvm::divideFloorSigned(*l, *r);
  case AffineExprKind::CeilDiv:
    if (*r == 0)
      return std::nullopt;
    return llvm::divideCeilSigned(*l, *r);
  case AffineExprKind::Mod:
    if (*r == 0)
      return std::nullopt;
    return llvm::mod(*l, *r);
  default:
    return std::nullopt;
  }
}

std::optional<SmallVector<int64_t, 4>>
ONNXEvaluator::getConcreteDims(Value value) const {
  const ONNXValueFacts *facts = inference.lookup(value);
  if (!facts || !facts->dims)
    return std::nullopt;
  SmallVector<int64_t, 4> dims;
  for (AffineExpr expr : *facts->dims) {
    std::optional<int64_t> d = evaluateExpr(expr);
    if (!d || *d < 0)
      return std::nullopt;
    dims.push_back(*d);
  }
  return dims;
}

LogicalResult ONNXEvaluator::fail(Operation *op, const Twine &message) {
  error = message.str();
  errorOp = op;
  return failure();
}

static std::string describeInput(Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg)
    return "a value without a producer";
  if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
    if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                      "folio.onnx_name"))
      return "input '" + name.getValue().str() + "'";
  return "input #" + std::to_string(arg.getArgNumber());
}

const ConcreteTensor *ONNXEvaluator::evaluate(Value root) {
  if (auto it = values.find(root); it != values.end())
    return &it->second;
  // Post-order walk with an explicit stack: the producers of a mask can be a
  // long chain, and recursion depth should not depend on the model.
  SmallVector<std::pair<Operation *, bool>> stack;
  unsigned evaluated = 0;
  auto needs = [&](Value v) -> LogicalResult {
    if (values.count(v))
      return success();
    Operation *def = v.getDefiningOp();
    if (!def)
      return fail(nullptr, "it depends on the values of " + describeInput(v));
    stack.push_back({def, false});
    return success();
  };
  if (failed(needs(root)))
    return nullptr;
  while (!stack.empty()) {
    auto [op, expanded] = stack.back();
    if (llvm::all_of(op->getResults(),
                     [&](Value r) { return values.count(r) != 0; })) {
      stack.pop_back();
      continue;
    }
    if (!expanded) {
      stack.back().second = true;
      // Shape reads its operand on its own (see evaluateOp).
      auto node = dyn_cast<ONNXNodeOp>(op);
      if (!node || node.getOpType() != "Shape")
        for (Value operand : op->getOperands())
          if (failed(needs(operand)))
            return nullptr;
      continue;
    }
    stack.pop_back();
    if (++evaluated > kMaxOps) {
      (void)fail(op, "the subgraph is too large to evaluate");
      return nullptr;
    }
    if (failed(evaluateOp(op)))
      return nullptr;
  }
  return &values[root];
}

namespace {
/// The inputs and attributes of the node being evaluated.
struct NodeView {
  ONNXNodeOp node;
  llvm::DenseMap<Value, ConcreteTensor> &values;

  /// Input `i` in ONNX numbering, or null when absent.
  const ConcreteTensor *in(unsigned i) {
    Value v = getONNXInput(node, i);
    if (!v)
      return nullptr;
    auto it = values.find(v);
    return it == values.end() ? nullptr : &it->second;
  }
  int64_t intAttr(StringRef name, int64_t dflt) {
    return getONNXIntAttr(node, name, dflt);
  }
  std::optional<SmallVector<int64_t>> intsAttr(StringRef name) {
    Attribute attr = node.getOnnxAttributes().get(name);
    if (auto dense = dyn_cast_or_null<DenseI64ArrayAttr>(attr))
      return SmallVector<int64_t>(dense.asArrayRef());
    if (auto array = dyn_cast_or_null<ArrayAttr>(attr)) {
      SmallVector<int64_t> result;
      for (Attribute a : array) {
        auto i = dyn_cast<IntegerAttr>(a);
        if (!i)
          return std::nullopt;
        result.push_back(i.getInt());
      }
      return result;
    }
    return std::nullopt;
  }
};

std::optional<int64_t> normAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

SmallVector<int64_t> asInts(const ConcreteTensor &t) {
  SmallVector<int64_t> result;
  for (double v : t.data)
    result.push_back(toIndex(v));
  return result;
}

/// Elementwise op over broadcast inputs.
template <typename Fn>
FailureOr<ConcreteTensor> elementwise(ArrayRef<const ConcreteTensor *> inputs,
                                      Kind kind, Fn fn) {
  FailureOr<SmallVector<int64_t, 4>> shape = broadcastShapes(inputs);
  if (failed(shape))
    return failure();
  ConcreteTensor out;
  out.kind = kind;
  out.shape = *shape;
  int64_t n = out.getNumElements();
  if (n > kMaxElements)
    return failure();
  SmallVector<std::vector<int64_t>> offsets;
  for (const ConcreteTensor *t : inputs)
    offsets.push_back(broadcastOffsets(*shape, t->shape));
  out.data.resize(n);
  SmallVector<double, 3> args(inputs.size());
  for (int64_t e = 0; e < n; ++e) {
    for (size_t i = 0; i < inputs.size(); ++i)
      args[i] = inputs[i]->data[offsets[i][e]];
    out.data[e] = convertTo(kind, fn(args));
  }
  return out;
}

/// Copies the elements selected by per-dim index lists.
ConcreteTensor gatherIndices(const ConcreteTensor &in,
                             ArrayRef<SmallVector<int64_t>> indexPerDim) {
  ConcreteTensor out;
  out.kind = in.kind;
  for (const SmallVector<int64_t> &idx : indexPerDim)
    out.shape.push_back(idx.size());
  int64_t n = out.getNumElements();
  out.data.resize(n);
  SmallVector<int64_t, 4> inStrides = stridesOf(in.shape);
  SmallVector<int64_t, 4> index(out.shape.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d)
      offset += indexPerDim[d][index[d]] * inStrides[d];
    out.data[e] = in.data[offset];
    for (int64_t d = int64_t(index.size()) - 1; d >= 0; --d) {
      if (++index[d] < out.shape[d])
        break;
      index[d] = 0;
    }
  }
  return out;
}
} // namespace

LogicalResult ONNXEvaluator::evaluateOp(Operation *op) {
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    auto attr = dyn_cast<ElementsAttr>(constant.getValue());
    FailureOr<ConcreteTensor> t =
        attr ? readConstant(attr) : FailureOr<ConcreteTensor>(failure());
    if (failed(t))
      return fail(op, "its constant cannot be read");
    values[constant.getResult()] = std::move(*t);
    return success();
  }
  auto node = dyn_cast<ONNXNodeOp>(op);
  if (!node)
    return fail(op,
                "'" + op->getName().getStringRef() + "' cannot be evaluated");
  StringRef type = node.getOpType();
  if (!node.getDomain().empty() && node.getDomain() != "ai.onnx")
    return fail(op, node.getDomain() + "." + type + " cannot be evaluated");
  NodeView view{node, values};
  auto unsupported = [&]() {
    return fail(op, type + " cannot be evaluated with these inputs");
  };
  // Shapes ONNX does not broadcast: the graph has no value here.
  auto misfit = [&](ArrayRef<const ConcreteTensor *> inputs) {
    std::string shapes;
    for (const ConcreteTensor *t : inputs)
      shapes += (shapes.empty() ? "" : ", ") + t->describeShape();
    undefined = true;
    return fail(op, type + " is undefined here: shapes " + shapes +
                        " do not broadcast");
  };
  auto set = [&](FailureOr<ConcreteTensor> t, unsigned result = 0) {
    if (failed(t))
      return unsupported();
    if (t->getNumElements() > kMaxElements ||
        int64_t(t->data.size()) != t->getNumElements())
      return unsupported();
    values[node.getResult(result)] = std::move(*t);
    return success();
  };
  if (node.getNumResults() == 0)
    return unsupported();
  Kind resultKind = kindOf(node.getResult(0).getType());
  const ConcreteTensor *a = view.in(0);
  const ConcreteTensor *b = view.in(1);

  // Elementwise ops.
  using Args = ArrayRef<double>;
  std::optional<std::function<double(Args)>> unary =
      llvm::StringSwitch<std::optional<std::function<double(Args)>>>(type)
          .Case("Neg", [](Args x) { return -x[0]; })
          .Case("Abs", [](Args x) { return std::fabs(x[0]); })
          .Case("Not", [](Args x) { return double(x[0] == 0); })
          .Case("Sqrt", [](Args x) { return std::sqrt(x[0]); })
          .Case("Exp", [](Args x) { return std::exp(x[0]); })
          .Case("Log", [](Args x) { return std::log(x[0]); })
          .Case("Cos", [](Args x) { return std::cos(x[0]); })
          .Case("Sin", [](Args x) { return std::sin(x[0]); })
          .Case("Tanh", [](Args x) { return std::tanh(x[0]); })
          .Case("Floor", [](Args x) { return std::floor(x[0]); })
          .Case("Ceil", [](Args x) { return std::ceil(x[0]); })
          .Case("Reciprocal", [](Args x) { return 1.0 / x[0]; })
          .Case("Identity", [](Args x) { return x[0]; })
          .Case("Cast", [](Args x) { return x[0]; })
          .Case("IsInf", [](Args x) { return double(std::isinf(x[0])); })
          .Case("IsNaN", [](Args x) { return double(std::isnan(x[0])); })
          .Default(std::nullopt);
  if (unary && a)
    return set(elementwise({a}, resultKind, *unary));

  bool intMath = resultKind != Kind::Float;
  std::optional<std::function<double(Args)>> binary =
      llvm::StringSwitch<std::optional<std::function<double(Args)>>>(type)
          .Case("Add", [](Args x) { return x[0] + x[1]; })
          .Case("Sub", [](Args x) { return x[0] - x[1]; })
          .Case("Mul", [](Args x) { return x[0] * x[1]; })
          .Case("Div",
                [intMath](Args x) {
                  if (intMath)
                    return x[1] == 0 ? 0.0 : std::trunc(x[0] / x[1]);
                  return x[0] / x[1];
                })
          .Case("Pow", [](Args x) { return std::pow(x[0], x[1]); })
          .Case("Mod",
                [](Args x) {
                  if (x[1] == 0)
                    return 0.0;
                  double r = std::fmod(x[0], x[1]);
                  return (r != 0 && ((r < 0) != (x[1] < 0))) ? r + x[1] : r;
                })
          .Case("Equal", [](Args x) { return double(x[0] == x[1]); })
          .Case("Less", [](Args x) { return double(x[0] < x[1]); })
          .Case("LessOrEqual", [](Args x) { return double(x[0] <= x[1]); })
          .Case("Greater", [](Args x) { return double(x[0] > x[1]); })
          .Case("GreaterOrEqual", [](Args x) { return double(x[0] >= x[1]); })
          .Case("And", [](Args x) { return double(x[0] != 0 && x[1] != 0); })
          .Case("Or", [](Args x) { return double(x[0] != 0 || x[1] != 0); })
          .Case("Xor",
                [](Args x) { return double((x[0] != 0) != (x[1] != 0)); })
          .Default(std::nullopt);
  if (binary && a && b) {
    if (failed(broadcastShapes({a, b})))
      return misfit({a, b});
    return set(elementwise({a, b}, resultKind, *binary));
  }

  if (type == "Where") {
    const ConcreteTensor *c = view.in(2);
    if (!a || !b || !c)
      return unsupported();
    if (failed(broadcastShapes({a, b, c})))
      return misfit({a, b, c});
    return set(elementwise({a, b, c}, resultKind,
                           [](Args x) { return x[0] != 0 ? x[1] : x[2]; }));
  }
  if (type == "Min" || type == "Max") {
    SmallVector<const ConcreteTensor *> inputs;
    for (unsigned i = 0; i < node.getNumONNXInputs(); ++i)
      if (const ConcreteTensor *t = view.in(i))
        inputs.push_back(t);
    if (inputs.empty())
      return unsupported();
    bool isMin = type == "Min";
    return set(elementwise(inputs, resultKind, [isMin](Args x) {
      double r = x[0];
      for (double v : x.drop_front())
        r = isMin ? std::min(r, v) : std::max(r, v);
      return r;
    }));
  }

  if (type == "Constant") {
    auto attr = node.getOnnxAttributes().getAs<ElementsAttr>("value");
    return set(attr ? readConstant(attr) : FailureOr<ConcreteTensor>());
  }
  if (type == "Shape") {
    // The operand's real shape when it can be computed (shape facts can be
    // coarser than the values), else its dims from the facts: Shape(past)
    // or Shape(hidden_states) need no data.
    Value input = node.getInputs().empty() ? Value() : node.getInputs()[0];
    if (!input)
      return unsupported();
    std::optional<SmallVector<int64_t, 4>> dims;
    std::string savedError = error;
    Operation *savedOp = errorOp;
    if (const ConcreteTensor *operand = evaluate(input))
      dims = operand->shape;
    error = savedError;
    errorOp = savedOp;
    if (!dims)
      dims = getConcreteDims(input);
    if (!dims)
      return fail(op, "the shape of its input is not known");
    int64_t rank = dims->size();
    int64_t start = view.intAttr("start", 0), end = view.intAttr("end", rank);
    if (start < 0)
      start += rank;
    if (end < 0)
      end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, start, rank);
    ConcreteTensor t;
    t.kind = Kind::Int;
    t.shape = {end - start};
    for (int64_t i = start; i < end; ++i)
      t.data.push_back((*dims)[i]);
    return set(t);
  }
  if (type == "Size" && a) {
    ConcreteTensor t = ConcreteTensor::filled(Kind::Int, {}, 0);
    t.data[0] = a->getNumElements();
    return set(t);
  }
  if (type == "ConstantOfShape" && a) {
    double fill = 0;
    Kind kind = resultKind;
    if (auto attr = node.getOnnxAttributes().getAs<ElementsAttr>("value")) {
      FailureOr<ConcreteTensor> v = readConstant(attr);
      if (failed(v) || v->data.size() != 1)
        return unsupported();
      fill = v->data[0];
    }
    SmallVector<int64_t> shape = asInts(*a);
    if (countElements(shape) > kMaxElements)
      return unsupported();
    return set(ConcreteTensor::filled(kind, shape, fill));
  }
  if (type == "Range") {
    const ConcreteTensor *c = view.in(2);
    if (!a || !b || !c || a->data.size() != 1 || b->data.size() != 1 ||
        c->data.size() != 1 || c->data[0] == 0)
      return unsupported();
    double start = a->data[0], limit = b->data[0], delta = c->data[0];
    double count = std::max(0.0, std::ceil((limit - start) / delta));
    if (count > kMaxElements)
      return unsupported();
    ConcreteTensor t;
    t.kind = resultKind;
    t.shape = {int64_t(count)};
    for (int64_t i = 0; i < int64_t(count); ++i)
      t.data.push_back(start + i * delta);
    return set(t);
  }
  if ((type == "Unsqueeze" || type == "Squeeze") && a) {
    std::optional<SmallVector<int64_t>> axes =
        b ? std::optional<SmallVector<int64_t>>(asInts(*b))
          : view.intsAttr("axes");
    ConcreteTensor t = *a;
    if (type == "Unsqueeze") {
      if (!axes)
        return unsupported();
      int64_t rank = a->getRank() + axes->size();
      SmallVector<int64_t> normalized;
      for (int64_t axis : *axes) {
        std::optional<int64_t> n = normAxis(axis, rank);
        if (!n)
          return unsupported();
        normalized.push_back(*n);
      }
      llvm::sort(normalized);
      for (int64_t axis : normalized) {
        if (axis > t.getRank())
          return unsupported();
        t.shape.insert(t.shape.begin() + axis, 1);
      }
      return set(t);
    }
    SmallVector<int64_t, 4> shape;
    for (auto [i, d] : llvm::enumerate(a->shape)) {
      bool drop = false;
      if (!axes)
        drop = d == 1;
      else
        for (int64_t axis : *axes)
          if (normAxis(axis, a->getRank()) == int64_t(i))
            drop = true;
      if (drop && d != 1)
        return unsupported();
      if (!drop)
        shape.push_back(d);
    }
    t.shape = shape;
    return set(t);
  }
  if ((type == "Reshape" || type == "Flatten") && a) {
    SmallVector<int64_t> target;
    if (type == "Flatten") {
      std::optional<int64_t> axis =
          normAxis(view.intAttr("axis", 1), a->getRank() + 1);
      if (!axis)
        return unsupported();
      int64_t outer = 1;
      for (int64_t i = 0; i < *axis; ++i)
        outer *= a->shape[i];
      target = {outer, -1};
    } else {
      if (!b)
        return unsupported();
      target = asInts(*b);
    }
    bool allowZero = view.intAttr("allowzero", 0) != 0;
    int64_t known = 1, inferred = -1;
    for (auto [i, d] : llvm::enumerate(target)) {
      if (d == 0 && !allowZero) {
        if (int64_t(i) >= a->getRank())
          return unsupported();
        d = a->shape[i];
      }
      if (d == -1) {
        if (inferred >= 0)
          return unsupported();
        inferred = i;
        continue;
      }
      if (d < 0 || llvm::MulOverflow(known, d, known))
        return unsupported();
    }
    int64_t n = a->getNumElements();
    if (inferred >= 0) {
      if (known == 0 || n % known != 0)
        return unsupported();
      target[inferred] = n / known;
    } else if (known != n) {
      return unsupported();
    }
    ConcreteTensor t = *a;
    t.shape.assign(target.begin(), target.end());
    return set(t);
  }
  if (type == "Concat") {
    SmallVector<const ConcreteTensor *> inputs;
    for (unsigned i = 0; i < node.getNumONNXInputs(); ++i)
      if (const ConcreteTensor *t = view.in(i))
        inputs.push_back(t);
    if (inputs.empty())
      return unsupported();
    int64_t rank = inputs[0]->getRank();
    std::optional<int64_t> axis = normAxis(view.intAttr("axis", 0), rank);
    if (!axis)
      return unsupported();
    ConcreteTensor t;
    t.kind = resultKind;
    t.shape = inputs[0]->shape;
    t.shape[*axis] = 0;
    for (const ConcreteTensor *in : inputs) {
      if (in->getRank() != rank)
        return unsupported();
      for (int64_t d = 0; d < rank; ++d)
        if (d != *axis && in->shape[d] != t.shape[d])
          return unsupported();
      t.shape[*axis] += in->shape[*axis];
    }
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < *axis; ++d)
      outer *= t.shape[d];
    for (int64_t d = *axis + 1; d < rank; ++d)
      inner *= t.shape[d];
    for (int64_t o = 0; o < outer; ++o)
      for (const ConcreteTensor *in : inputs) {
        int64_t chunk = in->shape[*axis] * inner;
        t.data.insert(t.data.end(), in->data.begin() + o * chunk,
                      in->data.begin() + (o + 1) * chunk);
      }
    return set(t);
  }
  if (type == "Split" && a) {
    int64_t rank = a->getRank();
    std::optional<int64_t> axis = normAxis(view.intAttr("axis", 0), rank);
    if (!axis)
      return unsupported();
    SmallVector<int64_t> sizes;
    if (b)
      sizes = asInts(*b);
    else if (std::optional<SmallVector<int64_t>> attr = view.intsAttr("split"))
      sizes = *attr;
    else {
      int64_t parts = node.getNumResults();
      int64_t dim = a->shape[*axis];
      int64_t each = (dim + parts - 1) / parts;
      for (int64_t i = 0; i < parts; ++i)
        sizes.push_back(std::max<int64_t>(0, std::min(each, dim - i * each)));
    }
    if (sizes.size() != node.getNumResults())
      return unsupported();
    int64_t offset = 0;
    for (auto [r, size] : llvm::enumerate(sizes)) {
      SmallVector<SmallVector<int64_t>> index;
      for (int64_t d = 0; d < rank; ++d) {
        SmallVector<int64_t> idx;
        if (d == *axis) {
          for (int64_t i = 0; i < size; ++i)
            idx.push_back(offset + i);
        } else {
          for (int64_t i = 0; i < a->shape[d]; ++i)
            idx.push_back(i);
        }
        index.push_back(idx);
      }
      offset += size;
      if (offset > a->shape[*axis])
        return unsupported();
      if (failed(set(gatherIndices(*a, index), r)))
        return failure();
    }
    return success();
  }
  if (type == "Slice" && a && b) {
    const ConcreteTensor *ends = view.in(2), *axesT = view.in(3),
                         *stepsT = view.in(4);
    if (!ends || b->data.size() != ends->data.size())
      return unsupported();
    int64_t rank = a->getRank();
    SmallVector<SmallVector<int64_t>> index;
    for (int64_t d = 0; d < rank; ++d) {
      SmallVector<int64_t> idx;
      for (int64_t i = 0; i < a->shape[d]; ++i)
        idx.push_back(i);
      index.push_back(idx);
    }
    for (size_t i = 0; i < b->data.size(); ++i) {
      int64_t axisRaw = axesT ? toIndex(axesT->data[i]) : int64_t(i);
      std::optional<int64_t> axis = normAxis(axisRaw, rank);
      int64_t step = stepsT ? toIndex(stepsT->data[i]) : 1;
      if (!axis || step == 0)
        return unsupported();
      int64_t dim = a->shape[*axis];
      int64_t start = toIndex(b->data[i]), end = toIndex(ends->data[i]);
      if (start < 0)
        start = start <= -dim ? 0 : start + dim;
      if (end < 0)
        end = end <= -dim ? -1 : end + dim;
      SmallVector<int64_t> idx;
      if (step > 0) {
        start = std::clamp<int64_t>(start, 0, dim);
        end = std::clamp<int64_t>(end, 0, dim);
        for (int64_t j = start; j < end; j += step)
          idx.push_back(j);
      } else {
        start = std::clamp<int64_t>(start, -1, dim - 1);
        end = std::clamp<int64_t>(end, -1, dim - 1);
        for (int64_t j = start; j > end; j += step)
          idx.push_back(j);
      }
      index[*axis] = idx;
    }
    return set(gatherIndices(*a, index));
  }
  if (type == "Gather" && a && b) {
    int64_t rank = a->getRank();
    std::optional<int64_t> axis = normAxis(view.intAttr("axis", 0), rank);
    if (!axis)
      return unsupported();
    int64_t dim = a->shape[*axis];
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < *axis; ++d)
      outer *= a->shape[d];
    for (int64_t d = *axis + 1; d < rank; ++d)
      inner *= a->shape[d];
    ConcreteTensor t;
    t.kind = a->kind;
    t.shape.append(a->shape.begin(), a->shape.begin() + *axis);
    t.shape.append(b->shape.begin(), b->shape.end());
    t.shape.append(a->shape.begin() + *axis + 1, a->shape.end());
    if (t.getNumElements() > kMaxElements)
      return unsupported();
    for (int64_t o = 0; o < outer; ++o)
      for (double raw : b->data) {
        int64_t i = toIndex(raw);
        if (i < 0)
          i += dim;
        if (i < 0 || i >= dim)
          return fail(op, "Gather index " + std::to_string(toIndex(raw)) +
                              " is out of range [0, " + std::to_string(dim) +
                              ")");
        auto begin = a->data.begin() + (o * dim + i) * inner;
        t.data.insert(t.data.end(), begin, begin + inner);
      }
    return set(t);
  }
  if (type == "GatherElements" && a && b) {
    int64_t rank = a->getRank();
    std::optional<int64_t> axis = normAxis(view.intAttr("axis", 0), rank);
    if (!axis || b->getRank() != rank)
      return unsupported();
    for (int64_t d = 0; d < rank; ++d)
      if (d != *axis && b->shape[d] > a->shape[d])
        return unsupported();
    ConcreteTensor t;
    t.kind = a->kind;
    t.shape = b->shape;
    SmallVector<int64_t, 4> strides = stridesOf(a->shape),
                            outStrides = stridesOf(b->shape);
    int64_t dim = a->shape[*axis];
    t.data.resize(b->data.size());
    for (int64_t flat = 0; flat < int64_t(b->data.size()); ++flat) {
      int64_t i = toIndex(b->data[flat]);
      if (i < 0)
        i += dim;
      if (i < 0 || i >= dim)
        return fail(op, "GatherElements index " +
                            std::to_string(toIndex(b->data[flat])) +
                            " is out of range [0, " + std::to_string(dim) +
                            ")");
      int64_t source = 0, rest = flat;
      for (int64_t d = 0; d < rank; ++d) {
        int64_t coordinate = rest / outStrides[d];
        rest %= outStrides[d];
        source += (d == *axis ? i : coordinate) * strides[d];
      }
      t.data[flat] = a->data[source];
    }
    return set(t);
  }
  if (type == "GatherND" && a && b) {
    // The slices of data that indices [..., depth] name after batch_dims
    // leading dims shared with data (advanced indexing, as torch.export
    // writes mask[batch_idx, kv_idx]).
    int64_t batch = view.intAttr("batch_dims", 0);
    int64_t rank = a->getRank(), irank = b->getRank();
    int64_t depth = irank ? b->shape.back() : 0;
    if (irank < 1 || batch < 0 || batch >= std::min(rank, irank) || depth < 1 ||
        depth > rank - batch)
      return unsupported();
    for (int64_t d = 0; d < batch; ++d)
      if (a->shape[d] != b->shape[d])
        return unsupported();
    int64_t batches = 1, slice = 1;
    for (int64_t d = 0; d < batch; ++d)
      batches *= a->shape[d];
    for (int64_t d = batch + depth; d < rank; ++d)
      slice *= a->shape[d];
    int64_t perBatchData = slice;
    for (int64_t d = batch; d < batch + depth; ++d)
      perBatchData *= a->shape[d];
    ConcreteTensor t;
    t.kind = a->kind;
    t.shape.append(b->shape.begin(), b->shape.end() - 1);
    t.shape.append(a->shape.begin() + batch + depth, a->shape.end());
    if (t.getNumElements() > kMaxElements)
      return unsupported();
    int64_t tuples = b->getNumElements() / depth;
    if (tuples == 0)
      return set(t);
    int64_t perBatchTuples = tuples / batches; // batches > 0: tuples > 0
    std::string error;
    for (int64_t n = 0; n < tuples; ++n) {
      FailureOr<int64_t> offset =
          tupleOffset(a->shape, batch, &b->data[n * depth], depth, error);
      if (failed(offset))
        return fail(op, "GatherND " + error);
      auto begin = a->data.begin() + (n / perBatchTuples) * perBatchData +
                   *offset * slice;
      t.data.insert(t.data.end(), begin, begin + slice);
    }
    return set(t);
  }
  if (type == "ScatterND" && a && b && view.in(2)) {
    // data with the slices indices[...] names replaced by updates: the
    // in-place slice assignment of older masking code
    // (mask[:, :, :, :n] = ...).
    const ConcreteTensor *updates = view.in(2);
    std::string reduction = "none";
    if (auto attr = node.getOnnxAttributes().getAs<StringAttr>("reduction"))
      reduction = attr.getValue().str();
    int64_t rank = a->getRank(), irank = b->getRank();
    int64_t depth = irank ? b->shape.back() : 0;
    if (reduction != "none" || irank < 1 || depth < 1 || depth > rank)
      return unsupported();
    int64_t slice = 1;
    for (int64_t d = depth; d < rank; ++d)
      slice *= a->shape[d];
    int64_t count = b->getNumElements() / depth;
    if (updates->getNumElements() != count * slice)
      return fail(op, "ScatterND updates have " +
                          std::to_string(updates->getNumElements()) +
                          " elements, not indices x slice = " +
                          std::to_string(count * slice));
    ConcreteTensor t = *a;
    std::string error;
    for (int64_t n = 0; n < count; ++n) {
      FailureOr<int64_t> offset =
          tupleOffset(a->shape, 0, &b->data[n * depth], depth, error);
      if (failed(offset))
        return fail(op, "ScatterND " + error);
      std::copy(updates->data.begin() + n * slice,
                updates->data.begin() + (n + 1) * slice,
                t.data.begin() + *offset * slice);
    }
    return set(t);
  }
  if (type == "Expand" && a && b) {
    // Only shapes, not the elements, of `target` take part: it is never
    // filled (the shape may be 2^62 elements).
    ConcreteTensor target;
    target.kind = Kind::Int;
    target.shape = asInts(*b);
    if (llvm::any_of(target.shape, [](int64_t d) { return d < 0; }))
      return unsupported();
    target.data.resize(1);
    ConcreteTensor shapeOnly = target;
    FailureOr<SmallVector<int64_t, 4>> shape = broadcastShapes({a, &shapeOnly});
    if (failed(shape))
      return misfit({a, &shapeOnly});
    ConcreteTensor t;
    t.kind = a->kind;
    t.shape = *shape;
    if (t.getNumElements() > kMaxElements)
      return unsupported();
    for (int64_t offset : broadcastOffsets(*shape, a->shape))
      t.data.push_back(a->data[offset]);
    return set(t);
  }
  if (type == "Tile" && a && b) {
    SmallVector<int64_t> repeats = asInts(*b);
    if (int64_t(repeats.size()) != a->getRank())
      return unsupported();
    SmallVector<SmallVector<int64_t>> index;
    for (auto [d, r] : llvm::enumerate(repeats)) {
      if (r < 0 || countElements({r, a->shape[d]}) > kMaxElements)
        return unsupported();
      SmallVector<int64_t> idx;
      for (int64_t k = 0; k < r; ++k)
        for (int64_t i = 0; i < a->shape[d]; ++i)
          idx.push_back(i);
      index.push_back(idx);
    }
    int64_t n = 1;
    for (auto &idx : index)
      n *= idx.size();
    if (n > kMaxElements)
      return unsupported();
    return set(gatherIndices(*a, index));
  }
  if (type == "Transpose" && a) {
    int64_t rank = a->getRank();
    SmallVector<int64_t> perm;
    if (std::optional<SmallVector<int64_t>> attr = view.intsAttr("perm"))
      perm = *attr;
    else
      for (int64_t i = rank - 1; i >= 0; --i)
        perm.push_back(i);
    if (int64_t(perm.size()) != rank)
      return unsupported();
    ConcreteTensor t;
    t.kind = a->kind;
    for (int64_t p : perm) {
      if (p < 0 || p >= rank)
        return unsupported();
      t.shape.push_back(a->shape[p]);
    }
    SmallVector<int64_t, 4> inStrides = stridesOf(a->shape);
    int64_t n = a->getNumElements();
    t.data.resize(n);
    SmallVector<int64_t, 4> index(rank, 0);
    for (int64_t e = 0; e < n; ++e) {
      int64_t offset = 0;
      for (int64_t d = 0; d < rank; ++d)
        offset += index[d] * inStrides[perm[d]];
      t.data[e] = a->data[offset];
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++index[d] < t.shape[d])
          break;
        index[d] = 0;
      }
    }
    return set(t);
  }
  if (type == "Trilu" && a) {
    if (a->getRank() < 2)
      return unsupported();
    int64_t k = b && !b->data.empty() ? toIndex(b->data[0]) : 0;
    bool upper = view.intAttr("upper", 1) != 0;
    ConcreteTensor t = *a;
    int64_t rows = a->shape[a->getRank() - 2], cols = a->shape.back();
    for (int64_t e = 0; e < t.getNumElements(); ++e) {
      int64_t j = e % cols, i = (e / cols) % rows;
      bool keep = upper ? j - i >= k : j - i <= k;
      if (!keep)
        t.data[e] = 0;
    }
    return set(t);
  }
  if (type == "CumSum" && a && b && b->data.size() == 1) {
    std::optional<int64_t> axis = normAxis(toIndex(b->data[0]), a->getRank());
    if (!axis)
      return unsupported();
    bool exclusive = view.intAttr("exclusive", 0) != 0;
    bool reverse = view.intAttr("reverse", 0) != 0;
    int64_t dim = a->shape[*axis], outer = 1, inner = 1;
    for (int64_t d = 0; d < *axis; ++d)
      outer *= a->shape[d];
    for (int64_t d = *axis + 1; d < a->getRank(); ++d)
      inner *= a->shape[d];
    ConcreteTensor t = *a;
    t.kind = resultKind;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        double sum = 0;
        for (int64_t s = 0; s < dim; ++s) {
          int64_t i = reverse ? dim - 1 - s : s;
          int64_t offset = (o * dim + i) * inner + in;
          double v = a->data[offset];
          t.data[offset] = exclusive ? sum : sum + v;
          sum += v;
        }
      }
    return set(t);
  }
  if (type == "MatMul" && a && b && a->getRank() >= 1 && b->getRank() >= 1) {
    ConcreteTensor lhs = *a, rhs = *b;
    bool vecL = lhs.getRank() == 1, vecR = rhs.getRank() == 1;
    if (vecL)
      lhs.shape.insert(lhs.shape.begin(), 1);
    if (vecR)
      rhs.shape.push_back(1);
    int64_t m = lhs.shape[lhs.getRank() - 2], k = lhs.shape.back();
    int64_t n = rhs.shape.back();
    if (rhs.shape[rhs.getRank() - 2] != k)
      return unsupported();
    ConcreteTensor lb, rb;
    lb.shape.assign(lhs.shape.begin(), lhs.shape.end() - 2);
    rb.shape.assign(rhs.shape.begin(), rhs.shape.end() - 2);
    FailureOr<SmallVector<int64_t, 4>> batch = broadcastShapes({&lb, &rb});
    if (failed(batch))
      return unsupported();
    std::vector<int64_t> lo = broadcastOffsets(*batch, lb.shape);
    std::vector<int64_t> ro = broadcastOffsets(*batch, rb.shape);
    ConcreteTensor t;
    t.kind = resultKind;
    t.shape = *batch;
    t.shape.push_back(m);
    t.shape.push_back(n);
    if (t.getNumElements() > kMaxElements)
      return unsupported();
    t.data.assign(t.getNumElements(), 0);
    for (size_t bi = 0; bi < lo.size(); ++bi)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double sum = 0;
          for (int64_t p = 0; p < k; ++p)
            sum += lhs.data[lo[bi] * m * k + i * k + p] *
                   rhs.data[ro[bi] * k * n + p * n + j];
          t.data[(bi * m + i) * n + j] = sum;
        }
    if (vecL)
      t.shape.erase(t.shape.end() - 2);
    if (vecR)
      t.shape.pop_back();
    return set(t);
  }
  if ((type == "ReduceSum" || type == "ReduceMax" || type == "ReduceMin") &&
      a) {
    std::optional<SmallVector<int64_t>> axes =
        b ? std::optional<SmallVector<int64_t>>(asInts(*b))
          : view.intsAttr("axes");
    bool keep = view.intAttr("keepdims", 1) != 0;
    int64_t rank = a->getRank();
    SmallVector<bool> reduced(rank, !axes || axes->empty());
    if (axes && axes->empty() && view.intAttr("noop_with_empty_axes", 0))
      return set(*a);
    if (axes)
      for (int64_t axis : *axes) {
        std::optional<int64_t> n = normAxis(axis, rank);
        if (!n)
          return unsupported();
        reduced[*n] = true;
      }
    SmallVector<int64_t, 4> keptShape;
    for (int64_t d = 0; d < rank; ++d)
      keptShape.push_back(reduced[d] ? 1 : a->shape[d]);
    ConcreteTensor t;
    t.kind = resultKind;
    t.shape = keptShape;
    bool isSum = type == "ReduceSum", isMax = type == "ReduceMax";
    double init = isSum   ? 0
                  : isMax ? -std::numeric_limits<double>::infinity()
                          : std::numeric_limits<double>::infinity();
    t.data.assign(t.getNumElements(), init);
    SmallVector<int64_t, 4> outStrides = stridesOf(keptShape);
    SmallVector<int64_t, 4> index(rank, 0);
    for (int64_t e = 0; e < a->getNumElements(); ++e) {
      int64_t offset = 0;
      for (int64_t d = 0; d < rank; ++d)
        offset += (reduced[d] ? 0 : index[d]) * outStrides[d];
      double v = a->data[e];
      double &acc = t.data[offset];
      acc = isSum ? acc + v : isMax ? std::max(acc, v) : std::min(acc, v);
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++index[d] < a->shape[d])
          break;
        index[d] = 0;
      }
    }
    if (!keep) {
      SmallVector<int64_t, 4> shape;
      for (int64_t d = 0; d < rank; ++d)
        if (!reduced[d])
          shape.push_back(a->shape[d]);
      t.shape = shape;
    }
    return set(t);
  }
  return unsupported();
}
