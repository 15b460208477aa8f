//===- PlanLaunches.cpp - The CUDA launches of a plan's kernels -----------===//

#include "runtime/Device/PlanLaunches.h"
#include "runtime/Device/PlanRowPrograms.h"
#include "runtime/Device/PlanViews.h"
#include "runtime/Plan/KernelDType.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <set>

namespace folio::device {

namespace {

using plan::ElemType;
using KVScale = plan::ValueInfo::KVScale;

} // namespace

Status cudaCacheFormat(const plan::ValueInfo &v, const std::string &where,
                       cpu::DType &type, int &group) {
  group = 0;
  if (!plan::kernelDType(v.type, type))
    return Status::invalidArgument(where + ": a " + elemTypeName(v.type) +
                                   " value is not a KV cache");
  switch (v.type) {
  case ElemType::F8E4M3:
  case ElemType::F8E5M2:
    if (v.kvScale != KVScale::PerHead)
      return Status::invalidArgument(
          where +
          ": the CUDA kernels take fp8 caches with per-head static "
          "scales only, not " +
          kvScaleName(v.kvScale));
    return Status::ok();
  case ElemType::I8:
    if (v.kvScale == KVScale::PerTokenHead)
      group = int(v.headDim);
    else if (v.kvScale == KVScale::PerTokenGroup)
      group = int(v.kvGroup);
    else
      return Status::invalidArgument(
          where +
          ": the CUDA kernels take int8 caches with per_token_head "
          "or per_token_group scales only, not " +
          kvScaleName(v.kvScale));
    return Status::ok();
  case ElemType::I4:
    group = int(v.kvGroup);
    if (v.kvScale != KVScale::PerTokenGroup)
      return Status::invalidArgument(
          where +
          ": the CUDA kernels take int4 caches with per_token_group "
          "scales only, not " +
          kvScaleName(v.kvScale));
    return Status::ok();
  case ElemType::I2: // refused by the emitter, with the list
    group = int(v.kvGroup);
    return Status::ok();
  default: // f32, f16, bf16
    return Status::ok();
  }
}

namespace {

/// A stored weight's dtype and int4 group as the generated kernels' specs
/// take them (plan::storedWeightDType); false for a dtype no kernel reads.
bool storedDType(const plan::StoredWeight &w, cpu::DType &type,
                 int &groupSize) {
  int64_t group = 0;
  if (!plan::storedWeightDType(w, type, group))
    return false;
  groupSize = int(group);
  return true;
}

/// The linear kernel over the weight stored for operands [operand,
/// operand + numOperands) of `step` (folioc --weight-dtype), or -1: a
/// weight left as an f32 constant has no stored form for the kernel to
/// read, and the kind is reported as not generated.
int32_t linearSpecFor(const plan::Plan &plan, int32_t step, int32_t operand,
                      int32_t numOperands, cuda::LinearSpec &spec) {
  for (size_t i = 0; i < plan.weights.size(); ++i) {
    const plan::StoredWeight &w = plan.weights[i];
    if (w.step != step || w.operand != operand || w.numOperands != numOperands)
      continue;
    spec = cuda::LinearSpec{};
    if (!storedDType(w, spec.weightType, spec.groupSize))
      return -1;
    spec.k = int(w.k);
    return int32_t(i); // the spec's default pass and block
  }
  return -1;
}

/// Whether prefill attention may round its inputs to bf16 for tensor
/// cores (as GPU serving engines' attention does): the plan stores its
/// linear weights in 16 bits or fewer, whose GEMMs already take x in bf16
/// or f16 on cuBLASLt. A plan that keeps a weight in f32 (folioc
/// --weight-dtype f32) asked for f32 precision and gets f32 attention.
bool bf16Products(const plan::Plan &plan) {
  if (plan.weights.empty())
    return false;
  for (const plan::StoredWeight &w : plan.weights) {
    cpu::DType type;
    int group = 0;
    if (!storedDType(w, type, group) || type == cpu::DType::F32)
      return false;
  }
  return true;
}

Status check(const cpu::Status &st, const std::string &where) {
  return st.ok() ? Status::ok()
                 : Status::invalidArgument(where + ": " + st.message());
}

/// Derives the launches of one plan kernel (see planLaunches).
class KernelDeriver {
public:
  KernelDeriver(PlanViews &d, const plan::Kernel &k, KernelLaunches &out)
      : d(d), plan(d.plan), k(k), out(out) {}

