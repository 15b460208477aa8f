//===- PlanLaunches.h - The CUDA launches of a plan's kernels ---*- C++ -*-===//
//
// How a plan runs on a GPU: for each of its kernels (the compiler's
// folio.kernel groups), the generated CUDA kernels that compute it, in
// order, each with its spec (codegen/CUDA/KernelSpec.h: the code and the
// launch geometry) and where every argument lives: a plan value at an
// element offset and row stride (slices and reshapes are resolved to the
// value they view), or a scratch buffer of the launch group.
//
// One derivation serves both sides: folioc compiles the distinct kernels of
// these launches ahead of time (compiler/Plan/CudaKernels.h), and the CUDA
// executor runs them. The kernel names encode every specialization
// parameter, so a plan whose embedded kernels were derived differently is
// refused at load (a name it does not hold), never run with the wrong code.
// Plain C++ on the plan: no MLIR, no driver.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_DEVICE_PLANLAUNCHES_H
#define FOLIO_RUNTIME_DEVICE_PLANLAUNCHES_H

#include "codegen/CUDA/KernelSpec.h"
#include "runtime/Plan/Plan.h"
#include "runtime/Support/Status.h"

#include <string>
#include <vector>

namespace folio::device {

/// Where one argument of a launch lives: element `offset` of plan value
/// `value` (or of scratch buffer `scratch` of the kernel's launches), rows
/// `stride` elements apart (0: rows are contiguous). Unused: both -1.
struct LaunchOperand {
  int32_t value = -1;
  int32_t scratch = -1;
  int64_t offset = 0;
  int64_t stride = 0;
  /// With a stride: the contiguous elements of each row (a slice's width).
  int64_t rowElems = 0;
  /// The plan value the kernel reads or writes as (a view of `value`, or
  /// `value` itself): its element count is the operand's. -1 for scratch.
  int32_t view = -1;

  bool present() const { return value >= 0 || scratch >= 0; }
};

/// What a launch does in its group. The attention kernels of one
/// paged_attention step are alternatives the executor picks per batch: the
/// decode kernel (and its split-K combine) when every sequence brings one
/// query token, the prefill kernel otherwise (or the decode kernel for
/// every batch where no prefill tile fits).
///
/// A CublasInput launch (a cast of a linear's input to bf16 or f16, the
/// weight's type) precedes the linear launch over bf16 or f16 weights it
/// serves: the executor runs the two as
/// cuBLASLt's tensor-core GEMM when the batch has more rows than the linear
/// kernel takes in one pass, and skips the cast otherwise. Over int8,
/// fp8_e4m3 and int4 weights the cast is to bf16 and a CublasWeight launch
/// follows it (the linear kernel dequantizing the weight to bf16 rows into
/// the executor's buffer, LinearSpec::dequantToBf16): the three run as a
/// bf16 GEMM when the linear kernel would stream the weights in more passes
/// than dequantizing costs, and the cast and the dequantization are skipped
/// otherwise. Over fp8_e4m3 weights without a bias a CublasFp8Input launch
/// comes first (x's rows quantized to e4m3 with a scale each,
/// LinearSpec::quantizeXToFp8, into two scratch operands): where the device
/// runs fp8 GEMMs (sm_89 and later) the executor runs it and cuBLASLt's
/// row-scaled fp8 GEMM instead of the cast, the dequantization and the bf16
/// GEMM.
enum class LaunchRole {
  Kernel,
  DecodeMain,
  DecodeCombine,
  Prefill,
  CublasInput,
  CublasWeight,
  CublasFp8Input
};

/// One generated kernel launch. Operands by spec:
///   KVWriteSpec:   inputs {k, v, slot_mapping, cache, k_scale, v_scale}
///   PagedDecode / PagedDecodeCombine / PagedPrefill:
///                  inputs {q, cache, block_tables, seq_lens,
///                  query_start_loc, k_scale, v_scale}, outputs {out}
///   RowKernelSpec: inputs in the spec's input order, outputs in order
///   RotarySpec:    inputs {x, positions, cos_sin_cache}, outputs {y}
///   GatherSpec:    inputs {table, ids or indices}, outputs {out}; an
///                  embedding of a stored table: table absent, `weight`
///   LinearSpec:    inputs {x, bias}, outputs {y}, `weight` stored;
///                  dequantToBf16 (CublasWeight): no operands, `weight`
///                  stored (the executor's buffer is its output);
///                  quantizeXToFp8 (CublasFp8Input): inputs {x}, outputs
///                  {codes, scales} in scratch
///   CastSpec:      inputs {in}, outputs {out} (CublasInput: out is the
///                  linear's input in its weight's 16-bit type)
/// Absent optional operands are not present().
struct PlanLaunch {
  std::string name; ///< the entry point, kernelName(spec)
  cuda::AnyKernelSpec spec;
  LaunchRole role = LaunchRole::Kernel;
  /// The plan step whose attributes it reads (attention's scale and
  /// window, rotary's frequencies, embedding's scale) and names in errors.
  int32_t step = -1;
  /// The plan steps it computes, increasing.
  std::vector<int32_t> steps;
  std::vector<LaunchOperand> inputs, outputs;
  /// Linear, and an embedding whose table is stored: index into
  /// Plan::weights.
  int32_t weight = -1;
};

/// A scratch buffer of a launch group: f32, `elemsPerCount` times the
/// step's count of `symbol` (tokens, rows or sequences).
struct LaunchScratch {
  plan::DimSymbol symbol = plan::DimSymbol::Tokens;
  int64_t elemsPerCount = 0;
};

/// The launches of one plan kernel, in order.
struct KernelLaunches {
  std::vector<PlanLaunch> launches;
  std::vector<LaunchScratch> scratch;
  /// Whether the launches compute every step of the kernel; if not, `why`
  /// names the first step (and reason) no generator covers.
  bool complete = true;
  std::string why;
};

struct PlanLaunches {
  /// One per Plan::kernels entry.
  std::vector<KernelLaunches> kernels;
  /// Kernel kinds with a kernel (or part of one) no generator covers, each
  /// once, in plan order: GEMMs over weights not stored packed, general
  /// broadcasts, [B, H, S, D] rotary layouts.
  std::vector<std::string> notGenerated;
  /// Where the plan's outputs are once every kernel ran, contiguous (a
  /// value not present() with `outputsWhy` set when one is not).
  std::vector<LaunchOperand> outputs;
  std::string outputsWhy;
  /// The samplers over the logits (greedy, top-k / top-p, the verifier of
  /// drafts, the penalties, the logprobs). They run
  /// on the plan's output after the forward; `steps` names the step that
  /// writes it (empty when no step does), so a plan embeds them with the
  /// kernels its steps run.
  std::vector<PlanLaunch> samplers;
};

/// Derives the launches of every kernel of `plan`. A step the generators
/// take but whose attributes they refuse (a cache format, a shape) is an
/// error naming it.
Status planLaunches(const plan::Plan &plan, PlanLaunches &out);

/// The cache format of a plan's KV-cache value as the CUDA kernels take
/// it: its dtype and scale group (int8, int4); an error starting with
/// `where` for scale layouts they do not take.
Status cudaCacheFormat(const plan::ValueInfo &cache, const std::string &where,
                       cpu::DType &type, int &group);

} // namespace folio::device

#endif // FOLIO_RUNTIME_DEVICE_PLANLAUNCHES_H
