//===- ElementwiseOps.cpp - folio.binary, folio.unary, folio.cast ---------===//
//
// Binary ops with NumPy broadcasting over f32, i64 or i32, unary f32 ops
// and element type casts: what remains of activations, soft-caps, residual
// adds and positional arithmetic after raising and lowering.
//
// A binary op first coalesces its broadcast: output dims of size 1 are
// dropped and neighbouring dims merge wherever both operands step through
// them as one (both contiguous, or both broadcast). What is left is a few
// outer dims around one inner run in which each operand is either
// contiguous or a single repeated element, so the inner loop is one of four
// tight, vectorisable loops and the multi-index bookkeeping runs once per
// row, not per element. The residual add of every layer becomes one flat
// run; a [S, D] * [D] scale becomes S runs of D.
//
//===----------------------------------------------------------------------===//

#include "runtime/Executor/FusedKernels.h"
#include "runtime/Executor/StepKernel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace folio::exec {
namespace {

struct AddOp {
  template <typename T> T operator()(T a, T b) const { return a + b; }
};
struct SubOp {
  template <typename T> T operator()(T a, T b) const { return a - b; }
};
struct MulOp {
  template <typename T> T operator()(T a, T b) const { return a * b; }
};
struct DivOp {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_integral<T>::value) {
      // Defined instead of a trap: x / 0 is 0, MIN / -1 wraps to MIN.
      if (b == T(0))
        return T(0);
      if (b == T(-1))
        return a == std::numeric_limits<T>::min() ? a : T(-a);
      return a / b;
    } else
      return a / b;
  }
};
struct PowOp {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_same<T, float>::value) {
      // ONNX Runtime special-cases the common exponents; so do we, so that
      // x^2 and x^3 round as its kernels do.
      if (b == 2.0f)
        return a * a;
      if (b == 3.0f)
        return a * a * a;
      return std::pow(a, b);
    } else {
      // Saturating: a plan may hold any exponent.
      double r = std::pow(double(a), double(b));
      if (!(r > double(std::numeric_limits<T>::min())))
        return std::numeric_limits<T>::min();
      if (r >= double(std::numeric_limits<T>::max()))
        return std::numeric_limits<T>::max();
      return T(r);
    }
  }
};

/// The coalesced iteration space of a broadcast: `dims` (the last is the
/// inner run) with each operand's element stride per dim, 0 where it is
/// broadcast. The inner strides are always 0 or 1.
struct Walk {
  std::vector<int64_t> dims, sa, sb;
};

Walk coalesce(const Shape &out, const Shape &a, const Shape &b) {
  size_t r = out.size();
  auto aligned = [&](const Shape &s) {
    std::vector<int64_t> st(r, 0);
    int64_t acc = 1;
    for (size_t k = 0; k < s.size(); ++k) {
      size_t sd = s.size() - 1 - k;
      st[r - 1 - k] = s[sd] == 1 ? 0 : acc;
      acc *= s[sd];
    }
    return st;
  };
  std::vector<int64_t> sa = aligned(a), sb = aligned(b);
  Walk w;
  for (size_t d = 0; d < r; ++d) {
    if (out[d] == 1)
      continue;
    size_t k = w.dims.size();
    if (k > 0 && w.sa[k - 1] == sa[d] * out[d] &&
        w.sb[k - 1] == sb[d] * out[d]) {
      w.dims[k - 1] *= out[d];
      w.sa[k - 1] = sa[d];
      w.sb[k - 1] = sb[d];
      continue;
    }
    w.dims.push_back(out[d]);
    w.sa.push_back(sa[d]);
    w.sb.push_back(sb[d]);
  }
  if (w.dims.empty()) { // a scalar result
    w.dims = {1};
    w.sa = {0};
    w.sb = {0};
  }
  return w;
}