  Status run() {
    cuda::RowKernelSpec rowSpec;
    std::vector<LaunchOperand> rowInputs;
    std::string why;
    if (rowProgram(k, rowSpec, rowInputs, why)) {
      if (Status s = addRow(rowSpec, rowInputs, k.outputs, k.firstStep,
                            k.firstStep + k.numSteps);
          !s)
        return s;
      return Status::ok();
    }
    int32_t end = k.firstStep + k.numSteps; // steps taken one by one
    int32_t gemm = -1; // the last linear step of a linear_epilogue
    for (int32_t i = k.firstStep; i < k.firstStep + k.numSteps; ++i)
      if (k.kind == "linear_epilogue" && plan.steps[size_t(i)].kind == "linear")
        gemm = i;
    if (gemm >= 0)
      end = gemm + 1; // the GEMM and what leads to it; then the epilogue
    for (int32_t i = k.firstStep; i < end; ++i)
      if (Status s = step(i); !s)
        return s;
    if (gemm < 0)
      return Status::ok();
    // The epilogue after the GEMM, as a row program reading the GEMM's
    // result. Its outputs are the kernel's but the GEMM's own result,
    // which the GEMM wrote.
    plan::Kernel epilogue = k;
    epilogue.firstStep = gemm + 1;
    epilogue.numSteps = k.firstStep + k.numSteps - gemm - 1;
    const std::vector<int32_t> &gemmResults = plan.steps[size_t(gemm)].results;
    epilogue.outputs.clear();
    for (int32_t v : k.outputs)
      if (std::find(gemmResults.begin(), gemmResults.end(), v) ==
          gemmResults.end())
        epilogue.outputs.push_back(v);
    if (epilogue.numSteps == 0)
      return Status::ok();
    if (!rowProgram(epilogue, rowSpec, rowInputs, why)) {
      incomplete(epilogue.firstStep, why);
      return Status::ok();
    }
    return addRow(rowSpec, rowInputs, epilogue.outputs, epilogue.firstStep,
                  k.firstStep + k.numSteps);
  }

private:
  /// buildRowProgram, with the copies of its strided inputs as launches
  /// before it (dropped again if it fails).
  bool rowProgram(const plan::Kernel &kernel, cuda::RowKernelSpec &spec,
                  std::vector<LaunchOperand> &inputs, std::string &why) {
    size_t launches = out.launches.size(), scratches = out.scratch.size();
    CopyFn copy = [&](int32_t value, LaunchOperand &o, std::string &w) {
      return materialize(kernel.firstStep, value, o, w);
    };
    if (buildRowProgram(d, kernel, spec, inputs, copy, why))
      return true;
    out.launches.resize(launches);
    out.scratch.resize(scratches);
    return false;
  }

  void incomplete(int32_t i, const std::string &why) {
    if (out.complete)
      out.why = plan.steps[size_t(i)].kind + " at " +
                plan.steps[size_t(i)].name + ": " + why;
    out.complete = false;
  }

  PlanLaunch &add(const std::string &name, const cuda::AnyKernelSpec &spec,
                  int32_t step, std::vector<int32_t> steps) {
    PlanLaunch l;
    l.name = name;
    l.spec = spec;
    l.step = step;
    l.steps = std::move(steps);
    out.launches.push_back(std::move(l));
    return out.launches.back();
  }

  Status addRow(const cuda::RowKernelSpec &spec,
                const std::vector<LaunchOperand> &inputs,
                const std::vector<int32_t> &outputs, int32_t first,
                int32_t end) {
    if (Status s = check(cuda::validate(spec),
                         k.kind + " kernel at step " + std::to_string(first));
        !s)
      return s;
    std::vector<int32_t> steps;
    for (int32_t i = first; i < end; ++i)
      steps.push_back(i);
    PlanLaunch &l = add(cuda::kernelName(spec), spec, first, steps);
    l.inputs = inputs;
    for (int32_t v : outputs) {
      LaunchOperand o;
      o.value = o.view = v;
      l.outputs.push_back(o);
      d.markWritten(v);
    }
    return Status::ok();
  }

