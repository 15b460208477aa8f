//===- CudaKernels.cpp - A plan's CUDA kernels, generated and embedded ----===//

#include "compiler/Plan/CudaKernels.h"
#include "compiler/Plan/CudaRowKernels.h"

#include "runtime/Plan/PlanIO.h"

#include <algorithm>
#include <map>
#include <set>

namespace folio::compiler {

namespace {

using plan::ElemType;
using KVScale = plan::ValueInfo::KVScale;

/// The cache format of a plan's KV-cache value, as the CUDA specs name it
/// (the CPU executor reads plans the same way).
Status cacheFormat(const plan::ValueInfo &v, const std::string &where,
                   cpu::DType &type, int &group) {
  group = 0;
  switch (v.type) {
  case ElemType::F32:
    type = cpu::DType::F32;
    return Status::ok();
  case ElemType::F16:
    type = cpu::DType::F16;
    return Status::ok();
  case ElemType::BF16:
    type = cpu::DType::BF16;
    return Status::ok();
  case ElemType::F8E4M3:
  case ElemType::F8E5M2:
    type =
        v.type == ElemType::F8E4M3 ? cpu::DType::FP8E4M3 : cpu::DType::FP8E5M2;
    if (v.kvScale != KVScale::PerHead)
      return Status::invalidArgument(
          where +
          ": the CUDA kernels take fp8 caches with per-head static "
          "scales only, not " +
          kvScaleName(v.kvScale));
    return Status::ok();
  case ElemType::I8:
    type = cpu::DType::I8;
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
    type = cpu::DType::I4;
    group = int(v.kvGroup);
    if (v.kvScale != KVScale::PerTokenGroup)
      return Status::invalidArgument(
          where +
          ": the CUDA kernels take int4 caches with per_token_group "
          "scales only, not " +
          kvScaleName(v.kvScale));
    return Status::ok();
  case ElemType::I2:
    type = cpu::DType::I2; // refused by the emitter, with the list
    group = int(v.kvGroup);
    return Status::ok();
  default:
    return Status::invalidArgument(where + ": a " + elemTypeName(v.type) +
                                   " value is not a KV cache");
  }
}

} // namespace

Status collectCudaKernels(const plan::Plan &plan, PlanCudaKernels &out) {
  std::map<std::string, size_t> byName;
  std::set<std::string> covered;
  auto add = [&](const cuda::GeneratedKernel &k, int32_t step,
                 const cuda::AnyKernelSpec &spec) {
    auto [it, inserted] = byName.emplace(k.name, out.kernels.size());
    if (inserted)
      out.kernels.push_back({k, {}, spec});
    out.kernels[it->second].steps.push_back(step);
  };
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const plan::Step &step = plan.steps[i];
    if (step.kind != "kv_write" && step.kind != "paged_attention")
      continue;
    covered.insert(step.kind);
    bool write = step.kind == "kv_write";
    std::string where = step.kind + " at " + step.name;
    size_t cacheOperand = write ? 0 : 1;
    if (step.operands.size() <= cacheOperand || step.operands[cacheOperand] < 0)
      return Status::invalidArgument(where + " has no KV-cache operand");
    const plan::ValueInfo &cache = plan.values[step.operands[cacheOperand]];
    cpu::DType type;
    int group;
    if (Status s = cacheFormat(cache, where, type, group); !s)
      return s;
    cpu::Status st = cpu::Status::success();
    if (write) {
      cuda::KVWriteSpec spec{type, int(cache.headDim), int(cache.kvHeads),
                             group};
      cuda::GeneratedKernel k;
      st = cuda::emitKVWrite(spec, k);
      if (st.ok())
        add(k, int32_t(i), spec);
    } else {
      const plan::ValueInfo &q = plan.values[step.operands[0]];
      int64_t heads = q.dims.size() == 3 ? q.dims[1] : 0;
      if (heads <= 0 || cache.kvHeads <= 0 || heads % cache.kvHeads != 0)
        return Status::invalidArgument(
            where +
            ": its query must be [tokens, heads, head_dim] with heads "
            "a multiple of the cache's " +
            std::to_string(cache.kvHeads) + " kv heads");
      cuda::PagedDecodeSpec spec;
      spec.cacheType = type;
      spec.headDim = int(cache.headDim);
      spec.blockSize = int(cache.blockSize);
      spec.numKvHeads = int(cache.kvHeads);
      spec.queriesPerKv = int(heads / cache.kvHeads);
      spec.group = group;
      cuda::GeneratedKernel main, combine;
      st = cuda::emitPagedDecode(spec, main, combine);
      if (st.ok()) {
        add(main, int32_t(i), spec);
        add(combine, int32_t(i), cuda::PagedDecodeCombineSpec{spec});
      }
    }
    if (!st.ok())
      return Status::invalidArgument(where + ": " + st.message());
  }
  std::set<std::string> missing;
  for (const plan::Kernel &k : plan.kernels) {
    bool generated = false;
    for (int32_t i = k.firstStep; i < k.firstStep + k.numSteps; ++i)
      generated |= covered.count(plan.steps[size_t(i)].kind) > 0;
    if (!generated && missing.insert(k.kind).second)
      out.notGenerated.push_back(k.kind);
  }
  return Status::ok();
}

