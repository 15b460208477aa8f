//===- MaskAnalysis.cpp - Attention masks recognised by meaning -----------===//

#include "compiler/RaiseAttention/MaskAnalysis.h"

#include "compiler/RaiseAttention/Evaluator.h"

#include <cmath>
#include <sstream>

using namespace mlir;
using namespace mlir::folio;

namespace {
/// One concrete input: `pad[b]` leading attention_mask zeros in row b.
struct Config {
  int64_t batch, past, seq;
  SmallVector<int64_t, 2> pad;
  /// Long configurations probe wide windows and the length the mask holds
  /// up to; a model whose mask cannot be built that long (a fixed-size
  /// causal buffer) cannot run that long either, so a failure there only
  /// shortens the proven context.
  bool optional = false;

  int64_t getTotal() const { return past + seq; }
};

struct Run {
  Config config;
  int64_t queries = 0, keys = 0;
  ConcreteTensor mask;
  ConcreteTensor attentionMask;
};

/// Additive masks hide with -inf, finfo.min or at least -1e4 (fp16's
/// finfo.min is -65504).
constexpr double kHidden = -1e4;

/// The longest key length probed with a KV cache: one query over 2^20 keys
/// keeps every [1, 1, 1, keys] tensor of the mask subgraph at 8 MiB.
constexpr int64_t kLongestCached = int64_t(1) << 20;
/// Without a cache queries and keys grow together, so the mask is
/// [S, S]: 2048^2 is the most elements the evaluator holds in one tensor.
constexpr int64_t kLongestUncached = 2048;

enum class Outcome {
  Evaluated,
  /// The mask cannot be computed at this length (or does not fit the
  /// scores there): nothing is known about it.
  Unevaluable,
  /// The mask is wrong whatever its length: an error.
  Invalid,
  /// The graph itself has no mask here (its shapes do not broadcast).
  Undefined,
};
} // namespace

/// Mandatory short configurations cover padding and multi-query rows;
/// optional long ones, in increasing length, push the proven context up.
static SmallVector<Config> getConfigs(bool cached) {
  if (cached)
    return {{1, 0, 5, {0}},
            {1, 3, 4, {0}},
            {2, 0, 6, {0, 2}},
            {2, 4, 3, {0, 3}},
            {2, 6, 1, {0, 2}},
            {1, 0, 12, {0}},
            {1, 20, 3, {0}},
            {1, 300, 2, {0}, true},
            {1, 5000, 2, {0}, true},
            {1, 70000, 1, {0}, true},
            {1, kLongestCached - 1, 1, {0}, true}};
  return {{1, 0, 5, {0}},          {2, 0, 6, {0, 2}},
          {2, 0, 9, {0, 4}},       {1, 0, 12, {0}},
          {1, 0, 23, {0}},         {1, 0, 300, {0}, true},
          {1, 0, 1100, {0}, true}, {1, 0, kLongestUncached, {0}, true}};
}

/// The longest mandatory configuration: the least context a model must be
/// proven for to be served at all.
static int64_t getMandatoryContext(bool cached) {
  int64_t longest = 0;
  for (const Config &config : getConfigs(cached))
    if (!config.optional)
      longest = std::max(longest, config.getTotal());
  return longest;
}

/// The cheapest configuration with `total` keys: one query over a cache,
/// else one unpadded sequence.
static Config probeConfig(bool cached, int64_t total) {
  if (cached)
    return {1, total - 1, 1, {0}, true};
  return {1, 0, total, {0}, true};
}

/// `row` -1 describes the whole batch.
static std::string describeConfig(const Config &c, int64_t row) {
  std::ostringstream os;
  os << "with batch " << c.batch << ", " << c.past << " past and " << c.seq
     << " new tokens";
  if (row >= 0 && row < int64_t(c.pad.size()) && c.pad[row] > 0)
    os << " (row " << row << " left-padded by " << c.pad[row] << ")";
  return os.str();
}