  /// Writes the result of step `i`, contiguously.
  LaunchOperand result(int32_t i, size_t r = 0) {
    LaunchOperand o;
    o.value = o.view = plan.steps[size_t(i)].results[r];
    d.markWritten(o.value);
    return o;
  }

  /// An optional operand: absent (-1) stays absent.
  bool optional(const plan::Step &s, size_t i, LaunchOperand &o,
                std::string &why) {
    o = LaunchOperand{};
    if (s.operands.size() <= i || s.operands[i] < 0)
      return true;
    return d.contiguous(s.operands[i], o, why);
  }

  /// A contiguous read of f32 value `value` for step `i`: a strided view
  /// (a slice of a fused projection) is first copied into scratch by a row
  /// kernel, for the kernels that take no row stride.
  bool materialize(int32_t i, int32_t value, LaunchOperand &o,
                   std::string &why) {
    if (!d.resolve(value, o, why))
      return false;
    if (o.stride == 0)
      return true;
    const plan::ValueInfo &v = plan.values[size_t(value)];
    int64_t dynamic = std::count(v.dims.begin(), v.dims.end(), int64_t(-1));
    if (v.type != ElemType::F32 ||
        (dynamic > 0 && (dynamic > 1 || v.symbol == plan::DimSymbol::None))) {
      why = "a strided view of a non-f32 or unsized value";
      return false;
    }
    cuda::RowKernelSpec spec;
    spec.label = "copy";
    spec.dim = int(o.rowElems);
    spec.threads = rowThreads(spec.dim);
    spec.inputs = {cuda::RowInputKind::Row};
    cuda::RowOp in, store;
    in.kind = cuda::RowOpKind::Input;
    in.index = 0;
    store.kind = cuda::RowOpKind::Output;
    store.a = 0;
    store.index = 0;
    spec.ops = {in, store};
    spec.numOutputs = 1;
    if (!cuda::validate(spec).ok()) {
      why = "a strided view with rows of " + std::to_string(o.rowElems) +
            " elements";
      return false;
    }
    PlanLaunch &l = add(cuda::kernelName(spec), spec, i, {i});
    LaunchOperand copy;
    copy.scratch = scratch(dynamic ? v.symbol : plan::DimSymbol::None,
                           staticElements(v.dims));
    l.inputs = {o};
    l.outputs = {copy};
    o = copy;
    return true;
  }

  int32_t scratch(plan::DimSymbol symbol, int64_t elemsPerCount) {
    out.scratch.push_back({symbol, elemsPerCount});
    return int32_t(out.scratch.size()) - 1;
  }

