//===- PositionAnalysis.cpp - Positions a graph computes, by meaning ------===//

#include "compiler/RaiseAttention/PositionAnalysis.h"

#include "compiler/RaiseAttention/Evaluator.h"

#include <sstream>

using namespace mlir;
using namespace mlir::folio;

namespace {
struct Probe {
  int64_t past, seq;
};
} // namespace

/// Short probes are mandatory; long ones (one new token far into the
/// sequence) show that nothing clamps or wraps positions up to the context
/// the masks were proven for. Without a cache every probe starts at 0.
static const Probe kCachedShort[] = {{0, 1}, {0, 5},  {3, 4},
                                     {7, 1}, {20, 3}, {0, 12}};
static const Probe kCachedLong[] = {
    {299, 1}, {4999, 1}, {69999, 1}, {(1 << 20) - 1, 1}};
static const Probe kNoCacheShort[] = {{0, 1}, {0, 5}, {0, 12}, {0, 64}};
static const Probe kNoCacheLong[] = {{0, 300}, {0, 1100}, {0, 2048}};

static std::string describeProbe(const Probe &probe) {
  std::ostringstream os;
  os << "with " << probe.past << " past and " << probe.seq << " new tokens";
  return os.str();
}

namespace {
enum class Outcome { Equal, Differs, NotEvaluated };
} // namespace

static Outcome checkProbe(ONNXShapeInference &inference,
                          const GraphInputs &inputs, Value value,
                          const Probe &probe, std::string &error,
                          Operation *&errorOp) {
  int64_t total = probe.past + probe.seq;
  ONNXEvaluator evaluator(inference);
  inputs.bindDims(evaluator, 1, probe.seq, probe.past);
  if (inputs.attentionMask)
    evaluator.bind(
        inputs.attentionMask,
        ConcreteTensor::filled(ConcreteTensor::Kind::Int, {1, total}, 1));
  if (inputs.positionIds) {
    ConcreteTensor pos =
        ConcreteTensor::filled(ConcreteTensor::Kind::Int, {1, probe.seq}, 0);
    for (int64_t s = 0; s < probe.seq; ++s)
      pos.data[s] = probe.past + s;
    evaluator.bind(inputs.positionIds, pos);
  }
  const ConcreteTensor *result = evaluator.evaluate(value);
  if (!result) {
    error = "it cannot be evaluated " + describeProbe(probe) + ": " +
            (evaluator.getErrorOp()
                 ? "at node " + describeNode(evaluator.getErrorOp()) + ", "
                 : std::string()) +
            evaluator.getError();
    errorOp = evaluator.getErrorOp();
    return Outcome::NotEvaluated;
  }
  std::ostringstream os;
  if (result->getRank() != 2 || result->shape[0] != 1 ||
      result->shape[1] != probe.seq) {
    os << describeProbe(probe) << " it has shape [";
    for (auto [i, d] : llvm::enumerate(result->shape))
      os << (i ? ", " : "") << d;
    os << "], not [1, " << probe.seq << "] (one position per new token)";
    error = os.str();
    return Outcome::Differs;
  }
  for (int64_t s = 0; s < probe.seq; ++s)
    if (result->data[s] != double(probe.past + s)) {
      os << describeProbe(probe) << " it gives token " << s << " the value "
         << result->data[s] << ", not its position " << probe.past + s;
      error = os.str();
      return Outcome::Differs;
    }
  return Outcome::Equal;
}

LogicalResult mlir::folio::provePositions(func::FuncOp func,
                                          ONNXShapeInference &inference,
                                          Value value, int64_t maxContext,
                                          int64_t &provenContext,
                                          std::string &error,
                                          Operation *&errorOp) {
  errorOp = nullptr;
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || type.getRank() != 2 ||
      !type.getElementType().isSignlessInteger()) {
    error = "it is not a [batch, seq] integer tensor";
    return failure();
  }
  GraphInputs inputs = GraphInputs::find(func, inference);
  bool cached = !inputs.past.empty();
  ArrayRef<Probe> shortProbes =
      cached ? ArrayRef<Probe>(kCachedShort) : ArrayRef<Probe>(kNoCacheShort);
  ArrayRef<Probe> longProbes =
      cached ? ArrayRef<Probe>(kCachedLong) : ArrayRef<Probe>(kNoCacheLong);
  provenContext = 0;
  for (const Probe &probe : shortProbes) {
    if (checkProbe(inference, inputs, value, probe, error, errorOp) !=
        Outcome::Equal)
      return failure();
    provenContext = std::max(provenContext, probe.past + probe.seq);
  }
  // The long probes below the context, then one at it.
  SmallVector<Probe> longer;
  for (const Probe &probe : longProbes)
    if (maxContext <= 0 || probe.past + probe.seq < maxContext)
      longer.push_back(probe);
  if (maxContext > provenContext)
    longer.push_back(cached ? Probe{maxContext - 1, 1} : Probe{0, maxContext});
  for (const Probe &probe : longer) {
    int64_t total = probe.past + probe.seq;
    std::string why;
    Operation *where = nullptr;
    Outcome outcome = checkProbe(inference, inputs, value, probe, why, where);
    if (outcome == Outcome::NotEvaluated)
      break; // Proven as far as it could be evaluated.
    if (outcome == Outcome::Differs) {
      error = why;
      errorOp = where;
      return failure();
    }
    provenContext = total;
  }
  return success();
}
