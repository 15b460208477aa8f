//===- Pipelines.h - The folio compile pipeline -----------------*- C++ -*-===//

#ifndef FOLIO_PIPELINES_PIPELINES_H
#define FOLIO_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <optional>

namespace mlir::folio {

/// What `folioc` and `folio-opt --folio-compile` take from the user.
struct FolioPipelineOptions : public PassPipelineOptions<FolioPipelineOptions> {
  Option<std::string> target{
      *this, "target",
      llvm::cl::desc("Compile target: cpu, sm_80, sm_86, sm_89, sm_90a"),
      llvm::cl::init("cpu")};
  Option<std::string> kvCacheDtype{
      *this, "kv-cache-dtype",
      llvm::cl::desc("KV-cache dtype: auto (fp8_e4m3 on sm_89/sm_90a, int8 "
                     "elsewhere), f32, f16, bf16, fp8_e4m3, fp8_e5m2, int8, "
                     "int4, int2"),
      llvm::cl::init("auto")};
  Option<int64_t> blockSize{
      *this, "block-size",
      llvm::cl::desc("KV-cache block size in tokens (power of two, 1..256); "
                     "0: 16, or 32 for int2 caches"),
      llvm::cl::init(0)};
  ListOption<int64_t> kvCacheSkipLayers{
      *this, "kv-cache-dtype-skip-layers",
      llvm::cl::desc("Layers whose KV caches stay at 16 bits (bf16) when the "
                     "KV-cache dtype is quantized")};
  Option<int64_t> kvCacheGroupSize{
      *this, "kv-cache-group-size",
      llvm::cl::desc("Elements per scale group of an int4 KV cache (even, "
                     "divides head_dim) or per value group of an int2 one "
                     "(divides head_dim); 0: the largest even divisor of "
                     "head_dim up to 32"),
      llvm::cl::init(0)};
  Option<int64_t> kvCacheResidual{
      *this, "kv-cache-residual",
      llvm::cl::desc("Tokens per sequence an int2 (KIVI) KV cache keeps in "
                     "full precision (a positive multiple of the block "
                     "size); 0: 128 rounded up to a multiple of the block "
                     "size"),
      llvm::cl::init(0)};
};

/// The points `folioc --stop-after` can stop at.
enum class FolioPhase { Import, Raise, PageKV, Lower, Fuse, Compile };
std::optional<FolioPhase> parseFolioPhase(StringRef name);

/// Appends the passes from an imported module up to and including
/// `stopAfter`: set-target, raise (simplify, norms, rotary, attention,
/// linear), page-kv + the serving-contract check + quantize-kv, lowering to
/// folio ops + its check, the verify entries of speculative decoding
/// (folio-speculative), fuse.
void buildFolioPipeline(OpPassManager &pm, const FolioPipelineOptions &options,
                        FolioPhase stopAfter);

/// The whole pipeline (`folio-compile`).
void buildFolioCompilePipeline(OpPassManager &pm,
                               const FolioPipelineOptions &options);

/// Registers `folio-compile` for folio-opt.
void registerFolioPipelines();

} // namespace mlir::folio

#endif // FOLIO_PIPELINES_PIPELINES_H