  Status step(int32_t i) {
    const plan::Step &s = plan.steps[size_t(i)];
    std::string where = s.kind + " at " + s.name;
    std::string why;
    if (s.kind == "reshape" || s.kind == "slice")
      return Status::ok(); // views, resolved where they are read
    // The operands the launches read without asking (a plan from a file
    // was checked by readPlan; this guards plans made in memory).
    static const std::map<std::string, size_t> required = {
        {"rotary", 2},   {"embedding", 2},      {"gather_rows", 2},
        {"cast", 1},     {"linear", 2},         {"gated_mlp", 4},
        {"kv_write", 4}, {"paged_attention", 5}};
    if (auto it = required.find(s.kind); it != required.end()) {
      bool ok = s.operands.size() >= it->second &&
                (s.kind == "kv_write" || s.results.size() == 1);
      for (size_t o = 0; ok && o < it->second; ++o)
        ok = s.operands[o] >= 0 && size_t(s.operands[o]) < plan.values.size();
      if (!ok)
        return Status::invalidArgument(
            where + ": a " + s.kind + " step needs " +
            std::to_string(it->second) + " operands" +
            (s.kind == "kv_write" ? "" : " and one result"));
    }
    if (s.kind == "kv_write" || s.kind == "paged_attention")
      return attention(i, where);
    if (s.kind == "rotary") {
      const plan::ValueInfo &x = plan.values[size_t(s.operands[0])];
      if (x.dims.size() != 3) {
        incomplete(i, "a [B, H, S, D] layout");
        return Status::ok();
      }
      cuda::RotarySpec spec;
      spec.headDim = int(x.dims[2]);
      spec.numHeads = int(x.dims[1]);
      spec.rotaryDim = int(s.getInt("rotary_dim", spec.headDim));
      spec.interleaved = s.getString("style", "half_split") == "interleaved";
      if (Status st = check(cuda::validate(spec), where); !st)
        return st;
      LaunchOperand xo, pos, table;
      if (!d.resolve(s.operands[0], xo, why) ||
          (xo.stride != 0 && xo.rowElems != x.dims[1] * x.dims[2] &&
           !materialize(i, s.operands[0], xo, why)) ||
          !d.contiguous(s.operands[1], pos, why) ||
          !optional(s, 2, table, why)) {
        incomplete(i, why);
        return Status::ok();
      }
      if (plan.values[size_t(s.operands[1])].type != ElemType::I64) {
        incomplete(i, "positions other than i64");
        return Status::ok();
      }
      PlanLaunch &l = add(cuda::kernelName(spec), spec, i, {i});
      l.inputs = {xo, pos, table};
      l.outputs = {result(i)};
      return Status::ok();
    }
    if (s.kind == "embedding" || s.kind == "gather_rows") {
      bool embedding = s.kind == "embedding";
      // A tied table may be stored as its lm_head's packing (read from the
      // blob through `weight`, no table operand).
      const plan::StoredWeight *stored =
          embedding ? plan.findStoredWeight(int32_t(i), 0) : nullptr;
      cuda::GatherSpec spec;
      spec.embedding = embedding;
      if (stored) {
        if (!storedDType(*stored, spec.tableType, spec.groupSize)) {
          incomplete(i, "a stored table of another dtype");
          return Status::ok();
        }
        spec.dim = int(stored->k);
      } else {
        const plan::ValueInfo &table = plan.values[size_t(s.operands[0])];
        spec.tableType = table.type == ElemType::BF16  ? cpu::DType::BF16
                         : table.type == ElemType::F16 ? cpu::DType::F16
                                                       : cpu::DType::F32;
        if (table.dims.size() != 2 || table.dims[1] <= 0 ||
            (table.type != ElemType::F32 && table.type != ElemType::BF16 &&
             table.type != ElemType::F16)) {
          incomplete(i, "a table other than [rows, dim] of f32, bf16 or f16");
          return Status::ok();
        }
        spec.dim = int(table.dims[1]);
      }
      ElemType idType = plan.values[size_t(s.operands[1])].type;
      if (idType != (embedding ? ElemType::I64 : ElemType::I32)) {
        incomplete(i, embedding ? "ids other than i64"
                                : "indices other than "
                                  "i32");
        return Status::ok();
      }
      spec.threads = rowThreads(spec.dim);
      if (Status st = check(cuda::validate(spec), where); !st)
        return st;
      LaunchOperand t, ids;
      if ((!stored && !d.contiguous(s.operands[0], t, why)) ||
          !d.contiguous(s.operands[1], ids, why)) {
        incomplete(i, why);
        return Status::ok();
      }
      PlanLaunch &l = add(cuda::kernelName(spec), spec, i, {i});
      l.inputs = {t, ids};
      l.outputs = {result(i)};
      if (stored)
        l.weight = int32_t(stored - plan.weights.data());
      return Status::ok();
    }
    if (s.kind == "cast") {
      auto castType = [](ElemType t, cuda::CastType &o) {
        switch (t) {
        case ElemType::F32:
          o = cuda::CastType::F32;
          return true;
        case ElemType::F16:
          o = cuda::CastType::F16;
          return true;
        case ElemType::BF16:
          o = cuda::CastType::BF16;
          return true;
        case ElemType::I32:
          o = cuda::CastType::I32;
          return true;
        case ElemType::I64:
          o = cuda::CastType::I64;
          return true;
        default:
          return false;
        }
      };
      cuda::CastSpec spec;
      LaunchOperand in;
      if (s.operands.empty() || s.results.empty() ||
          !castType(plan.values[size_t(s.operands[0])].type, spec.from) ||
          !castType(plan.values[size_t(s.results[0])].type, spec.to) ||
          !cuda::validate(spec).ok()) {
        incomplete(i, "a cast between an integer and a float type");
        return Status::ok();
      }
      if (!d.contiguous(s.operands[0], in, why)) {
        incomplete(i, why);
        return Status::ok();
      }
      PlanLaunch &l = add(cuda::kernelName(spec), spec, i, {i});
      l.inputs = {in};
      l.outputs = {result(i)};
      return Status::ok();
    }
    if (s.kind == "linear") {
      cuda::LinearSpec spec;
      int32_t w = linearSpecFor(plan, i, 1, 1, spec);
      LaunchOperand x, bias;
      if (w < 0) {
        incomplete(i, "a weight not stored packed (folioc --weight-dtype)");
        return Status::ok();
      }
      if (!materialize(i, s.operands[0], x, why) ||
          !optional(s, 2, bias, why)) {
        incomplete(i, why);
        return Status::ok();
      }
      if (Status st = check(cuda::validate(spec), where); !st)
        return st;
      const plan::ValueInfo &xv = plan.values[size_t(s.operands[0])];
      linear(i, spec, w, x, bias, result(i), xv.symbol,
             staticElements(xv.dims));
      return Status::ok();
    }
    if (s.kind == "gated_mlp")
      return gatedMlp(i, where);
    // A norm or elementwise step inside a fused kernel (the final norm of
    // gather_rows_linear, say): a row program of that step alone.
    plan::Kernel one;
    one.kind = s.kind;
    one.firstStep = i;
    one.numSteps = 1;
    one.outputs = s.results;
    cuda::RowKernelSpec spec;
    std::vector<LaunchOperand> inputs;
    if (!rowProgram(one, spec, inputs, why)) {
      incomplete(i, why);
      return Status::ok();
    }
    return addRow(spec, inputs, one.outputs, i, i + 1);
  }

