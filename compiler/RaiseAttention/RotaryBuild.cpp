//===- RotaryBuild.cpp - Reading angles and building folio.rotary ---------===//

#include "compiler/RaiseAttention/RotaryBuild.h"

#include "compiler/RaiseAttention/Evaluator.h"

#include "compiler/ONNXOps/Match.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <sstream>

using namespace mlir;
using namespace mlir::folio;

static bool isIndexTensor(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.getRank() == 2 &&
         type.getElementType().isSignlessInteger() &&
         !type.getElementType().isInteger(1);
}

/// The [B, S] integer tensors the angles are computed from, the rows of any
/// constant table gathered by them (0 if none), and the graph inputs
/// reached otherwise.
static void findAngleSources(ArrayRef<Value> roots,
                             llvm::SetVector<Value> &positions,
                             int64_t &tableRows,
                             llvm::SetVector<Value> &otherInputs) {
  llvm::SmallPtrSet<Operation *, 32> seen;
  SmallVector<Value> stack(roots.begin(), roots.end());
  while (!stack.empty()) {
    Value v = stack.pop_back_val();
    if (isIndexTensor(v)) {
      positions.insert(v);
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (!def) {
      otherInputs.insert(v);
      continue;
    }
    if (!seen.insert(def).second || isa<arith::ConstantOp>(def))
      continue;
    auto node = dyn_cast<ONNXNodeOp>(def);
    if (node && (node.getOpType() == "Shape" || node.getOpType() == "Size"))
      continue;
    if (node && node.getOpType() == "Gather" && node.getInputs().size() == 2)
      if (auto table = node.getInputs()[0].getDefiningOp<arith::ConstantOp>()) {
        auto type = cast<ShapedType>(table.getType());
        int64_t axis = getONNXIntAttr(node, "axis", 0);
        if (type.getRank() >= 1 && (axis == 0 || axis == -type.getRank())) {
          int64_t rows = type.getDimSize(0);
          tableRows = tableRows == 0 ? rows : std::min(tableRows, rows);
        }
      }
    // GPT-J: GatherElements(Tile(table), Tile(positions), axis 1) picks
    // the rows of a fixed-size table repeated over the batch.
    if (node && node.getOpType() == "GatherElements" &&
        node.getInputs().size() == 2) {
      auto type = dyn_cast<RankedTensorType>(node.getInputs()[0].getType());
      if (type) {
        int64_t rank = type.getRank();
        int64_t axis = getONNXIntAttr(node, "axis", 0);
        if (axis < 0)
          axis += rank;
        if (axis >= 0 && axis < rank && !type.isDynamicDim(axis)) {
          int64_t rows = type.getDimSize(axis);
          tableRows = tableRows == 0 ? rows : std::min(tableRows, rows);
        }
      }
    }
    for (Value operand : def->getOperands())
      stack.push_back(operand);
  }
}

namespace {
/// Evaluated cos or sin viewed as [seq, channel].
struct AngleView {
  ConcreteTensor tensor;
  SmallVector<int64_t, 4> index;
  int64_t seqAxis = -1;
  double at(int64_t p, int64_t channel) {
    index.assign(tensor.getRank(), 0);
    index[seqAxis] = p;
    index.back() = channel;
    return tensor.at(index);
  }
};
} // namespace

/// Evaluates `value` with `positions` bound to [[p0, p1, ...]].
static FailureOr<AngleView>
evaluateAngles(func::FuncOp func, ONNXShapeInference &inference, Value value,
               Value positions, ArrayRef<int64_t> list, int64_t channels,
               std::string &error) {
  GraphInputs inputs = GraphInputs::find(func, inference);
  ONNXEvaluator evaluator(inference);
  int64_t n = list.size();
  inputs.bindDims(evaluator, 1, n, 0);
  ConcreteTensor pos =
      ConcreteTensor::filled(ConcreteTensor::Kind::Int, {1, n}, 0);
  for (int64_t i = 0; i < n; ++i)
    pos.data[i] = list[i];
  evaluator.bind(positions, pos);
  const ConcreteTensor *result = evaluator.evaluate(value);
  if (!result) {
    error = "its cos/sin cannot be evaluated: " +
            (evaluator.getErrorOp()
                 ? "at node " + describeNode(evaluator.getErrorOp()) + ", "
                 : std::string()) +
            evaluator.getError();
    return failure();
  }
  AngleView view;
  view.tensor = *result;
  if (view.tensor.getRank() < 2 || view.tensor.shape.back() != channels) {
    error = "its cos/sin do not have " + std::to_string(channels) +
            " channels in the last dim";
    return failure();
  }
  for (int64_t axis = 0; axis + 1 < view.tensor.getRank(); ++axis) {
    int64_t d = view.tensor.shape[axis];
    if (d == n && view.seqAxis < 0 && n > 1)
      view.seqAxis = axis;
    else if (d != 1) {
      error = "its cos/sin vary along dim " + std::to_string(axis) +
              ", which is neither the sequence nor the channels";
      return failure();
    }
  }
  if (view.seqAxis < 0) {
    error = "its cos/sin do not vary with the position";
    return failure();
  }
  return view;
}

FailureOr<RotarySource> mlir::folio::readComputedAngles(
    func::FuncOp func, ONNXShapeInference &inference, Value cos, Value sin,
    int64_t rotaryDim, RopeStyle style, bool duplicatedPairs,
    int64_t computedRows, std::string &error) {
  llvm::SetVector<Value> positions, others;
  int64_t tableRows = 0;
  findAngleSources({cos, sin}, positions, tableRows, others);
  if (!others.empty()) {
    error = "its cos/sin depend on the values of a graph input other than "
            "the positions";
    if (auto arg = dyn_cast<BlockArgument>(others.front()))
      if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        "folio.onnx_name"))
        error += " ('" + name.getValue().str() + "')";
    return failure();
  }
  if (positions.size() != 1) {
    error = positions.empty()
                ? "its cos/sin are not computed from a [batch, seq] integer "
                  "position tensor"
                : "its cos/sin depend on " + std::to_string(positions.size()) +
                      " different [batch, seq] integer tensors";
    return failure();
  }
  int64_t pairs = rotaryDim / 2;
  int64_t channels = duplicatedPairs ? rotaryDim : pairs;
  auto channelOf = [&](int64_t pair) {
    if (!duplicatedPairs)
      return pair;
    return style == RopeStyle::half_split ? pair : 2 * pair;
  };
  auto partnerOf = [&](int64_t pair) {
    return style == RopeStyle::half_split ? pair + pairs : 2 * pair + 1;
  };

  SmallVector<int64_t> list;
  if (tableRows > 0) {
    for (int64_t p = 0; p < tableRows; ++p)
      list.push_back(p);
  } else {
    for (int64_t p = 0; p < 64; ++p)
      list.push_back(p);
    list.append({100, 1000, 4095});
  }
  RotarySource source;
  source.positions = positions.front();
  source.gathered = tableRows > 0;
  auto read = [&](ArrayRef<int64_t> at, RotaryAngles &out) -> LogicalResult {
    FailureOr<AngleView> c = evaluateAngles(
        func, inference, cos, positions.front(), at, channels, error);
    if (failed(c))
      return failure();
    source.seqAxis = 4 - (c->tensor.getRank() - c->seqAxis);
    FailureOr<AngleView> s = evaluateAngles(
        func, inference, sin, positions.front(), at, channels, error);
    if (failed(s))
      return failure();
    if (duplicatedPairs)
      for (int64_t p = 0; p < int64_t(at.size()); ++p)
        for (int64_t i = 0; i < pairs; ++i)
          for (AngleView *v : {&*c, &*s})
            if (std::fabs(v->at(p, channelOf(i)) - v->at(p, partnerOf(i))) >
                1e-5) {
              std::ostringstream os;
              os << "its " << (v == &*c ? "cos" : "sin")
                 << " differs on channels " << channelOf(i) << " and "
                 << partnerOf(i) << " at position " << at[p] << ", which "
                 << stringifyRopeStyle(style).str()
                 << " rotary rotates together";
              error = os.str();
              return failure();
            }
    FailureOr<RotaryAngles> angles = analyzeRotaryAngles(
        at, pairs, [&](int64_t p, int64_t i) { return c->at(p, channelOf(i)); },
        [&](int64_t p, int64_t i) { return s->at(p, channelOf(i)); }, error);
    if (failed(angles)) {
      error = "its cos/sin: " + error;
      return failure();
    }
    out = std::move(*angles);
    return success();
  };

  if (failed(read(list, source.angles)))
    return failure();
  if (tableRows > 0 || source.angles.geometric)
    return source;
  // Computed angles that are not base^(-2i/d): tabulate them.
  list.clear();
  for (int64_t p = 0; p < std::max<int64_t>(computedRows, 2); ++p)
    list.push_back(p);
  if (failed(read(list, source.angles)))
    return failure();
  source.angles.geometric = false;
  return source;
}

