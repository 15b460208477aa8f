//===- CudaRowKernels.cpp - A plan's CUDA kernels besides kv_write/decode -===//

#include "compiler/Plan/CudaRowKernels.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>

namespace folio::compiler {

namespace {

using plan::ElemType;
using KVScale = plan::ValueInfo::KVScale;

/// Threads of a row kernel: about 8 elements each, at least a warp.
int rowThreads(int64_t dim) {
  int64_t t = (dim + 7) / 8;
  t = (t + 31) / 32 * 32;
  return int(std::clamp<int64_t>(t, 32, 1024));
}

int64_t product(const std::vector<int64_t> &dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n = d < 0 || n < 0 ? -1 : n * d;
  return n;
}

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

/// Builds the program step by step; values from outside the kernel become
/// inputs (rows, vectors, scalars) or baked constants.
class ProgramBuilder {
public:
  ProgramBuilder(const plan::Plan &plan, cuda::RowKernelSpec &spec)
      : plan(plan), spec(spec) {}

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
    int64_t n = product(v.dims);
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
    else if (!v.dims.empty() && v.dims.back() == spec.dim)
      kind = cuda::RowInputKind::Row;
    else {
      why = "an operand broadcast other than by rows, as a vector or as a "
            "scalar";
      return -1;
    }
    if (spec.inputs.size() >= size_t(cuda::kMaxRowInputs)) {
      why = "more than " + std::to_string(cuda::kMaxRowInputs) + " inputs";
      return -1;
    }
    spec.inputs.push_back(kind);
    op.kind = cuda::RowOpKind::Input;
    op.index = int(spec.inputs.size()) - 1;
    return ops[id] = push(op);
  }

  void define(int32_t id, int op) { ops[id] = op; }
  bool has(int32_t id) const { return ops.count(id) > 0; }
  int get(int32_t id) const { return ops.at(id); }

private:
  const plan::Plan &plan;
  cuda::RowKernelSpec &spec;
  std::map<int32_t, int> ops;
};

const std::map<std::string, std::string> &unaryNames() {
  // Plan unary kinds -> row functions (the same names today).
  static const std::map<std::string, std::string> m = {
      {"tanh", "tanh"}, {"erf", "erf"}, {"sqrt", "sqrt"},
      {"exp", "exp"},   {"neg", "neg"}, {"sigmoid", "sigmoid"},
      {"relu", "relu"}, {"abs", "abs"}, {"reciprocal", "reciprocal"}};
  return m;
}

/// The cache format of a KV-cache value, as the CUDA specs name it (the
/// rules of CudaKernels.cpp, which refuses the other layouts first).
bool cacheFormat(const plan::ValueInfo &v, cpu::DType &type, int &group) {
  group = 0;
  switch (v.type) {
  case ElemType::F32:
    type = cpu::DType::F32;
    return true;
  case ElemType::F16:
    type = cpu::DType::F16;
    return true;
  case ElemType::BF16:
    type = cpu::DType::BF16;
    return true;
  case ElemType::F8E4M3:
    type = cpu::DType::FP8E4M3;
    return true;
  case ElemType::F8E5M2:
    type = cpu::DType::FP8E5M2;
    return true;
  case ElemType::I8:
    type = cpu::DType::I8;
    group = int(v.kvScale == KVScale::PerTokenHead ? v.headDim : v.kvGroup);
    return true;
  case ElemType::I4:
    type = cpu::DType::I4;
    group = int(v.kvGroup);
    return true;
  default:
    return false;
  }
}

/// The linear kernel over the weight stored for operands [operand,
/// operand + numOperands) of `step` (folioc --weight-dtype), or false: a
/// weight left as an f32 constant has no stored form for the kernel to
/// read, and folioc reports the kind as not generated.
bool linearSpecFor(const plan::Plan &plan, int32_t step, int32_t operand,
                   int32_t numOperands, cuda::LinearSpec &spec) {
  for (const plan::StoredWeight &w : plan.weights) {
    if (w.step != step || w.operand != operand || w.numOperands != numOperands)
      continue;
    spec = cuda::LinearSpec{};
    switch (w.type) {
    case ElemType::F32:
      spec.weightType = cpu::DType::F32;
      break;
    case ElemType::BF16:
      spec.weightType = cpu::DType::BF16;
      break;
    case ElemType::F16:
      spec.weightType = cpu::DType::F16;
      break;
    case ElemType::I8:
      spec.weightType = cpu::DType::I8;
      break;
    case ElemType::F8E4M3:
      spec.weightType = cpu::DType::FP8E4M3;
      break;
    case ElemType::I4:
      spec.weightType = cpu::DType::I4;
      spec.groupSize = int(plan::int4LayoutGroupSize(w.layout));
      break;
    default:
      return false;
    }
    spec.k = int(w.k);
    return true; // the spec's default pass and block
  }
  return false;
}

} // namespace