  /// Gate and up stacked in one GEMM into scratch, the gated activation
  /// into a second scratch, then down into the result.
  Status gatedMlp(int32_t i, const std::string &where) {
    const plan::Step &s = plan.steps[size_t(i)];
    std::string why;
    cuda::LinearSpec gateUp, downProj;
    int32_t wGateUp = linearSpecFor(plan, i, 1, 2, gateUp);
    int32_t wDown = linearSpecFor(plan, i, 3, 1, downProj);
    std::string act = s.getString("activation", "silu");
    const char *fn = act == "silu"        ? "silu"
                     : act == "gelu"      ? "gelu_erf"
                     : act == "gelu_tanh" ? "gelu_tanh"
                                          : nullptr;
    if (wGateUp < 0 || wDown < 0) {
      incomplete(i, "a weight not stored packed (folioc --weight-dtype)");
      return Status::ok();
    }
    if (!fn) {
      incomplete(i, "activation '" + act + "'");
      return Status::ok();
    }
    const plan::StoredWeight &gu = plan.weights[size_t(wGateUp)];
    const plan::StoredWeight &dn = plan.weights[size_t(wDown)];
    const plan::ValueInfo &x = plan.values[size_t(s.operands[0])];
    int64_t inter = gu.n / 2;
    if (gu.n % 2 != 0 || dn.k != inter || x.dims.empty() ||
        x.dims.back() != gu.k) {
      return Status::invalidArgument(
          where + ": its stored gate/up weight [" + std::to_string(gu.n) +
          ", " + std::to_string(gu.k) + "] and down weight [" +
          std::to_string(dn.n) + ", " + std::to_string(dn.k) +
          "] do not make a gated MLP of its input");
    }
    LaunchOperand in;
    if (!materialize(i, s.operands[0], in, why)) {
      incomplete(i, why);
      return Status::ok();
    }
    for (const cuda::LinearSpec &spec : {gateUp, downProj})
      if (Status st = check(cuda::validate(spec), where); !st)
        return st;
    // Rows of the input per count of its symbol.
    int64_t rowsPer = staticElements(x.dims) / x.dims.back();
    int32_t both = scratch(x.symbol, rowsPer * gu.n);
    int32_t gated = scratch(x.symbol, rowsPer * inter);

    LaunchOperand bothOut;
    bothOut.scratch = both;
    linear(i, gateUp, wGateUp, in, LaunchOperand{}, bothOut, x.symbol,
           staticElements(x.dims));

    cuda::RowKernelSpec spec;
    spec.label = "gated_" + std::string(fn);
    spec.dim = int(inter);
    spec.threads = rowThreads(spec.dim);
    spec.inputs = {cuda::RowInputKind::Row, cuda::RowInputKind::Row};
    cuda::RowOp gate, up, f, mul, store;
    gate.kind = up.kind = cuda::RowOpKind::Input;
    gate.index = 0;
    up.index = 1;
    f.kind = cuda::RowOpKind::Unary;
    f.fn = fn;
    f.a = 0;
    mul.kind = cuda::RowOpKind::Binary;
    mul.fn = "mul";
    mul.a = 2;
    mul.b = 1;
    store.kind = cuda::RowOpKind::Output;
    store.a = 3;
    store.index = 0;
    spec.ops = {gate, up, f, mul, store};
    spec.numOutputs = 1;
    if (Status st = check(cuda::validate(spec), where); !st)
      return st;
    PlanLaunch &r = add(cuda::kernelName(spec), spec, i, {i});
    LaunchOperand g = bothOut, u = bothOut, o;
    g.stride = u.stride = gu.n;
    g.rowElems = u.rowElems = inter;
    u.offset = inter;
    o.scratch = gated;
    r.inputs = {g, u};
    r.outputs = {o};

    linear(i, downProj, wDown, o, LaunchOperand{}, result(i), x.symbol,
           rowsPer * inter);
    return Status::ok();
  }

