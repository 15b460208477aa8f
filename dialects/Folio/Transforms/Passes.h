//===- Passes.h - folio passes ----------------------------------*- C++ -*-===//

#ifndef FOLIO_TRANSFORMS_PASSES_H
#define FOLIO_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir::folio {

/// Module attribute names written by folio-set-target.
inline constexpr llvm::StringLiteral kTargetAttrName = "folio.target";
inline constexpr llvm::StringLiteral kKVCacheDTypeAttrName =
    "folio.kv_cache_dtype";
inline constexpr llvm::StringLiteral kBlockSizeAttrName = "folio.block_size";
/// Module attribute the tools set from calibration data before the
/// pipeline: dense f32 [layers, 2, kv_heads], the abs-max of K (index 0)
/// and V (index 1) per layer and KV head, read by folio-quantize-kv.
inline constexpr llvm::StringLiteral kKVCalibrationAttrName =
    "folio.kv_calibration";

/// Module attribute written by folio-widen-floats for a graph exported in
/// 16 bits: "f16" or "bf16", the type its values had before they were
/// widened to f32.
inline constexpr llvm::StringLiteral kSourceFloatAttrName =
    "folio.source_float";

/// The serving entry's arguments, in order, before the per-layer caches.
inline constexpr llvm::StringLiteral kServingArgNames[] = {
    "tokens",       "positions",    "query_start_loc", "seq_lens",
    "block_tables", "slot_mapping", "logits_indices"};
/// The dim symbol page-kv gives the step's token count.
inline constexpr llvm::StringLiteral kNumTokensDim = "num_tokens";

/// The verify entries folio-speculative adds (runtime/Plan/Plan.h names
/// the same strings; PlanIOTests checks that they agree).
inline constexpr llvm::StringLiteral kVerifyGreedyEntry = "verify_greedy";
inline constexpr llvm::StringLiteral kVerifySampleEntry = "verify_sample";
inline constexpr llvm::StringLiteral kVerifySampleOneHotEntry =
    "verify_sample_onehot";
/// Their arguments' names, in the order of spec_verify's operands (an entry
/// takes the ones its mode has).
inline constexpr llvm::StringLiteral kVerifyArgNames[] = {
    "target_logits", "draft_tokens", "draft_probs", "uniforms"};

#define GEN_PASS_DECL
#include "dialects/Folio/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/Folio/Transforms/Passes.h.inc"

} // namespace mlir::folio

#endif // FOLIO_TRANSFORMS_PASSES_H