/// One inner run; the four cases are separate loops so each vectorises.
template <typename T, typename Op>
void runRow(const T *a, bool aStep, const T *b, bool bStep, T *o, int64_t n,
            Op op) {
  if (aStep && bStep) {
    for (int64_t i = 0; i < n; ++i)
      o[i] = op(a[i], b[i]);
  } else if (aStep) {
    T bv = *b;
    for (int64_t i = 0; i < n; ++i)
      o[i] = op(a[i], bv);
  } else if (bStep) {
    T av = *a;
    for (int64_t i = 0; i < n; ++i)
      o[i] = op(av, b[i]);
  } else {
    std::fill(o, o + n, op(*a, *b));
  }
}

/// Output elements [begin, end) of the walk.
template <typename T, typename Op>
void runRange(const Walk &w, const T *pa, const T *pb, T *po, int64_t begin,
              int64_t end, Op op) {
  size_t outer = w.dims.size() - 1;
  int64_t inner = w.dims[outer];
  bool aStep = w.sa[outer] != 0, bStep = w.sb[outer] != 0;
  std::vector<int64_t> idx(outer, 0);
  int64_t row = begin / inner, col = begin % inner, oa = 0, ob = 0;
  for (size_t d = outer; d-- > 0;) {
    idx[d] = row % w.dims[d];
    row /= w.dims[d];
    oa += idx[d] * w.sa[d];
    ob += idx[d] * w.sb[d];
  }
  for (int64_t i = begin; i < end;) {
    int64_t len = std::min(inner - col, end - i);
    runRow(pa + oa + (aStep ? col : 0), aStep, pb + ob + (bStep ? col : 0),
           bStep, po + i, len, op);
    i += len;
    col = 0;
    for (size_t d = outer; d-- > 0;) {
      if (++idx[d] < w.dims[d]) {
        oa += w.sa[d];
        ob += w.sb[d];
        break;
      }
      oa -= (w.dims[d] - 1) * w.sa[d];
      ob -= (w.dims[d] - 1) * w.sb[d];
      idx[d] = 0;
    }
  }
}

/// Elements per parallel chunk: a few chunks per thread on big tensors (so
/// a worker that loses its core holds up only a small piece), and no split
/// at all below the size where waking workers costs more than it saves.
/// Every element is computed on its own, so the split never changes a
/// result.
int64_t elementGrain(int64_t n, unsigned threads) {
  constexpr int64_t kMinChunk = 32768;
  if (threads <= 1 || n <= kMinChunk)
    return std::max<int64_t>(n, 1);
  return std::max(kMinChunk, (n + 4 * threads - 1) / int64_t(4 * threads));
}

template <typename T, typename Op>
void broadcast(const Tensor &a, const Tensor &b, Tensor &out,
               cpu::ThreadPool &pool) {
  int64_t n = out.numel();
  if (n == 0)
    return;
  const T *pa = a.as<T>(), *pb = b.as<T>();
  T *po = out.as<T>();
  int64_t grain = elementGrain(n, pool.numThreads());
  if (a.shape == b.shape) { // the residual adds: skip the walk's setup
    pool.parallelFor(n, grain, [&](int64_t s, int64_t e) {
      runRow(pa + s, true, pb + s, true, po + s, e - s, Op());
    });
    return;
  }
  Walk w = coalesce(out.shape, a.shape, b.shape);
  pool.parallelFor(n, grain, [&](int64_t s, int64_t e) {
    runRange(w, pa, pb, po, s, e, Op());
  });
}

