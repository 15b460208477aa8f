//===- Model.h - Whole-model decode and prefill on the CUDA executor -*- C++
//-*-===//
//
// A plan folioc compiled for the GPU (its kernels embedded), run by the
// CUDA executor: a prompt's prefill, then decode steps of batches of
// sequences at a fixed context, each timed as an engine step takes it for
// greedy requests (the step's arrays uploaded, every launch, the greedy
// tokens taken on the device and read back; the logits where the plan has
// no sampler). The
// first prompt's logits are checked against the CPU executor's on the same
// plan before anything is timed, so a figure never comes from a wrong run.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_FOLIO_GPU_BENCH_MODEL_H
#define FOLIO_TOOLS_FOLIO_GPU_BENCH_MODEL_H

#include "runtime/Device/CudaDevice.h"
#include "runtime/Executor/Executor.h"
#include "runtime/Plan/Plan.h"

#include <memory>
#include <string>
#include <vector>

namespace folio::gpubench {

/// Sequences in a paged cache, blocks handed out in order from block 1
/// (block 0 is the null block), and the batches that bring new tokens to
/// some of them, the last token of each giving logits.
class SequenceBatches {
public:
  explicit SequenceBatches(int64_t blockSize = 16) : blockSize(blockSize) {}

  /// A new, empty sequence's id.
  int add();

  /// `newTokens[i]` go to sequence `seqs[i]`.
  exec::ForwardBatch step(const std::vector<int> &seqs,
                          const std::vector<std::vector<int32_t>> &newTokens);
  /// `count` tokens to each of `seqs`, spread over ids below 1003.
  exec::ForwardBatch step(const std::vector<int> &seqs, int count);

private:
  int64_t blockSize;
  int32_t next = 1;
  std::vector<std::vector<int32_t>> blocks;
  std::vector<int32_t> lengths;
};

struct ModelCase {
  int prompt = 512;               ///< prefill tokens, one sequence
  std::vector<int> batches = {1}; ///< decode batch sizes
  int context = 512;              ///< keys per decoding sequence
  int steps = 16;                 ///< timed decode steps per batch size
  int checkTokens = 16;           ///< the prompt checked against the CPU
  /// Largest |gpu - cpu| / (1 + |cpu|) of the checked logits allowed: the
  /// CPU kernels round activations for quantized weights (see
  /// docs/cuda-codegen.md, CUDA executor).
  double tolerance = 0.25;
  int prefillRuns = 3; ///< timed prefills after a warm-up one (median)
  /// Then the same decode steps on an executor that runs them without
  /// CUDA graphs (--enforce-eager): what the graphs save.
  bool eager = true;
  /// Then, on a second executor with profiling on: one prefill and
  /// `steps` decode steps per batch size, each launch's device time by
  /// kind (CudaExecutor's profile).
  bool profile = false;
};

/// One profiled kind of launch, per step.
struct ModelProfileKind {
  std::string kind;
  double deviceMs = 0; ///< between the events around its launches
  double hostMs = 0;   ///< enqueuing them
  double calls = 0;
};

/// What the profiled steps of one kind (the prefill, or decode at one
/// batch size) spent, per step.
struct ModelProfile {
  std::string what; ///< "prefill" or "decode"
  int batch = 1;
  int steps = 0;
  double wallMs = 0;                   ///< per step, profiling on
  std::vector<ModelProfileKind> kinds; ///< most device time first
};

struct ModelDecode {
  int batch = 0;
  double msPerStep = 0; ///< median, CUDA graphs on (the default)
  double tokensPerS = 0;
  double eagerMsPerStep = 0; ///< median, without graphs (ModelCase::eager)
};

struct ModelResult {
  std::string kvCache; ///< the first layer's cache dtype
  int64_t weightBytes = 0;
  double checkedDiff = 0; ///< the check's largest relative difference
  double prefillMs = 0;
  double prefillTokensPerS = 0;
  std::vector<ModelDecode> decode;
  std::vector<ModelProfile> profiles; ///< ModelCase::profile
  /// What the graph executor warned of (ExecutorOptions::warn): graphs it
  /// turned off, so `msPerStep` timed eager steps.
  std::vector<std::string> warnings;
};

/// Runs `plan` on a CUDA executor on `device` (see the file comment).
Expected<ModelResult> measureModel(std::unique_ptr<device::CudaDevice> device,
                                   std::shared_ptr<const plan::Plan> plan,
                                   const ModelCase &c);

} // namespace folio::gpubench

#endif // FOLIO_TOOLS_FOLIO_GPU_BENCH_MODEL_H
