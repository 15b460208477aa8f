//===- PlanRowPrograms.cpp - A plan kernel as a row program ---------------===//

#include "runtime/Device/PlanRowPrograms.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace folio::device {

namespace {

using plan::ElemType;

/// The float value of a one-element f32 constant, if its bytes are in the
/// blob.
bool constantScalar(const plan::Plan &plan, int32_t value, float &out) {
  for (const plan::Constant &c : plan.constants)
    if (c.value == value && c.bytes == 4 && plan.blob.data() &&
        c.offset + 4 <= plan.blob.size()) {
      std::memcpy(&out, plan.blob.data() + c.offset, 4);
      return true;
    }
  return false;
}

const std::map<std::string, std::string> &unaryNames() {
  // Plan unary kinds -> row functions (the same names today).
  static const std::map<std::string, std::string> m = {
      {"tanh", "tanh"}, {"erf", "erf"}, {"sqrt", "sqrt"},
      {"exp", "exp"},   {"neg", "neg"}, {"sigmoid", "sigmoid"},
      {"relu", "relu"}, {"abs", "abs"}, {"reciprocal", "reciprocal"}};
  return m;
}

/// Builds a row program step by step; values from outside the kernel
/// become inputs (rows, vectors, scalars) or baked constants.
class ProgramBuilder {
public:
  ProgramBuilder(const PlanViews &d, cuda::RowKernelSpec &spec,
                 std::vector<LaunchOperand> &inputs,
                 const plan::ValueInfo &rowShape, const CopyFn &copy)
      : d(d), plan(d.plan), spec(spec), inputs(inputs), rowShape(rowShape),
        copy(copy) {}

  int push(cuda::RowOp op) {
    spec.ops.push_back(op);
    return int(spec.ops.size()) - 1;
  }

  /// The op holding value `id`, adding an input for an outside value.
  int value(int32_t id, std::string &why) {
    if (id < 0) {
      why = "an absent operand";
      return -1;
    }
    if (auto it = ops.find(id); it != ops.end())
      return it->second;
    const plan::ValueInfo &v = plan.values[size_t(id)];
    if (v.kind != plan::ValueInfo::Kind::Tensor || v.type != ElemType::F32) {
      why = std::string("a ") + plan::elemTypeName(v.type) +
            " operand (row kernels read f32)";
      return -1;
    }
    int64_t n = elementsOf(v.dims);
    cuda::RowOp op;
    float scalar;
    if (n == 1 && constantScalar(plan, id, scalar)) {
      op.kind = cuda::RowOpKind::Constant;
      op.value = scalar;
      return ops[id] = push(op);
    }
    cuda::RowInputKind kind;
    if (n == 1)
      kind = cuda::RowInputKind::Scalar;
    else if (n == spec.dim && !v.dims.empty() && v.dims.back() == spec.dim)
      kind = cuda::RowInputKind::Vector;
    else if (!v.dims.empty() && v.dims.back() == spec.dim &&
             staticElements(v.dims) == staticElements(rowShape.dims) &&
             v.symbol == rowShape.symbol)
      kind = cuda::RowInputKind::Row; // as many rows as the kernel's
    else {
      why = "an operand broadcast other than by rows, as a vector or as a "
            "scalar";
      return -1;
    }
    return ops[id] = input(id, kind, why);
  }

  /// A new input reading value `id` (through the views defining it).
  int input(int32_t id, cuda::RowInputKind kind, std::string &why) {
    if (spec.inputs.size() >= size_t(cuda::kMaxRowInputs)) {
      why = "more than " + std::to_string(cuda::kMaxRowInputs) + " inputs";
      return -1;
    }
    LaunchOperand operand;
    if (!d.resolve(id, operand, why))
      return -1;
    if (operand.stride != 0 &&
        (kind != cuda::RowInputKind::Row || operand.rowElems != spec.dim)) {
      // Rows of several of the kernel's (a slice of heads, each normed on
      // its own) are copied out first.
      if (kind != cuda::RowInputKind::Row || operand.rowElems % spec.dim != 0 ||
          !copy || !copy(id, operand, why)) {
        if (why.empty())
          why = "a strided view whose rows are not the kernel's";
        return -1;
      }
    }
    spec.inputs.push_back(kind);
    inputs.push_back(operand);
    cuda::RowOp op;
    op.kind = cuda::RowOpKind::Input;
    op.index = int(spec.inputs.size()) - 1;
    return push(op);
  }

  void define(int32_t id, int op) { ops[id] = op; }
  bool has(int32_t id) const { return ops.count(id) > 0; }
  int get(int32_t id) const { return ops.at(id); }

private:
  const PlanViews &d;
  const plan::Plan &plan;
  cuda::RowKernelSpec &spec;
  std::vector<LaunchOperand> &inputs;
  const plan::ValueInfo &rowShape;
  const CopyFn &copy;
  std::map<int32_t, int> ops;
};

} // namespace

