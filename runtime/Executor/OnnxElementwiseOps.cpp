//===- OnnxElementwiseOps.cpp - Reference ONNX elementwise ops ------------===//
//
// Binary ops with NumPy broadcasting over f32 or i64, and unary f32 ops:
// what remains of activations, soft-caps and positional arithmetic after
// raising. Same-shape and scalar operands take a flat loop.
//
//===----------------------------------------------------------------------===//

#include "runtime/Executor/StepKernel.h"

#include <cmath>

namespace folio::exec {
namespace {

enum class BinOp { Add, Sub, Mul, Div, Pow };

template <typename T> T apply(BinOp op, T a, T b) {
  switch (op) {
  case BinOp::Add:
    return a + b;
  case BinOp::Sub:
    return a - b;
  case BinOp::Mul:
    return a * b;
  case BinOp::Div:
    return b == T(0) && std::is_integral<T>::value ? T(0) : a / b;
  case BinOp::Pow:
    return T(std::pow(double(a), double(b)));
  }
  return a;
}

template <> float apply<float>(BinOp op, float a, float b) {
  switch (op) {
  case BinOp::Add:
    return a + b;
  case BinOp::Sub:
    return a - b;
  case BinOp::Mul:
    return a * b;
  case BinOp::Div:
    return a / b;
  case BinOp::Pow:
    // ONNX Runtime special-cases the common exponents; so do we, so that
    // x^2 and x^3 round as its kernels do.
    if (b == 2.0f)
      return a * a;
    if (b == 3.0f)
      return a * a * a;
    return std::pow(a, b);
  }
  return a;
}

template <typename T>
void broadcastLoop(BinOp op, const Tensor &a, const Tensor &b, Tensor &out) {
  const T *pa = a.as<T>(), *pb = b.as<T>();
  T *po = out.as<T>();
  int64_t n = out.numel();
  if (a.numel() == n && b.numel() == n) {
    // The residual adds of every layer land here: keep the op out of the
    // loop so it vectorises (a per-element switch cost ~6 ns an element).
    switch (op) {
    case BinOp::Add:
      for (int64_t i = 0; i < n; ++i)
        po[i] = pa[i] + pb[i];
      return;
    case BinOp::Mul:
      for (int64_t i = 0; i < n; ++i)
        po[i] = pa[i] * pb[i];
      return;
    default:
      for (int64_t i = 0; i < n; ++i)
        po[i] = apply<T>(op, pa[i], pb[i]);
      return;
    }
  }
  if (b.numel() == 1 && a.numel() == n) {
    for (int64_t i = 0; i < n; ++i)
      po[i] = apply<T>(op, pa[i], pb[0]);
    return;
  }
  if (a.numel() == 1 && b.numel() == n) {
    for (int64_t i = 0; i < n; ++i)
      po[i] = apply<T>(op, pa[0], pb[i]);
    return;
  }
  size_t r = out.shape.size();
  auto strides = [&](const Shape &s) {
    std::vector<int64_t> st(r, 0);
    int64_t acc = 1;
    for (size_t k = 0; k < s.size(); ++k) {
      size_t d = r - 1 - k;
      size_t sd = s.size() - 1 - k;
      st[d] = s[sd] == 1 ? 0 : acc;
      acc *= s[sd];
    }
    return st;
  };
  std::vector<int64_t> sa = strides(a.shape), sb = strides(b.shape);
  std::vector<int64_t> idx(r, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t oa = 0, ob = 0;
    for (size_t d = 0; d < r; ++d) {
      oa += idx[d] * sa[d];
      ob += idx[d] * sb[d];
    }
    po[i] = apply<T>(op, pa[oa], pb[ob]);
    advanceIndex(idx, out.shape, r);
  }
}

template <BinOp Op> Status runBinary(StepContext &ctx) {
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
  Tensor out = Tensor::allocate(a.type, shape);
  switch (a.type) {
  case ElemType::F32:
    broadcastLoop<float>(Op, a, b, out);
    break;
  case ElemType::I64:
    broadcastLoop<int64_t>(Op, a, b, out);
    break;
  case ElemType::I32:
    broadcastLoop<int32_t>(Op, a, b, out);
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
  Tensor out = Tensor::allocate(x.type, x.shape);
  const float *px = x.as<float>();
  float *po = out.as<float>();
  for (int64_t i = 0, n = x.numel(); i < n; ++i)
    po[i] = Fn(px[i]);
  ctx.setResult(0, std::move(out));
  return Status::ok();
}

float tanhF(float x) { return std::tanh(x); }
float erfF(float x) { return std::erf(x); }
float sqrtF(float x) { return std::sqrt(x); }
float expF(float x) { return std::exp(x); }
float negF(float x) { return -x; }
float sigmoidF(float x) { return 1.0f / (1.0f + std::exp(-x)); }

} // namespace

const std::vector<StepKernel> &onnxShapeStepKernels();

const std::vector<StepKernel> &onnxStepKernels() {
  static const std::vector<StepKernel> table = [] {
    std::vector<StepKernel> t = onnxShapeStepKernels();
    t.insert(t.end(), {
                          {"onnx.Add", runBinary<BinOp::Add>, nullptr, 2, 2},
                          {"onnx.Sub", runBinary<BinOp::Sub>, nullptr, 2, 2},
                          {"onnx.Mul", runBinary<BinOp::Mul>, nullptr, 2, 2},
                          {"onnx.Div", runBinary<BinOp::Div>, nullptr, 2, 2},
                          {"onnx.Pow", runBinary<BinOp::Pow>, nullptr, 2, 2},
                          {"onnx.Tanh", runUnary<tanhF>, nullptr, 1, 1},
                          {"onnx.Erf", runUnary<erfF>, nullptr, 1, 1},
                          {"onnx.Sqrt", runUnary<sqrtF>, nullptr, 1, 1},
                          {"onnx.Exp", runUnary<expF>, nullptr, 1, 1},
                          {"onnx.Neg", runUnary<negF>, nullptr, 1, 1},
                          {"onnx.Sigmoid", runUnary<sigmoidF>, nullptr, 1, 1},
                      });
    return t;
  }();
  return table;
}

} // namespace folio::exec