template <typename Op> Status runBinary(StepContext &ctx) {
  const Tensor &a = ctx.in(0), &b = ctx.in(1);
  if (a.type != b.type)
    return ctx.error(std::string("operands differ in element type (") +
                     plan::elemTypeName(a.type) + " vs " +
                     plan::elemTypeName(b.type) + ")");
  size_t r = std::max(a.shape.size(), b.shape.size());
  Shape shape(r, 1);
  for (size_t k = 0; k < r; ++k) {
    int64_t da = k < a.shape.size() ? a.shape[a.shape.size() - 1 - k] : 1;
    int64_t db = k < b.shape.size() ? b.shape[b.shape.size() - 1 - k] : 1;
    if (da != db && da != 1 && db != 1)
      return ctx.error("shapes " + shapeString(a.shape) + " and " +
                       shapeString(b.shape) + " do not broadcast");
    shape[r - 1 - k] = da == 1 ? db : da;
  }
  Tensor out;
  switch (a.type) {
  case ElemType::F32:
    out = ctx.output(0, a.type, shape);
    broadcast<float, Op>(a, b, out, ctx.pool);
    break;
  case ElemType::I64:
    out = ctx.output(0, a.type, shape);
    broadcast<int64_t, Op>(a, b, out, ctx.pool);
    break;
  case ElemType::I32:
    out = ctx.output(0, a.type, shape);
    broadcast<int32_t, Op>(a, b, out, ctx.pool);
    break;
  default:
    return ctx.error(std::string("element type ") + plan::elemTypeName(a.type) +
                     " is not supported");
  }
  ctx.setResult(0, std::move(out));
  return Status::ok();
}

template <float (*Fn)(float)> Status runUnary(StepContext &ctx) {
  const Tensor &x = ctx.in(0);
  if (x.type != ElemType::F32)
    return ctx.error("expects f32");
  Tensor out = ctx.output(0, x.type, x.shape);
  const float *px = x.as<float>();
  float *po = out.as<float>();
  int64_t n = x.numel();
  ctx.pool.parallelFor(n, elementGrain(n, ctx.pool.numThreads()),
                       [&](int64_t s, int64_t e) {
                         for (int64_t i = s; i < e; ++i)
                           po[i] = Fn(px[i]);
                       });
  ctx.setResult(0, std::move(out));
  return Status::ok();
}