  /// A linear launch over stored weight `weight`; for 16-bit weights,
  /// first the cast of its input to their type into scratch (x has
  /// `xElemsPerCount` elements per count of `symbol`), for the executor to
  /// take cuBLASLt's GEMM instead where a batch has more rows than one pass;
  /// for 8- and 4-bit weights, the cast to bf16 and the weight's
  /// dequantization to bf16 (LaunchRole).
  void linear(int32_t i, const cuda::LinearSpec &spec, int32_t weight,
              const LaunchOperand &x, const LaunchOperand &bias,
              const LaunchOperand &y, plan::DimSymbol symbol,
              int64_t xElemsPerCount) {
    const bool quantized = spec.weightType == cpu::DType::I8 ||
                           spec.weightType == cpu::DType::FP8E4M3 ||
                           spec.weightType == cpu::DType::I4;
    if (spec.weightType == cpu::DType::FP8E4M3 && !bias.present()) {
      // cuBLASLt's fp8 GEMM has no bias epilogue with an f32 output.
      cuda::LinearSpec quant;
      quant.weightType = cpu::DType::FP8E4M3;
      quant.k = spec.k;
      quant.quantizeXToFp8 = true;
      quant.threads = 256;
      LaunchOperand codes, scales;
      codes.scratch = scratch(symbol, (xElemsPerCount + 3) / 4); // bytes
      scales.scratch = scratch(symbol, xElemsPerCount / spec.k);
      PlanLaunch &q = add(cuda::kernelName(quant), quant, i, {i});
      q.role = LaunchRole::CublasFp8Input;
      q.inputs = {x};
      q.outputs = {codes, scales};
    }
    if (quantized || spec.weightType == cpu::DType::BF16 ||
        spec.weightType == cpu::DType::F16) {
      cuda::CastSpec cast{cuda::CastType::F32,
                          spec.weightType == cpu::DType::F16
                              ? cuda::CastType::F16
                              : cuda::CastType::BF16};
      LaunchOperand x16;
      x16.scratch = scratch(symbol, xElemsPerCount);
      PlanLaunch &c = add(cuda::kernelName(cast), cast, i, {i});
      c.role = LaunchRole::CublasInput;
      c.inputs = {x};
      c.outputs = {x16};
    }
    if (quantized) {
      cuda::LinearSpec dequant = spec;
      dequant.dequantToBf16 = true;
      dequant.threads = 256;
      PlanLaunch &d = add(cuda::kernelName(dequant), dequant, i, {i});
      d.role = LaunchRole::CublasWeight;
      d.weight = weight;
    }
    PlanLaunch &l = add(cuda::kernelName(spec), spec, i, {i});
    l.inputs = {x, bias};
    l.outputs = {y};
    l.weight = weight;
  }

