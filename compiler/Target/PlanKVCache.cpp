//===- PlanKVCache.cpp - The KV-cache dtype a compiled plan uses ----------===//

#include "compiler/Target/PlanKVCache.h"

#include "compiler/Target/Target.h"

namespace folio {

std::string planKVCacheDType(const plan::Plan &plan) {
  int64_t recorded = plan.configValue("kv_cache_dtype", -1);
  if (recorded > int64_t(KVCacheDType::Auto) &&
      recorded <= int64_t(KVCacheDType::Int2))
    return std::string(kvCacheDTypeName(static_cast<KVCacheDType>(recorded)));
  std::string all16, quantized;
  for (const plan::Argument &a : plan.inputs) {
    const plan::ValueInfo &v = plan.values[size_t(a.value)];
    if (v.kind != plan::ValueInfo::Kind::KVCache)
      continue;
    std::string name = plan::elemTypeName(v.type);
    // Layers kept at 16 bits (--kv-cache-dtype-skip-layers) are bf16 in an
    // otherwise quantized plan.
    (name == "bf16" ? all16 : quantized) = name;
  }
  return quantized.empty() ? all16 : quantized;
}

Status checkPlanKVCacheDType(const plan::Plan &plan, const std::string &path,
                             const std::string &requested) {
  if (requested == "auto")
    return Status::ok();
  std::string compiled = planKVCacheDType(plan);
  if (compiled == requested)
    return Status::ok();
  return Status::invalidArgument(
      "--kv-cache-dtype " + requested + ": '" + path + "' was compiled with " +
      compiled + " KV caches; a plan's cache dtype is fixed when it is " +
      "compiled (recompile with folioc --kv-cache-dtype=" + requested +
      ", or pass the .onnx model)");
}

Status checkPlanBlockSize(const plan::Plan &plan, const std::string &path,
                          int64_t requested) {
  int64_t compiled = plan.configValue("block_size", 16);
  if (requested == 0 || requested == compiled)
    return Status::ok();
  return Status::invalidArgument(
      "--block-size " + std::to_string(requested) + ": '" + path +
      "' was compiled with KV blocks of " + std::to_string(compiled) +
      " tokens; a plan's block size is fixed when it is compiled (recompile "
      "with folioc --block-size=" +
      std::to_string(requested) + ", or pass the .onnx model)");
}

} // namespace folio
