//===- RowEmitter.cpp - CUDA C++ for a row program ------------------------===//
//
// Every per-element value lives in a register array `vK[kPer]` (element d =
// threadIdx.x + i * kThreads); scalars and constants are plain floats.
// Elementwise ops go into one loop over i until a norm needs the whole row:
// the loop closes, the block reduction runs, and the next loop starts. The
// formulas are those of the CPU executor (ElementwiseOps.cpp, RowKernels),
// so results agree within rounding.
//
//===----------------------------------------------------------------------===//

#include "codegen/CUDA/RowEmitter.h"

#include <cmath>
#include <cstdio>
#include <map>

namespace folio::cuda {

using cpu::Status;

namespace {

/// Expression templates: %0 and %1 stand for the operands.
const std::map<std::string, std::string> &formulas() {
  static const std::map<std::string, std::string> f = {
      {"neg", "(-%0)"},
      {"abs", "fabsf(%0)"},
      {"exp", "expf(%0)"},
      {"tanh", "tanhf(%0)"},
      {"erf", "erff(%0)"},
      {"sqrt", "sqrtf(%0)"},
      {"reciprocal", "(1.0f / %0)"},
      {"sigmoid", "(1.0f / (1.0f + expf(-%0)))"},
      {"relu", "(%0 > 0.0f ? %0 : 0.0f)"},
      {"silu", "(%0 / (1.0f + expf(-%0)))"},
      {"gelu_erf", "(0.5f * %0 * (1.0f + erff(%0 * 0.70710678118654752f)))"},
      {"gelu_tanh", "folio_cuda::rowGeluTanh(%0)"},
      {"add", "(%0 + %1)"},
      {"sub", "(%0 - %1)"},
      {"mul", "(%0 * %1)"},
      {"div", "(%0 / %1)"},
      {"pow", "folio_cuda::rowPow(%0, %1)"},
      {"max", "fmaxf(%0, %1)"},
      {"min", "fminf(%0, %1)"},
  };
  return f;
}

std::string substitute(const std::string &pattern, const std::string &a,
                       const std::string &b) {
  std::string s;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() &&
        (pattern[i + 1] == '0' || pattern[i + 1] == '1')) {
      s += pattern[i + 1] == '0' ? a : b;
      ++i;
    } else {
      s += pattern[i];
    }
  }
  return s;
}

/// A float literal that is exactly float(v): hex for finite values.
std::string literal(double v) {
  float f = float(v);
  if (std::isnan(f))
    return "__int_as_float(0x7fc00000)";
  if (std::isinf(f))
    return f > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%af", double(f));
  return buf;
}

} // namespace