Status collectAllCudaKernels(const plan::Plan &plan,
                             std::vector<PlannedCudaKernel> &kernels,
                             std::vector<std::string> &notGenerated) {
  PlanCudaKernels attention;
  if (Status s = collectCudaKernels(plan, attention); !s)
    return s;
  PlanCudaRowKernels rows;
  if (Status s = collectCudaRowKernels(plan, rows); !s)
    return s;
  auto in = [](const std::vector<std::string> &v, const std::string &x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  // A kind is missing if either collector misses a part of it.
  for (const std::string &kind : attention.notGenerated)
    if (!in(rows.generatedKinds, kind) && !in(notGenerated, kind))
      notGenerated.push_back(kind);
  for (const std::string &kind : rows.notGenerated)
    if (!in(notGenerated, kind))
      notGenerated.push_back(kind);
  kernels = std::move(attention.kernels);
  for (PlannedCudaKernel &k : rows.kernels)
    kernels.push_back(std::move(k));
  return Status::ok();
}

Status embedCudaKernels(plan::Plan &plan, const std::string &arch,
                        const cuda::KernelCacheOptions &cache,
                        std::vector<EmbeddedCudaKernel> &embedded,
                        std::vector<std::string> &notGenerated) {
  if (!cuda::isSupportedArch(arch)) {
    std::string list;
    for (const std::string &a : cuda::supportedArchs())
      list += (list.empty() ? "" : ", ") + a;
    return Status::invalidArgument("--target=" + arch +
                                   " is not a GPU target; supported: " + list);
  }
  if (!cuda::nvrtcAvailable())
    return Status::invalidArgument(
        "--target=" + arch +
        " embeds CUDA kernels compiled by NVRTC in the plan, but this build "
        "has no CUDA toolkit (configure with FOLIO_ENABLE_CUDA=ON and the "
        "toolkit installed, or compile for --target=cpu)");
  std::vector<PlannedCudaKernel> kernels;
  if (Status s = collectAllCudaKernels(plan, kernels, notGenerated); !s)
    return s;
  for (const PlannedCudaKernel &pk : kernels) {
    if (pk.steps.empty())
      continue; // a sampler: see the declaration
    const cuda::GeneratedKernel &g = pk.kernel;
    cuda::CompiledKernel c;
    cuda::CacheOutcome outcome;
    cpu::Status st = cuda::compileKernelCached(g.name, g.key, g.source, arch,
                                               cache, c, &outcome);
    if (!st.ok())
      return Status::invalidArgument(st.message());
    plan::DeviceKernel dk;
    dk.name = g.name;
    dk.key = g.key;
    dk.arch = arch;
    dk.steps = pk.steps;
    dk.cubinBytes = c.cubin.size();
    dk.cubinOffset = plan.blob.append(c.cubin.data(), dk.cubinBytes);
    dk.cubinHash = plan::planHash(c.cubin.data(), dk.cubinBytes);
    std::string ptx = c.ptx + '\0';
    dk.ptxBytes = ptx.size();
    dk.ptxOffset = plan.blob.append(ptx.data(), dk.ptxBytes);
    dk.ptxHash = plan::planHash(ptx.data(), dk.ptxBytes);
    dk.registers = c.registers;
    dk.spillStoreBytes = c.spillStoreBytes;
    dk.spillLoadBytes = c.spillLoadBytes;
    dk.stackFrameBytes = c.stackFrameBytes;
    dk.sharedBytes = c.sharedBytes;
    plan.deviceKernels.push_back(std::move(dk));
    embedded.push_back({g.name, outcome});
  }
  return Status::ok();
}

} // namespace folio::compiler