/// Binds the graph inputs for `run.config`, reads the query and key lengths
/// and, unless `form` is None, evaluates the mask into `run.mask` (broadcast
/// to rank 4). `why` says what failed.
static Outcome evaluateRun(ONNXShapeInference &inference,
                           const GraphInputs &inputs, Value mask, MaskForm form,
                           Value query, int64_t queryAxis, Value key,
                           int64_t keyAxis, Run &run, std::string &why) {
  const Config &config = run.config;
  int64_t b = config.batch, total = config.getTotal();
  ONNXEvaluator evaluator(inference);
  inputs.bindDims(evaluator, b, config.seq, config.past);
  run.attentionMask =
      ConcreteTensor::filled(ConcreteTensor::Kind::Int, {b, total}, 1);
  for (int64_t row = 0; row < b; ++row)
    for (int64_t j = 0; j < config.pad[row]; ++j)
      run.attentionMask.data[row * total + j] = 0;
  if (inputs.attentionMask)
    evaluator.bind(inputs.attentionMask, run.attentionMask);
  if (inputs.inputIds)
    evaluator.bind(
        inputs.inputIds,
        ConcreteTensor::filled(ConcreteTensor::Kind::Int, {b, config.seq}, 0));
  if (inputs.positionIds) {
    // As generation computes them: cumsum(mask) - 1, padding at 1.
    ConcreteTensor pos =
        ConcreteTensor::filled(ConcreteTensor::Kind::Int, {b, config.seq}, 0);
    for (int64_t row = 0; row < b; ++row) {
      int64_t sum = 0;
      for (int64_t j = 0; j < total; ++j) {
        double m = run.attentionMask.data[row * total + j];
        sum += int64_t(m);
        if (j >= config.past)
          pos.data[row * config.seq + j - config.past] = m ? sum - 1 : 1;
      }
    }
    evaluator.bind(inputs.positionIds, pos);
  }
  // Lengths from the shape facts; where those are lost, the model
  // contract: queries are the new tokens, keys past + new.
  std::optional<SmallVector<int64_t, 4>> qDims =
      evaluator.getConcreteDims(query);
  std::optional<SmallVector<int64_t, 4>> kDims = evaluator.getConcreteDims(key);
  run.queries = qDims && int64_t(qDims->size()) > queryAxis
                    ? (*qDims)[queryAxis]
                    : config.seq;
  run.keys =
      kDims && int64_t(kDims->size()) > keyAxis ? (*kDims)[keyAxis] : total;
  if (form == MaskForm::None)
    return Outcome::Evaluated;

  const ConcreteTensor *value = evaluator.evaluate(mask);
  if (!value) {
    why = "the mask cannot be evaluated " + describeConfig(config, -1) + ": " +
          (evaluator.getErrorOp()
               ? "node " + describeNode(evaluator.getErrorOp()) + ": "
               : std::string()) +
          evaluator.getError();
    return evaluator.isUndefined() ? Outcome::Undefined : Outcome::Unevaluable;
  }
  run.mask = *value;
  SmallVector<int64_t, 4> shape(4 - std::min<int64_t>(4, value->getRank()), 1);
  shape.append(value->shape.begin(), value->shape.end());
  bool fits = value->getRank() <= 4 && (shape[0] == 1 || shape[0] == b) &&
              (shape[2] == 1 || shape[2] == run.queries) &&
              (shape[3] == 1 || shape[3] == run.keys);
  if (!fits) {
    std::ostringstream os;
    os << "the mask has shape " << value->describeShape()
       << ", which does not broadcast to the scores [" << b << ", heads, "
       << run.queries << ", " << run.keys << "] " << describeConfig(config, -1);
    why = os.str();
    return Outcome::Unevaluable;
  }
  run.mask.shape = shape;
  if (form == MaskForm::Additive)
    for (double v : run.mask.data)
      if (v != 0 && !(v <= kHidden)) {
        std::ostringstream os;
        os << "the mask holds " << v
           << ", which is neither 0 (keep) nor a large negative number "
              "(hide)";
        why = os.str();
        return Outcome::Invalid;
      }
  return Outcome::Evaluated;
}

MaskAnalysis::MaskAnalysis(func::FuncOp func, ONNXShapeInference &inference)
    : inference(inference), inputs(GraphInputs::find(func, inference)) {}