float tanhF(float x) { return std::tanh(x); }
float erfF(float x) { return std::erf(x); }
float sqrtF(float x) { return std::sqrt(x); }
float expF(float x) { return std::exp(x); }
float negF(float x) { return -x; }
float sigmoidF(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float reluF(float x) { return x > 0.0f ? x : 0.0f; }
float absF(float x) { return std::fabs(x); }
float reciprocalF(float x) { return 1.0f / x; }

struct MaxOp {
  template <typename T> T operator()(T a, T b) const { return a < b ? b : a; }
};
struct MinOp {
  template <typename T> T operator()(T a, T b) const { return b < a ? b : a; }
};

/// The kind travels as its spelling; a plan with an unknown one is refused
/// at load (prepare), so run never sees it.
using RunFnPtr = Status (*)(StepContext &);

RunFnPtr binaryFor(const std::string &kind);
RunFnPtr unaryFor(const std::string &kind);

struct KindState : StepState {
  RunFnPtr run = nullptr;
};

template <RunFnPtr (*Lookup)(const std::string &)>
Status prepareKind(const PrepareContext &ctx,
                   std::unique_ptr<StepState> &state) {
  std::string kind = ctx.step.getString("kind", "");
  auto s = std::make_unique<KindState>();
  s->run = Lookup(kind);
  if (!s->run)
    return Status::invalidArgument(ctx.step.kind + " '" + ctx.step.name +
                                   "': unknown kind '" + kind + "'");
  state = std::move(s);
  return Status::ok();
}

Status runByKind(StepContext &ctx) {
  auto *s = static_cast<KindState *>(ctx.state);
  return s->run(ctx);
}

/// folio.cast: integer widening/narrowing, f32 <-> bf16/f16.
Status runCast(StepContext &ctx) {
  const Tensor &x = ctx.in(0);
  std::string to = ctx.step.getString("to", "");
  ElemType type;
  if (to == "i64")
    type = ElemType::I64;
  else if (to == "i32")
    type = ElemType::I32;
  else if (to == "f32")
    type = ElemType::F32;
  else if (to == "bf16")
    type = ElemType::BF16;
  else if (to == "f16")
    type = ElemType::F16;
  else
    return ctx.error("unknown target type '" + to + "'");
  bool intIn = x.type == ElemType::I32 || x.type == ElemType::I64;
  bool intOut = type == ElemType::I32 || type == ElemType::I64;
  if (intIn != intOut)
    return ctx.error("casts within integers or within floats only");
  Tensor out = ctx.output(0, type, x.shape);
  int64_t n = x.numel();
  if (intIn) {
    for (int64_t i = 0; i < n; ++i) {
      if (type == ElemType::I64)
        out.as<int64_t>()[i] = x.intAt(i);
      else
        out.as<int32_t>()[i] = int32_t(x.intAt(i));
    }
  } else {
    auto dtype = [](ElemType t) {
      return t == ElemType::BF16  ? cpu::DType::BF16
             : t == ElemType::F16 ? cpu::DType::F16
                                  : cpu::DType::F32;
    };
    for (int64_t i = 0; i < n; ++i)
      cpu::storeFromFloat(out.data, dtype(type), size_t(i),
                          cpu::loadAsFloat(x.data, dtype(x.type), size_t(i)));
  }
  ctx.setResult(0, std::move(out));
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Fused pointwise chains (FusedKernels.h)
//===----------------------------------------------------------------------===//

using BinaryRowFn = void (*)(const float *, bool, const float *, bool, float *,
                             int64_t);
using UnaryRowFn = void (*)(const float *, float *, int64_t);

template <typename Op>
void binaryRow(const float *a, bool aStep, const float *b, bool bStep, float *o,
               int64_t n) {
  runRow<float, Op>(a, aStep, b, bStep, o, n, Op());
}

template <float (*Fn)(float)>
void unaryRow(const float *x, float *o, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    o[i] = Fn(x[i]);
}

/// One row per kind: the step kernel and the fused chain's row loop, so
/// the two paths cannot disagree on what a spelling means.
struct BinaryKindEntry {
  const char *name;
  RunFnPtr run;
  BinaryRowFn row;
};
struct UnaryKindEntry {
  const char *name;
  RunFnPtr run;
  UnaryRowFn row;
};

const BinaryKindEntry kBinaryKinds[] = {
    {"add", runBinary<AddOp>, binaryRow<AddOp>},
    {"sub", runBinary<SubOp>, binaryRow<SubOp>},
    {"mul", runBinary<MulOp>, binaryRow<MulOp>},
    {"div", runBinary<DivOp>, binaryRow<DivOp>},
    {"pow", runBinary<PowOp>, binaryRow<PowOp>},
    {"max", runBinary<MaxOp>, binaryRow<MaxOp>},
    {"min", runBinary<MinOp>, binaryRow<MinOp>},
};

const UnaryKindEntry kUnaryKinds[] = {
    {"tanh", runUnary<tanhF>, unaryRow<tanhF>},
    {"erf", runUnary<erfF>, unaryRow<erfF>},
    {"sqrt", runUnary<sqrtF>, unaryRow<sqrtF>},
    {"exp", runUnary<expF>, unaryRow<expF>},
    {"neg", runUnary<negF>, unaryRow<negF>},
    {"sigmoid", runUnary<sigmoidF>, unaryRow<sigmoidF>},
    {"relu", runUnary<reluF>, unaryRow<reluF>},
    {"abs", runUnary<absF>, unaryRow<absF>},
    {"reciprocal", runUnary<reciprocalF>, unaryRow<reciprocalF>},
};

template <typename Entry, size_t N>
const Entry *findKind(const Entry (&table)[N], const std::string &kind) {
  for (const Entry &e : table)
    if (kind == e.name)
      return &e;
  return nullptr;
}

RunFnPtr binaryFor(const std::string &kind) {
  const BinaryKindEntry *e = findKind(kBinaryKinds, kind);
  return e ? e->run : nullptr;
}
RunFnPtr unaryFor(const std::string &kind) {
  const UnaryKindEntry *e = findKind(kUnaryKinds, kind);
  return e ? e->run : nullptr;
}
BinaryRowFn binaryRowFor(const std::string &kind) {
  const BinaryKindEntry *e = findKind(kBinaryKinds, kind);
  return e ? e->row : nullptr;
}
UnaryRowFn unaryRowFor(const std::string &kind) {
  const UnaryKindEntry *e = findKind(kUnaryKinds, kind);
  return e ? e->row : nullptr;
}

} // namespace

bool isPointwiseChain(const plan::Plan &plan, int32_t first, int32_t end) {
  if (first >= end)
    return false;
  for (int32_t i = first; i < end; ++i) {
    const plan::Step &s = plan.steps[size_t(i)];
    std::string kind = s.getString("kind", "");
    bool ok =
        (s.kind == "binary" && s.operands.size() == 2 && binaryRowFor(kind)) ||
        (s.kind == "unary" && s.operands.size() == 1 && unaryRowFor(kind));
    if (!ok || s.results.size() != 1)
      return false;
    for (int32_t id : s.operands)
      if (id < 0 || plan.values[size_t(id)].type != ElemType::F32)
        return false;
    if (plan.values[size_t(s.results[0])].type != ElemType::F32)
      return false;
  }
  return true;
}

Status runPointwiseChain(FusedContext &ctx, int32_t first, int32_t end,
                         bool &done) {
  done = false;
  const plan::Plan &p = ctx.plan;
  // Where each value the chain reads comes from: a chain step (its index),
  // or outside (-1).
  std::vector<int32_t> producer; // by position in `ids`
  std::vector<int32_t> ids;
  auto indexOf = [&](int32_t id) {
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i] == id)
        return int32_t(i);
    return int32_t(-1);
  };
  for (int32_t i = first; i < end; ++i) {
    ids.push_back(p.steps[size_t(i)].results[0]);
    producer.push_back(i);
  }
  // The chain's shape: the largest outside operand's.
  const Tensor *main = nullptr;
  for (int32_t i = first; i < end; ++i)
    for (int32_t id : p.steps[size_t(i)].operands)
      if (indexOf(id) < 0) {
        const Tensor &t = ctx.values[size_t(id)];
        if (!t.data && t.numel() != 0)
          return Status::ok(); // leave it to the steps' own messages
        if (t.type != ElemType::F32)
          return Status::ok();
        if (!main || t.numel() > main->numel())
          main = &t;
      }
  if (!main || main->rank() == 0 || main->numel() == 0)
    return Status::ok();
  const Shape shape = main->shape;
  int64_t n = main->numel(), row = shape.back();
  enum class Mode { Full, Scalar, Row };
  // An operand of the chain's shape, a scalar or a row vector, none of
  // which raises the rank past the chain's.
  auto modeOf = [&](const Tensor &t, Mode &m) {
    if (t.shape == shape)
      return m = Mode::Full, true;
    if (t.numel() == 1 && t.rank() <= int64_t(shape.size()))
      return m = Mode::Scalar, true;
    bool leadingOnes = true;
    for (size_t d = 0; d + 1 < t.shape.size(); ++d)
      leadingOnes &= t.shape[d] == 1;
    if (leadingOnes && t.rank() >= 1 && t.shape.back() == row &&
        t.rank() <= int64_t(shape.size()))
      return m = Mode::Row, true;
    return false;
  };
  // Resolve every operand once.
  struct Operand {
    int32_t chainIndex = -1; // a chain value, else outside
    const float *data = nullptr;
    Mode mode = Mode::Full;
  };
  struct Op {
    BinaryRowFn binary = nullptr;
    UnaryRowFn unary = nullptr;
    Operand in[2];
  };
  std::vector<Op> ops;
  bool anyRow = false;
  for (int32_t i = first; i < end; ++i) {
    const plan::Step &s = p.steps[size_t(i)];
    Op op;
    std::string kind = s.getString("kind", "");
    if (s.kind == "binary")
      op.binary = binaryRowFor(kind);
    else
      op.unary = unaryRowFor(kind);
    // Every step must produce the chain's shape: at least one operand of
    // that shape (a chain value or an outside tensor), the other one of it,
    // a scalar or a row vector. A unary step takes only the shape itself.
    bool full = false;
    for (size_t k = 0; k < s.operands.size(); ++k) {
      int32_t at = indexOf(s.operands[k]);
      if (at >= 0 && at < i - first) {
        op.in[k].chainIndex = at;
        full = true;
        continue;
      }
      const Tensor &t = ctx.values[size_t(s.operands[k])];
      if (!modeOf(t, op.in[k].mode))
        return Status::ok();
      full |= op.in[k].mode == Mode::Full;
      anyRow |= op.in[k].mode == Mode::Row;
      op.in[k].data = t.as<float>();
    }
    if (!full ||
        (op.unary && op.in[0].chainIndex < 0 && op.in[0].mode != Mode::Full))
      return Status::ok();
    ops.push_back(op);
  }
  // Materialise what is read later; the rest lives in per-chunk scratch.
  std::vector<Tensor> outs(ops.size());
  std::vector<bool> live(ops.size());
  for (size_t j = 0; j < ops.size(); ++j) {
    live[j] = ctx.isLive(ids[j]);
    if (live[j])
      outs[j] = ctx.arena ? ctx.arena->make(ids[j], ElemType::F32, shape)
                          : Tensor::empty(ElemType::F32, shape);
  }
  // Chunks of whole rows when a row vector is read, so that each segment
  // sees the vector from its start.
  int64_t grain = 4096;
  if (anyRow)
    grain = std::max<int64_t>(1, 4096 / row) * row;
  int64_t chunks = (n + grain - 1) / grain;
  ctx.pool.parallelFor(chunks, 1, [&](int64_t cb, int64_t ce) {
    std::vector<float> scratch(ops.size() * size_t(grain));
    for (int64_t c = cb; c < ce; ++c) {
      int64_t s0 = c * grain, len = std::min(grain, n - s0);
      auto dst = [&](size_t j) {
        return live[j] ? outs[j].as<float>() + s0
                       : scratch.data() + j * size_t(grain);
      };
      for (size_t j = 0; j < ops.size(); ++j) {
        const Op &op = ops[j];
        float *o = dst(j);
        // Segments: the whole chunk, or one row at a time.
        int64_t seg = anyRow ? row : len;
        for (int64_t off = 0; off < len; off += seg) {
          int64_t m = std::min(seg, len - off);
          const float *x[2] = {nullptr, nullptr};
          bool step[2] = {true, true};
          for (int k = 0; k < (op.binary ? 2 : 1); ++k) {
            const Operand &in = op.in[k];
            if (in.chainIndex >= 0) {
              x[k] = dst(size_t(in.chainIndex)) + off;
            } else if (in.mode == Mode::Full) {
              x[k] = in.data + s0 + off;
            } else if (in.mode == Mode::Scalar) {
              x[k] = in.data;
              step[k] = false;
            } else {
              x[k] = in.data; // a segment is one whole row
            }
          }
          if (op.binary)
            op.binary(x[0], step[0], x[1], step[1], o + off, m);
          else
            op.unary(x[0], o + off, m);
        }
      }
    }
  });
  for (size_t j = 0; j < ops.size(); ++j)
    if (live[j])
      ctx.values[size_t(ids[j])] = std::move(outs[j]);
  done = true;
  return Status::ok();
}

namespace {} // namespace

const std::vector<StepKernel> &elementwiseStepKernels() {
  static const std::vector<StepKernel> table = {
      {"binary", runByKind, prepareKind<binaryFor>, 2, 2},
      {"unary", runByKind, prepareKind<unaryFor>, 1, 1},
      {"cast", runCast, nullptr, 1, 1},
  };
  return table;
}

} // namespace folio::exec