FailureOr<RotaryAngles>
mlir::folio::readCacheTables(ONNXShapeInference &inference, Value cosCache,
                             Value sinCache, std::string &error) {
  ONNXEvaluator evaluator(inference);
  const ConcreteTensor *c = evaluator.evaluate(cosCache);
  const ConcreteTensor *s = c ? evaluator.evaluate(sinCache) : nullptr;
  if (!c || !s) {
    error =
        "its cos/sin caches are not constants (" + evaluator.getError() + ")";
    return failure();
  }
  if (c->getRank() != 2 || c->shape != s->shape || c->shape[0] < 2) {
    error = "its cos/sin caches must be [max_position, rotary_dim / 2] "
            "tables of at least 2 rows";
    return failure();
  }
  int64_t rows = c->shape[0], pairs = c->shape[1];
  SmallVector<int64_t> list;
  for (int64_t p = 0; p < rows; ++p)
    list.push_back(p);
  FailureOr<RotaryAngles> angles = analyzeRotaryAngles(
      list, pairs, [&](int64_t p, int64_t i) { return c->data[p * pairs + i]; },
      [&](int64_t p, int64_t i) { return s->data[p * pairs + i]; }, error);
  if (failed(angles))
    error = "its cos/sin caches: " + error;
  return angles;
}

