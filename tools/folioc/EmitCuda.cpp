//===- EmitCuda.cpp - folioc --emit=cuda
//-----------------------------------===//

#include "tools/folioc/EmitCuda.h"

#include "codegen/CUDA/Emitter.h"

#include <filesystem>
#include <fstream>
#include <set>

namespace folio::tools {

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

Status emitCudaKernels(const plan::Plan &plan, const std::string &arch,
                       const std::string &dir, EmitCudaResult &result) {
  if (!cuda::isSupportedArch(arch)) {
    std::string list;
    for (const std::string &a : cuda::supportedArchs())
      list += (list.empty() ? "" : ", ") + a;
    return Status::invalidArgument("--emit=cuda: --target=" + arch +
                                   " is not a GPU target; supported: " + list);
  }
  std::vector<cuda::GeneratedKernel> kernels;
  std::set<std::string> names, covered;
  auto add = [&](const cuda::GeneratedKernel &k) {
    if (names.insert(k.name).second)
      kernels.push_back(k);
  };
  for (const plan::Step &step : plan.steps) {
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
        add(k);
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
        add(main);
        add(combine);
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
      result.notGenerated.push_back(k.kind);
  }

  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Status::invalidArgument("--emit=cuda: cannot create directory '" +
                                   dir + "': " + ec.message());
  for (const cuda::GeneratedKernel &k : kernels) {
    std::string file = k.name + ".cu";
    std::filesystem::path path = std::filesystem::path(dir) / file;
    std::filesystem::path tmp = path;
    tmp += ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary);
      out << "// Target: " << arch
          << " (compile with --gpu-architecture=" << arch << " --std=c++17)\n"
          << k.source;
      if (!out.good())
        return Status::invalidArgument("--emit=cuda: cannot write '" +
                                       tmp.string() + "'");
    }
    std::filesystem::rename(tmp, path, ec); // atomic: no half-written file
    if (ec)
      return Status::invalidArgument("--emit=cuda: cannot write '" +
                                     path.string() + "': " + ec.message());
    result.files.push_back(file);
  }
  return Status::ok();
}

} // namespace folio::tools