FailureOr<MaskClass> MaskAnalysis::classify(Value mask, MaskForm form,
                                            bool alsoCausal, Value query,
                                            int64_t queryAxis, Value key,
                                            int64_t keyAxis,
                                            std::string &error) {
  auto cacheKey = std::make_tuple(mask, unsigned(form), unsigned(alsoCausal));
  if (auto it = cache.find(cacheKey); it != cache.end()) {
    // What is worth a warning was said for the first attention reading it.
    MaskClass again = it->second;
    again.undefinedMixed.clear();
    return again;
  }

  bool cached = !inputs.past.empty() && inputs.pastLen;
  SmallVector<Run> runs;
  auto evaluate = [&](const Config &config, Run &run, std::string &why) {
    run.config = config;
    return evaluateRun(inference, inputs, mask, form, query, queryAxis, key,
                       keyAxis, run, why);
  };
  // A mandatory configuration that cannot be evaluated is an error, but
  // only once the runs before it are classified: the message then says up
  // to which length the mask was proven.
  std::string unevaluable, undefinedMixed;
  // The first long configuration that failed; longer ones are not tried.
  int64_t failedTotal = 0;
  for (const Config &config : getConfigs(cached)) {
    // Without a mask nothing is evaluated and the class holds at any
    // length, so long configurations add nothing.
    if (config.optional && (form == MaskForm::None || failedTotal))
      continue;
    Run run;
    std::string why;
    Outcome outcome = evaluate(config, run, why);
    if (outcome == Outcome::Invalid) {
      error = why;
      return failure();
    }
    // Some exporters (ONNX Runtime GenAI's builder for fp16 CPU models)
    // write masks only for prefill without past and one-token decode: with
    // several new tokens over a past their shapes do not broadcast, in ONNX
    // Runtime too. The class is then read off the configurations the graph
    // defines, which include both of those.
    if (outcome == Outcome::Undefined && config.past > 0 && config.seq > 1) {
      if (undefinedMixed.empty())
        undefinedMixed = why;
      continue;
    }
    if (outcome == Outcome::Undefined)
      outcome = Outcome::Unevaluable;
    if (outcome == Outcome::Unevaluable) {
      if (!config.optional) {
        unevaluable = why;
        break;
      }
      failedTotal = config.getTotal();
      continue;
    }
    runs.push_back(std::move(run));
  }
  // Where a long configuration failed, bisect the length between the
  // longest evaluated one and it with single-row probes, so that a
  // fixed-size buffer proves its own size rather than the last probe's.
  if (failedTotal) {
    int64_t lo = 0;
    for (const Run &run : runs)
      lo = std::max(lo, run.config.getTotal());
    int64_t hi = failedTotal;
    while (hi - lo > 1) {
      int64_t mid = lo + (hi - lo) / 2;
      Run run;
      std::string why;
      Outcome outcome = evaluate(probeConfig(cached, mid), run, why);
      if (outcome == Outcome::Invalid) {
        error = why;
        return failure();
      }
      if (outcome == Outcome::Unevaluable || outcome == Outcome::Undefined) {
        hi = mid;
        continue;
      }
      lo = mid;
      runs.push_back(std::move(run));
    }
  }

  auto headsOf = [](const Run &run) {
    return run.mask.getRank() == 4 ? run.mask.shape[1] : int64_t(1);
  };
  auto allowed = [&](const Run &run, int64_t b, int64_t h, int64_t s,
                     int64_t l) {
    int64_t position = run.keys - run.queries + s;
    if (alsoCausal && l > position)
      return false;
    if (form == MaskForm::None)
      return true;
    double v = run.mask.at({b, h, s, l});
    switch (form) {
    case MaskForm::Additive:
      return v == 0;
    case MaskForm::KeepIfTrue:
      return v != 0;
    case MaskForm::KeepIfFalse:
      return v == 0;
    case MaskForm::None:
      break;
    }
    return true;
  };
  auto keyValid = [&](const Run &run, int64_t b, int64_t l) {
    int64_t total = run.attentionMask.shape[1];
    return run.keys != total || run.attentionMask.data[b * total + l] != 0;
  };
  /// Rows of padding tokens are meaningless (and some exporters unmask
  /// them fully), so only real queries are compared.
  auto realQuery = [&](const Run &run, int64_t b, int64_t s) {
    return keyValid(run, b, run.keys - run.queries + s);
  };

  // Read causality and the window off the unpadded rows.
  bool sawFuture = false, everything = true;
  int64_t lookback = 0;
  std::string futureWitness;
  for (const Run &run : runs)
    for (int64_t b = 0; b < run.config.batch; ++b) {
      if (run.config.pad[b] != 0)
        continue;
      for (int64_t h = 0; h < headsOf(run); ++h)
        for (int64_t s = 0; s < run.queries; ++s) {
          int64_t position = run.keys - run.queries + s;
          for (int64_t l = 0; l < run.keys; ++l) {
            bool a = allowed(run, b, h, s, l);
            everything &= a;
            if (a && l > position && !sawFuture) {
              sawFuture = true;
              std::ostringstream os;
              os << describeConfig(run.config, b) << ", query " << s
                 << " (position " << position << ") sees key " << l;
              futureWitness = os.str();
            }
            if (a && l <= position)
              lookback = std::max(lookback, position - l + 1);
          }
        }
    }
  MaskClass result;
  if (sawFuture && !everything) {
    error = "the mask is not causal: " + futureWitness;
    return failure();
  }
  result.causal = !sawFuture;
  // A window shows as a bounded lookback: some query must have had more
  // keys behind it than it was allowed to see.
  bool bounded = false;
  if (result.causal)
    for (const Run &run : runs)
      bounded |= run.keys > lookback;
  result.window = result.causal && bounded ? lookback : 0;

  auto describe = [&](const MaskClass &c) {
    std::ostringstream os;
    os << (c.causal ? "causal" : "unmasked");
    if (c.window > 0)
      os << " with a sliding window of " << c.window;
    if (c.keyPadding)
      os << " with key padding from attention_mask";
    return os.str();
  };
  std::string firstMismatch;
  for (bool padding : {true, false}) {
    if (padding && !inputs.attentionMask)
      continue;
    result.keyPadding = padding;
    std::string mismatch;
    for (const Run &run : runs) {
      for (int64_t b = 0; b < run.config.batch && mismatch.empty(); ++b)
        for (int64_t h = 0; h < headsOf(run) && mismatch.empty(); ++h)
          for (int64_t s = 0; s < run.queries && mismatch.empty(); ++s) {
            if (!realQuery(run, b, s))
              continue;
            int64_t position = run.keys - run.queries + s;
            for (int64_t l = 0; l < run.keys; ++l) {
              bool expected =
                  (!result.causal || l <= position) &&
                  (result.window == 0 || position - l < result.window) &&
                  (!padding || keyValid(run, b, l));
              bool actual = allowed(run, b, h, s, l);
              if (expected == actual)
                continue;
              std::ostringstream os;
              os << "the mask is not " << describe(result) << ": "
                 << describeConfig(run.config, b) << ", query " << s
                 << " (position " << position << ") "
                 << (actual ? "sees" : "does not see") << " key " << l;
              mismatch = os.str();
              break;
            }
          }
      if (!mismatch.empty())
        break;
    }
    if (mismatch.empty()) {
      if (form != MaskForm::None)
        for (const Run &run : runs)
          result.provenContext = std::max(result.provenContext, run.keys);
      if (!unevaluable.empty()) {
        // Shorter than the mandatory configurations: too little is known
        // to serve the model at all.
        error = unevaluable;
        if (result.provenContext > 0)
          error += "; it was proven " + describe(result) + " only up to " +
                   std::to_string(result.provenContext) +
                   " tokens, fewer than the " +
                   std::to_string(getMandatoryContext(cached)) +
                   " every mask must be proven for";
        return failure();
      }
      result.undefinedMixed = undefinedMixed;
      if (result.provenContext > 0)
        provenContext = provenContext
                            ? std::min(provenContext, result.provenContext)
                            : result.provenContext;
      cache[cacheKey] = result;
      return result;
    }
    if (firstMismatch.empty())
      firstMismatch = mismatch;
  }
  error = firstMismatch;
  return failure();
}