bool buildRowProgram(const plan::Plan &plan, const plan::Kernel &kernel,
                     cuda::RowKernelSpec &spec, std::string &why) {
  spec = cuda::RowKernelSpec();
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
  ProgramBuilder b(plan, spec);
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
      // projection's part, in an epilogue): a Row input the caller offsets
      // by `start`, with the wider row as its stride.
      int32_t src = s.operands.empty() ? -1 : s.operands[0];
      if (src < 0 || b.has(src)) {
        why = "a slice of a value the kernel computes";
        return false;
      }
      const plan::ValueInfo &in = plan.values[size_t(src)];
      int64_t axis = s.getInt("axis", -1);
      int64_t rank = int64_t(in.dims.size());
      if (axis < 0)
        axis += rank;
      if (rank == 0 || axis != rank - 1 || in.type != ElemType::F32 ||
          in.dims.back() <= 0 ||
          s.getInt("start", 0) + spec.dim > in.dims.back()) {
        why = "a slice other than of the last axis of an f32 row";
        return false;
      }
      if (spec.inputs.size() >= size_t(cuda::kMaxRowInputs)) {
        why = "more than " + std::to_string(cuda::kMaxRowInputs) + " inputs";
        return false;
      }
      spec.inputs.push_back(cuda::RowInputKind::Row);
      op.kind = cuda::RowOpKind::Input;
      op.index = int(spec.inputs.size()) - 1;
      b.define(result, b.push(op));
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

Status collectCudaRowKernels(const plan::Plan &plan, PlanCudaRowKernels &out) {
  std::map<std::string, size_t> byName;
  auto add = [&](const cuda::GeneratedKernel &k, int32_t step,
                 const cuda::AnyKernelSpec &spec) {
    auto [it, inserted] = byName.emplace(k.name, out.kernels.size());
    if (inserted)
      out.kernels.push_back({k, {}, spec});
    if (step >= 0)
      out.kernels[it->second].steps.push_back(step);
  };
  auto check = [](const cpu::Status &st, const std::string &where) {
    return st.ok() ? Status::ok()
                   : Status::invalidArgument(where + ": " + st.message());
  };
  std::vector<std::string> kinds; // in plan order
  std::set<std::string> incomplete;
  for (const plan::Kernel &k : plan.kernels) {
    if (std::find(kinds.begin(), kinds.end(), k.kind) == kinds.end())
      kinds.push_back(k.kind);
    cuda::RowKernelSpec rowSpec;
    std::string why;
    if (buildRowProgram(plan, k, rowSpec, why)) {
      cuda::GeneratedKernel g;
      if (Status s =
              check(cuda::emitRowKernel(rowSpec, g),
                    k.kind + " kernel at step " + std::to_string(k.firstStep));
          !s)
        return s;
      for (int32_t i = k.firstStep; i < k.firstStep + k.numSteps; ++i)
        add(g, i, rowSpec);
      continue;
    }
    bool complete = true;
    int32_t end = k.firstStep + k.numSteps; // steps taken one by one
    int32_t gemm = -1; // the last linear step of a linear_epilogue
    for (int32_t i = k.firstStep; i < k.firstStep + k.numSteps; ++i)
      if (k.kind == "linear_epilogue" && plan.steps[size_t(i)].kind == "linear")
        gemm = i;
    if (gemm >= 0) {
      // The epilogue after the GEMM, as a row program reading the GEMM's
      // result; the GEMM and any steps before it are taken one by one.
      plan::Kernel epilogue = k;
      epilogue.firstStep = gemm + 1;
      epilogue.numSteps = k.firstStep + k.numSteps - gemm - 1;
      // Its outputs are the kernel's but the GEMM's own result, which the
      // GEMM writes.
      epilogue.outputs.clear();
      for (int32_t v : k.outputs)
        if (std::find(plan.steps[size_t(gemm)].results.begin(),
                      plan.steps[size_t(gemm)].results.end(),
                      v) == plan.steps[size_t(gemm)].results.end())
          epilogue.outputs.push_back(v);
      if (buildRowProgram(plan, epilogue, rowSpec, why)) {
        cuda::GeneratedKernel g;
        if (Status s = check(cuda::emitRowKernel(rowSpec, g),
                             "the epilogue of the linear at " +
                                 plan.steps[size_t(gemm)].name);
            !s)
          return s;
        for (int32_t i = epilogue.firstStep; i < k.firstStep + k.numSteps; ++i)
          add(g, i, rowSpec);
      } else {
        complete = false;
      }
      end = gemm + 1; // the GEMM and what leads to it
    }
    for (int32_t i = k.firstStep; i < end; ++i) {
      const plan::Step &s = plan.steps[size_t(i)];
      std::string where = s.kind + " at " + s.name;
      cuda::GeneratedKernel g;
      // Set by every branch that generates a kernel.
      std::optional<cuda::AnyKernelSpec> any;
      if (s.kind == "reshape" || s.kind == "slice" || s.kind == "kv_write") {
        continue; // views; kv_write is CudaKernels.cpp's
      } else if (s.kind == "paged_attention") {
        const plan::ValueInfo &q = plan.values[size_t(s.operands[0])];
        const plan::ValueInfo &cache = plan.values[size_t(s.operands[1])];
        cpu::DType type;
        int group;
        if (q.dims.size() != 3 || cache.kvHeads <= 0 ||
            q.dims[1] % cache.kvHeads != 0 || !cacheFormat(cache, type, group))
          return Status::invalidArgument(
              where + ": no prefill attention kernel for its query or cache");
        cuda::PagedPrefillSpec spec = cuda::defaultPagedPrefillSpec(
            type, int(cache.headDim), int(cache.blockSize), int(cache.kvHeads),
            int(q.dims[1] / cache.kvHeads), group);
        if (!cuda::validate(spec).ok())
          continue; // no tiles fit: the decode kernel serves every batch
        if (Status st = check(cuda::emitPagedPrefill(spec, g), where); !st)
          return st;
        any = spec;
      } else if (s.kind == "rotary") {
        const plan::ValueInfo &x = plan.values[size_t(s.operands[0])];
        if (x.dims.size() != 3) {
          complete = false; // [B, H, S, D] layouts stay on the host path
          continue;
        }
        cuda::RotarySpec spec;
        spec.headDim = int(x.dims[2]);
        spec.numHeads = int(x.dims[1]);
        spec.rotaryDim = int(s.getInt("rotary_dim", spec.headDim));
        spec.interleaved = s.getString("style", "half_split") == "interleaved";
        if (Status st = check(cuda::emitRotary(spec, g), where); !st)
          return st;
        any = spec;
      } else if (s.kind == "embedding" || s.kind == "gather_rows") {
        bool embedding = s.kind == "embedding";
        const plan::ValueInfo &table = plan.values[size_t(s.operands[0])];
        cuda::GatherSpec spec;
        spec.embedding = embedding;
        spec.tableType = table.type == ElemType::BF16  ? cpu::DType::BF16
                         : table.type == ElemType::F16 ? cpu::DType::F16
                                                       : cpu::DType::F32;
        if (table.dims.size() != 2 || table.dims[1] <= 0) {
          complete = false;
          continue;
        }
        spec.dim = int(table.dims[1]);
        spec.threads = rowThreads(spec.dim);
        if (Status st = check(cuda::emitGather(spec, g), where); !st)
          return st;
        any = spec;
      } else if (s.kind == "cast") {
        auto castType = [](ElemType t, cuda::CastType &out) {
          switch (t) {
          case ElemType::F32:
            out = cuda::CastType::F32;
            return true;
          case ElemType::F16:
            out = cuda::CastType::F16;
            return true;
          case ElemType::BF16:
            out = cuda::CastType::BF16;
            return true;
          case ElemType::I32:
            out = cuda::CastType::I32;
            return true;
          case ElemType::I64:
            out = cuda::CastType::I64;
            return true;
          default:
            return false;
          }
        };
        cuda::CastSpec spec;
        if (s.operands.empty() || s.results.empty() ||
            !castType(plan.values[size_t(s.operands[0])].type, spec.from) ||
            !castType(plan.values[size_t(s.results[0])].type, spec.to) ||
            !cuda::validate(spec).ok()) {
          complete = false;
          continue;
        }
        if (Status st = check(cuda::emitCast(spec, g), where); !st)
          return st;
        any = spec;
      } else if (s.kind == "linear") {
        cuda::LinearSpec spec;
        if (!linearSpecFor(plan, i, 1, 1, spec)) {
          complete = false;
          continue;
        }
        if (Status st = check(cuda::emitLinear(spec, g), where); !st)
          return st;
        any = spec;
      } else if (s.kind == "gated_mlp") {
        // Gate and up stacked in one GEMM, the activation, then down.
        cuda::LinearSpec gateUp, downProj;
        if (linearSpecFor(plan, i, 1, 2, gateUp) &&
            linearSpecFor(plan, i, 3, 1, downProj)) {
          for (const cuda::LinearSpec &spec : {gateUp, downProj}) {
            cuda::GeneratedKernel gemmKernel;
            if (Status st = check(cuda::emitLinear(spec, gemmKernel), where);
                !st)
              return st;
            add(gemmKernel, i, spec);
          }
        } else {
          complete = false;
        }
        std::string act = s.getString("activation", "silu");
        const char *fn = act == "silu"        ? "silu"
                         : act == "gelu"      ? "gelu_erf"
                         : act == "gelu_tanh" ? "gelu_tanh"
                                              : nullptr;
        const plan::ValueInfo &down = plan.values[size_t(s.operands[3])];
        bool inOut = s.getString("weight_layout", "in_out") == "in_out";
        if (!fn || down.dims.size() != 2) {
          complete = false;
          continue;
        }
        cuda::RowKernelSpec spec;
        spec.label = "gated_" + std::string(fn);
        spec.dim = int(inOut ? down.dims[0] : down.dims[1]);
        spec.threads = rowThreads(spec.dim);
        spec.inputs = {cuda::RowInputKind::Row, cuda::RowInputKind::Row};
        cuda::RowOp gate, up, a, mul, store;
        gate.kind = up.kind = cuda::RowOpKind::Input;
        gate.index = 0;
        up.index = 1;
        a.kind = cuda::RowOpKind::Unary;
        a.fn = fn;
        a.a = 0;
        mul.kind = cuda::RowOpKind::Binary;
        mul.fn = "mul";
        mul.a = 2;
        mul.b = 1;
        store.kind = cuda::RowOpKind::Output;
        store.a = 3;
        store.index = 0;
        spec.ops = {gate, up, a, mul, store};
        spec.numOutputs = 1;
        if (Status st = check(cuda::emitRowKernel(spec, g), where); !st)
          return st;
        any = spec;
      } else {
        // A norm or elementwise step inside a fused kernel (the final norm
        // of gather_rows_linear, say): a row program of that step alone.
        plan::Kernel one;
        one.kind = s.kind;
        one.firstStep = i;
        one.numSteps = 1;
        one.outputs = s.results;
        cuda::RowKernelSpec spec;
        std::string why;
        if (!buildRowProgram(plan, one, spec, why)) {
          complete = false;
          continue;
        }
        if (Status st = check(cuda::emitRowKernel(spec, g), where); !st)
          return st;
        any = spec;
      }
      add(g, i, any.value());
    }
    if (!complete)
      incomplete.insert(k.kind);
  }
  for (const std::string &kind : kinds) {
    if (incomplete.count(kind))
      out.notGenerated.push_back(kind);
    else
      out.generatedKinds.push_back(kind);
  }
  // Sampling over the logits rows (the vocabulary is an argument): greedy,
  // and temperature / top-k / top-p.
  for (bool greedy : {true, false}) {
    const cuda::SampleSpec samplerSpec{greedy, 256};
    cuda::GeneratedKernel sampler;
    if (Status s = check(cuda::emitSample(samplerSpec, sampler), "sampling");
        !s)
      return s;
    add(sampler, -1, samplerSpec);
  }
  return Status::ok();
}

} // namespace folio::compiler