Status emitRowBody(const RowKernelSpec &s, std::string &body) {
  if (Status st = validate(s); !st.ok())
    return st;
  const size_t n = s.ops.size();
  // How each value is referred to inside the element loop.
  std::vector<std::string> ref(n);
  std::vector<bool> perElement(n, false);
  std::string decls, code, loop;
  bool hasNorm = false;
  const std::string open =
      "#pragma unroll\n  for (int i = 0; i < kPer; ++i) {\n"
      "    const int d = tid + i * kThreads;\n"
      "    if (d < kDim) {\n";
  auto closeLoop = [&]() {
    if (!loop.empty())
      code += "  " + open + loop + "    }\n  }\n";
    loop.clear();
  };
  for (size_t k = 0; k < n; ++k) {
    const RowOp &op = s.ops[k];
    std::string v = "v" + std::to_string(k);
    auto arrayValue = [&]() {
      decls += "  float " + v + "[kPer] = {};\n";
      ref[k] = v + "[i]";
      perElement[k] = true;
    };
    switch (op.kind) {
    case RowOpKind::Input: {
      std::string in = std::to_string(op.index);
      RowInputKind kind = s.inputs[size_t(op.index)];
      if (kind == RowInputKind::Scalar) {
        decls += "  const float " + v + " = args.in[" + in + "][0];\n";
        ref[k] = v;
        break;
      }
      arrayValue();
      loop += "      " + ref[k] + " = args.in[" + in + "][" +
              (kind == RowInputKind::Row ? "row * args.inStride[" + in + "] + "
                                         : std::string()) +
              "d];\n";
      break;
    }
    case RowOpKind::Constant:
      ref[k] = literal(op.value);
      break;
    case RowOpKind::Unary:
    case RowOpKind::Binary: {
      std::string b = op.kind == RowOpKind::Binary ? ref[size_t(op.b)] : "";
      std::string expr = substitute(formulas().at(op.fn), ref[size_t(op.a)], b);
      bool elem = perElement[size_t(op.a)] ||
                  (op.kind == RowOpKind::Binary && perElement[size_t(op.b)]);
      if (!elem) { // a function of scalars: once, before the loops
        decls += "  const float " + v + " = " + expr + ";\n";
        ref[k] = v;
        break;
      }
      arrayValue();
      loop += "      " + ref[k] + " = " + expr + ";\n";
      break;
    }
    case RowOpKind::RmsNorm:
    case RowOpKind::LayerNorm: {
      if (!perElement[size_t(op.a)])
        return Status::error("row kernel " + s.label + ", op " +
                             std::to_string(k) +
                             ": a norm needs a per-element operand, not a "
                             "constant or scalar");
      closeLoop();
      hasNorm = true;
      std::string x = "v" + std::to_string(op.a);
      std::string tmpl = "<kPer, kThreads, kDim>";
      std::string eps = literal(op.value);
      std::string w = op.b >= 0 ? ref[size_t(op.b)] : "";
      if (op.kind == RowOpKind::RmsNorm) {
        // As RowKernels' rmsNorm: 1 / sqrt(sum(x^2) / n + eps).
        code += "  const float " + v +
                "_inv = 1.0f / sqrtf(folio_cuda::rowSumSquares" + tmpl + "(" +
                x + ", 0.0f, red) / float(kDim) + " + eps + ");\n";
        arrayValue();
        loop += "      " + ref[k] + " = " + x + "[i] * " + v + "_inv * (" +
                literal(op.weightOffset) + " + " + (w.empty() ? "0.0f" : w) +
                ");\n";
      } else {
        // As RowKernels' layerNorm: the mean, then the biased variance.
        code += "  const float " + v + "_mean = folio_cuda::rowSum" + tmpl +
                "(" + x + ", red) / float(kDim);\n" + "  const float " + v +
                "_inv = 1.0f / sqrtf(folio_cuda::rowSumSquares" + tmpl + "(" +
                x + ", " + v + "_mean, red) / float(kDim) + " + eps + ");\n";
        arrayValue();
        loop += "      " + ref[k] + " = (" + x + "[i] - " + v + "_mean) * " +
                v + "_inv * " + (w.empty() ? "1.0f" : w) + " + " +
                (op.c >= 0 ? ref[size_t(op.c)] : "0.0f") + ";\n";
      }
      break;
    }
    case RowOpKind::Output: {
      std::string o = std::to_string(op.index);
      loop += "      args.out[" + o + "][row * args.outStride[" + o +
              "] + d] = " + ref[size_t(op.a)] + ";\n";
      break;
    }
    }
  }
  closeLoop();
  int per = (s.dim + s.threads - 1) / s.threads;
  body = "  constexpr int kDim = " + std::to_string(s.dim) +
         ", kThreads = " + std::to_string(s.threads) +
         ", kPer = " + std::to_string(per) + ";\n" +
         (hasNorm ? "  __shared__ float red[32];\n" : "") +
         "  const long long row = blockIdx.x;\n"
         "  const int tid = int(threadIdx.x);\n"
         "  (void)row;\n" +
         decls + code;
  return Status::success();
}

} // namespace folio::cuda
