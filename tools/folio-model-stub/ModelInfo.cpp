//===- ModelInfo.cpp - What a model binary says about its model -----------===//

#include "tools/folio-model-stub/ModelInfo.h"

#include "compiler/Target/PlanKVCache.h"
#include "tools/common/EngineFlags.h"

#include <cstdio>

namespace folio::tools {

std::string describeModelConfig(const plan::Plan &plan) {
  int64_t layers = 0, kvHeads = 0, headDim = 0, heads = 0;
  for (const plan::Argument &a : plan.inputs) {
    const plan::ValueInfo &v = plan.values[size_t(a.value)];
    if (v.kind != plan::ValueInfo::Kind::KVCache)
      continue;
    ++layers;
    kvHeads = v.kvHeads;
    headDim = v.headDim;
  }
  // The query heads: dim 1 of the first attention's q [T, heads, head_dim].
  for (const plan::Step &s : plan.steps) {
    if (s.kind != "paged_attention" || s.operands.empty() || s.operands[0] < 0)
      continue;
    const plan::ValueInfo &q = plan.values[size_t(s.operands[0])];
    if (q.dims.size() == 3)
      heads = q.dims[1];
    break;
  }
  std::string out;
  auto line = [&](const char *key, const std::string &value) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "  %-16s ", key);
    out += buf + value + "\n";
  };
  auto number = [&](const char *key, int64_t v) {
    line(key, v > 0 ? std::to_string(v) : std::string("not recorded"));
  };
  number("vocab", plan.configValue("vocab", 0));
  number("layers", layers);
  number("heads", heads);
  number("kv_heads", kvHeads);
  number("head_dim", headDim);
  number("block_size", plan.configValue("block_size", 0));
  number("max_positions", plan.configValue("max_positions", 0));
  if (int64_t maxContext = plan.configValue("max_context", 0))
    number("max_context", maxContext);
  line("max_model_len", std::to_string(modelLengthLimit(plan)) +
                            " (the default --max-model-len)");
  line("kv_cache_dtype", planKVCacheDType(plan));
  char mib[32];
  std::snprintf(mib, sizeof(mib), "%.1f MiB",
                double(plan.blob.size()) / (1 << 20));
  line("weights", std::string(mib) + " (mapped from this file)");
  return out;
}

} // namespace folio::tools