  /// kv_write, or paged_attention's decode (main and combine) and prefill
  /// kernels.
  Status attention(int32_t i, const std::string &where) {
    const plan::Step &s = plan.steps[size_t(i)];
    bool write = s.kind == "kv_write";
    size_t cacheOperand = write ? 0 : 1;
    if (s.operands.size() <= cacheOperand || s.operands[cacheOperand] < 0)
      return Status::invalidArgument(where + " has no KV-cache operand");
    int32_t cacheValue = s.operands[cacheOperand];
    const plan::ValueInfo &cache = plan.values[size_t(cacheValue)];
    cpu::DType type;
    int group;
    if (Status st = cudaCacheFormat(cache, where, type, group); !st)
      return st;
    LaunchOperand cacheOp;
    cacheOp.value = cacheOp.view = cacheValue;
    std::string why;
    // The static scales (fp8): operands 4 and 5 of kv_write, 5 and 6 of
    // paged_attention.
    size_t scaleOperand = write ? 4 : 5;
    LaunchOperand kScale, vScale;
    if (!optional(s, scaleOperand, kScale, why) ||
        !optional(s, scaleOperand + 1, vScale, why))
      return Status::invalidArgument(where + ": its scales are " + why);
    if (write) {
      cuda::KVWriteSpec spec{type, int(cache.headDim), int(cache.kvHeads),
                             group};
      if (Status st = check(cuda::validate(spec), where); !st)
        return st;
      LaunchOperand kOp, vOp, slots;
      int64_t row = cache.kvHeads * cache.headDim;
      if (!d.resolve(s.operands[1], kOp, why) ||
          !d.resolve(s.operands[2], vOp, why) ||
          !d.contiguous(s.operands[3], slots, why)) {
        incomplete(i, why);
        return Status::ok();
      }
      for (auto [o, operand] : {std::pair{&kOp, 1}, std::pair{&vOp, 2}})
        if (o->stride != 0 && o->rowElems != row &&
            !materialize(i, s.operands[size_t(operand)], *o, why)) {
          incomplete(i, why);
          return Status::ok();
        }
      PlanLaunch &l = add(cuda::kernelName(spec), spec, i, {i});
      l.inputs = {kOp, vOp, slots, cacheOp, kScale, vScale};
      return Status::ok();
    }
    const plan::ValueInfo &q = plan.values[size_t(s.operands[0])];
    int64_t heads = q.dims.size() == 3 ? q.dims[1] : 0;
    if (heads <= 0 || cache.kvHeads <= 0 || heads % cache.kvHeads != 0)
      return Status::invalidArgument(
          where +
          ": its query must be [tokens, heads, head_dim] with heads "
          "a multiple of the cache's " +
          std::to_string(cache.kvHeads) + " kv heads");
    if (s.getInt("causal", 1) != 1) {
      incomplete(i, "non-causal attention");
      return Status::ok();
    }
    cuda::PagedDecodeSpec spec;
    spec.cacheType = type;
    spec.headDim = int(cache.headDim);
    spec.blockSize = int(cache.blockSize);
    spec.numKvHeads = int(cache.kvHeads);
    spec.queriesPerKv = int(heads / cache.kvHeads);
    spec.group = group;
    if (Status st = check(cuda::validate(spec), where); !st)
      return st;
    LaunchOperand qOp, tables, lens, starts;
    if (!materialize(i, s.operands[0], qOp, why) ||
        !d.contiguous(s.operands[2], tables, why) ||
        !d.contiguous(s.operands[3], lens, why) ||
        !d.contiguous(s.operands[4], starts, why)) {
      incomplete(i, why);
      return Status::ok();
    }
    std::vector<LaunchOperand> inputs = {qOp,    cacheOp, tables, lens,
                                         starts, kScale,  vScale};
    LaunchOperand outOp = result(i);
    PlanLaunch &m = add(cuda::kernelName(spec), spec, i, {i});
    m.role = LaunchRole::DecodeMain;
    m.inputs = inputs;
    m.outputs = {outOp};
    PlanLaunch &c = add(cuda::combineKernelName(spec),
                        cuda::PagedDecodeCombineSpec{spec}, i, {i});
    c.role = LaunchRole::DecodeCombine;
    c.inputs = inputs;
    c.outputs = {outOp};
    cuda::PagedPrefillSpec prefill = cuda::defaultPagedPrefillSpec(
        type, spec.headDim, spec.blockSize, spec.numKvHeads, spec.queriesPerKv,
        group, bf16Products(plan));
    if (cuda::validate(prefill).ok()) { // else decode serves every batch
      PlanLaunch &p = add(cuda::kernelName(prefill), prefill, i, {i});
      p.role = LaunchRole::Prefill;
      p.inputs = inputs;
      p.outputs = {outOp};
    }
    return Status::ok();
  }