Value mlir::folio::buildRotary(ONNXNodeBuilder &nb, Location loc, Value input,
                               Value positions, const RotaryAngles &angles,
                               int64_t rotaryDim, RopeStyle style,
                               bool forceTable, Value &table) {
  OpBuilder &b = nb.getBuilder();
  auto type = cast<RankedTensorType>(input.getType());
  Value cache;
  double base = 10000.0, factor = 1.0;
  if ((forceTable || !angles.geometric) && table) {
    cache = table;
  } else if (forceTable || !angles.geometric) {
    SmallVector<APFloat> values;
    auto element = cast<FloatType>(type.getElementType());
    for (double v : angles.table) {
      APFloat f(v);
      bool losesInfo = false;
      f.convert(element.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                &losesInfo);
      values.push_back(f);
    }
    auto cacheType = RankedTensorType::get({angles.rows, rotaryDim}, element);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&b.getInsertionBlock()->getParent()->front());
    cache = nb.constant(loc, DenseElementsAttr::get(cacheType, values));
    table = cache;
  } else {
    base = angles.base;
    factor = angles.scalingFactor;
  }
  auto rotary = b.create<RotaryOp>(
      loc, type, input, positions, cache, uint64_t(rotaryDim), style,
      APFloat(base), factor == 1.0 ? RopeScaling::none : RopeScaling::linear,
      APFloat(factor), FloatAttr(), FloatAttr(), IntegerAttr(), FloatAttr(),
      FloatAttr());
  ONNXShapeInference &inf = nb.getInference();
  if (const ONNXValueFacts *facts = inf.lookup(input))
    inf.setFacts(rotary.getResult(), *facts);
  return rotary.getResult();
}