int rowThreads(int64_t dim) {
  int64_t t = (dim + 7) / 8;
  t = (t + 31) / 32 * 32;
  return int(std::clamp<int64_t>(t, 32, 1024));
}

bool buildRowProgram(const PlanViews &d, const plan::Kernel &kernel,
                     cuda::RowKernelSpec &spec,
                     std::vector<LaunchOperand> &inputs, const CopyFn &copy,
                     std::string &why) {
  const plan::Plan &plan = d.plan;
  spec = cuda::RowKernelSpec();
  inputs.clear();
  spec.label = kernel.kind;
  if (kernel.outputs.empty()) {
    why = "no outputs";
    return false;
  }
  const plan::ValueInfo &first = plan.values[size_t(kernel.outputs[0])];
  if (first.dims.empty() || first.dims.back() <= 0) {
    why = "no static row size";
    return false;
  }
  spec.dim = int(first.dims.back());
  spec.threads = rowThreads(spec.dim);
  ProgramBuilder b(d, spec, inputs, first, copy);
  for (int32_t i = kernel.firstStep; i < kernel.firstStep + kernel.numSteps;
       ++i) {
    const plan::Step &s = plan.steps[size_t(i)];
    if (s.results.size() != 1) {
      why = "a " + s.kind + " step without exactly one result";
      return false;
    }
    int32_t result = s.results[0];
    const plan::ValueInfo &r = plan.values[size_t(result)];
    if (r.dims.empty() || r.dims.back() != spec.dim) {
      why = "a " + s.kind + " step whose rows are not of " +
            std::to_string(spec.dim) + " elements";
      return false;
    }
    cuda::RowOp op;
    if (s.kind == "slice") {
      // A slice of a wider row from outside the kernel (a fused
      // projection's part, in an epilogue): a Row input at the slice's
      // start, the wider row its stride.
      int32_t src = s.operands.empty() ? -1 : s.operands[0];
      if (src < 0 || b.has(src)) {
        why = "a slice of a value the kernel computes";
        return false;
      }
      int in = b.input(result, cuda::RowInputKind::Row, why);
      if (in < 0)
        return false;
      b.define(result, in);
      continue;
    }
    if (s.kind == "reshape") {
      // Rows keep their size: the same elements, another view.
      int a = b.value(s.operands.empty() ? -1 : s.operands[0], why);
      if (a < 0)
        return false;
      b.define(result, a);
      continue;
    }
    if (s.kind == "binary" || s.kind == "unary") {
      std::string fn = s.getString("kind", "");
      if (s.kind == "unary") {
        auto it = unaryNames().find(fn);
        if (it == unaryNames().end() || s.operands.size() != 1) {
          why = "unary '" + fn + "'";
          return false;
        }
        op.kind = cuda::RowOpKind::Unary;
        op.fn = it->second;
      } else {
        const auto &fns = cuda::rowBinaryFunctions();
        if (std::find(fns.begin(), fns.end(), fn) == fns.end() ||
            s.operands.size() != 2) {
          why = "binary '" + fn + "'";
          return false;
        }
        op.kind = cuda::RowOpKind::Binary;
        op.fn = fn;
        if ((op.b = b.value(s.operands[1], why)) < 0)
          return false;
      }
      if ((op.a = b.value(s.operands[0], why)) < 0)
        return false;
    } else if (s.kind == "rms_norm" || s.kind == "layer_norm") {
      bool rms = s.kind == "rms_norm";
      op.kind = rms ? cuda::RowOpKind::RmsNorm : cuda::RowOpKind::LayerNorm;
      op.value = s.getFloat("epsilon", 1e-5);
      op.weightOffset = rms ? s.getFloat("weight_offset", 0.0) : 0.0;
      if (s.operands.size() < 2 || (op.a = b.value(s.operands[0], why)) < 0 ||
          (op.b = b.value(s.operands[1], why)) < 0)
        return false;
      if (!rms && s.operands.size() > 2 && s.operands[2] >= 0 &&
          (op.c = b.value(s.operands[2], why)) < 0)
        return false;
    } else {
      why = "a " + s.kind + " step";
      return false;
    }
    b.define(result, b.push(op));
  }
  for (int32_t out : kernel.outputs) {
    if (!b.has(out)) {
      why = "an output the kernel does not compute";
      return false;
    }
    if (spec.numOutputs >= cuda::kMaxRowOutputs) {
      why = "more than " + std::to_string(cuda::kMaxRowOutputs) + " outputs";
      return false;
    }
    cuda::RowOp op;
    op.kind = cuda::RowOpKind::Output;
    op.a = b.get(out);
    op.index = spec.numOutputs++;
    b.push(op);
  }
  cpu::Status st = cuda::validate(spec);
  if (!st.ok())
    why = st.message();
  return st.ok();
}

} // namespace folio::device
