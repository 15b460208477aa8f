//===- PlanKVCache.h - The KV-cache dtype a compiled plan uses --*- C++ -*-===//
//
// What `--kv-cache-dtype` a plan was compiled with, read from the plan
// alone, so that the compiler, the serving tools and a model binary name it
// the same way without linking MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TARGET_PLANKVCACHE_H
#define FOLIO_TARGET_PLANKVCACHE_H

#include "runtime/Plan/Plan.h"
#include "runtime/Support/Status.h"

#include <string>

namespace folio {

/// The cache dtype's name (`int8`, `fp8_e4m3`, ...): the config's
/// `kv_cache_dtype` when the compiler recorded it, else the element type of
/// the plan's KV-cache inputs (a quantized one over the bf16 of layers kept
/// at 16 bits); empty for a plan without a KV cache.
std::string planKVCacheDType(const plan::Plan &plan);

/// Refuses a requested cache dtype other than `auto` that `plan` (read from
/// `path`) was not compiled with, saying how to get it.
Status checkPlanKVCacheDType(const plan::Plan &plan, const std::string &path,
                             const std::string &requested);

/// Refuses a requested KV block size (`--block-size`; 0: none asked for)
/// other than the one `plan` (read from `path`) was compiled with.
Status checkPlanBlockSize(const plan::Plan &plan, const std::string &path,
                          int64_t requested);

} // namespace folio

#endif // FOLIO_TARGET_PLANKVCACHE_H