  PlanViews &d;
  const plan::Plan &plan;
  const plan::Kernel &k;
  KernelLaunches &out;
};

} // namespace

Status planLaunches(const plan::Plan &plan, PlanLaunches &out) {
  out = PlanLaunches();
  PlanViews d(plan);
  std::set<std::string> missing;
  for (const plan::Kernel &k : plan.kernels) {
    KernelLaunches kl;
    if (Status s = KernelDeriver(d, k, kl).run(); !s)
      return s;
    if (!kl.complete && missing.insert(k.kind).second)
      out.notGenerated.push_back(k.kind);
    // What the kernel computes exists for the later ones, which may still
    // be generated (an executor refuses the plan on this one).
    if (!kl.complete)
      for (int32_t v : k.outputs)
        d.markWritten(v);
    out.kernels.push_back(std::move(kl));
  }
  for (int32_t v : plan.outputs) {
    LaunchOperand o;
    std::string why;
    if (!d.contiguous(v, o, why)) {
      o = LaunchOperand{};
      if (out.outputsWhy.empty())
        out.outputsWhy = "output value " + std::to_string(v) + ": " + why;
    }
    out.outputs.push_back(o);
  }
  // Sampling over the logits rows (the vocabulary is an argument): greedy,
  // temperature / min-p / top-k / top-p, the verification of one-hot
  // drafts, and the penalties before a draw, after the step that writes
  // them.
  int32_t logitsStep = -1;
  if (!plan.outputs.empty())
    for (size_t i = 0; i < plan.steps.size(); ++i)
      for (int32_t r : plan.steps[i].results)
        if (r == plan.outputs[0])
          logitsStep = int32_t(i);
  for (const cuda::SampleSpec &spec :
       {cuda::SampleSpec{cuda::SampleMode::Greedy, 256},
        cuda::SampleSpec{cuda::SampleMode::Draw, 256},
        cuda::SampleSpec{cuda::SampleMode::Verify, 256},
        cuda::SampleSpec{cuda::SampleMode::Penalize, 256},
        cuda::SampleSpec{cuda::SampleMode::Logprobs, 256}}) {
    if (Status s = check(cuda::validate(spec), "sampling"); !s)
      return s;
    PlanLaunch l;
    l.name = cuda::kernelName(spec);
    l.spec = spec;
    if (logitsStep >= 0)
      l.steps = {logitsStep};
    out.samplers.push_back(std::move(l));
  }
  return Status::ok();
}

} // namespace folio::device
