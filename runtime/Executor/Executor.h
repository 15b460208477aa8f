//===- Executor.h - Runs a plan's serving entry on a device -----*- C++ -*-===//
//
// One interface, one implementation per device. An executor loads a plan
// (packing weights for its kernels and refusing step kinds it cannot run),
// owns the paged KV cache in its device's memory, and runs `forward` on the
// serving-contract arrays of one engine step. The CPU executor interprets
// steps with codegen/CPU kernels; a CUDA executor takes the same plan and
// launches the NVRTC kernel compiled for each step (see
// docs/plan-and-executor.md).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_EXECUTOR_EXECUTOR_H
#define FOLIO_RUNTIME_EXECUTOR_EXECUTOR_H

#include "runtime/Plan/Plan.h"
#include "runtime/Support/Status.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace folio::exec {

/// The vLLM-v1 flattened batch of one step (see runtime/Core/BatchBuilder.h).
struct ForwardBatch {
  std::vector<int32_t> tokens;        ///< [T]
  std::vector<int32_t> positions;     ///< [T]
  std::vector<int32_t> queryStartLoc; ///< [S + 1]
  std::vector<int32_t> seqLens;       ///< [S]
  std::vector<int32_t> blockTables;   ///< [S, maxBlocks], row-major
  int64_t maxBlocks = 0;
  std::vector<int64_t> slotMapping;   ///< [T]
  std::vector<int32_t> logitsIndices; ///< [R]
};

/// Whether the arrays of `batch` agree in length (tokens, positions and
/// slots; sequences, their starts and block-table rows): an error naming
/// the counts when not. Every executor checks this before reading them.
Status checkForwardBatch(const ForwardBatch &batch);

/// One row's draw for an executor that samples where its logits are
/// (Executor::forwardSampled): runtime/Sampler's temperature, min-p, top-k
/// and top-p, and the uniform of the draw (philoxUniform(seed, position),
/// as the host sampler draws it). Temperature 0 is a greedy row (the
/// lowest index among the largest logits; the rest is not read), so one
/// step can mix greedy and sampled requests.
struct DeviceDraw {
  float temperature = 1.0f; ///< > 0, or 0 for greedy
  int32_t topK = 0;         ///< <= 0: off
  float topP = 1.0f;        ///< >= 1: off
  float minP = 0.0f;        ///< in [0, 1]; 0: off
  double uniform = 0.0;     ///< in [0, 1)
  /// Penalties before everything else (greedy rows too), as
  /// runtime/Sampler's applyPenalties: the repetition penalty (> 0; 1:
  /// off) on every token of penaltyTokens, then frequency x its count +
  /// presence where its count is positive. penaltyTokens holds each token
  /// once (every token of the prompt and output where the repetition
  /// penalty is on, else the output's), penaltyCounts its count in the
  /// output (Executor::penalizesOnDevice).
  float repetitionPenalty = 1.0f;
  float frequencyPenalty = 0.0f;
  float presencePenalty = 0.0f;
  std::vector<int32_t> penaltyTokens, penaltyCounts;
  /// Top alternatives to report with the token's logprob (0 to
  /// runtime/Sampler's kMaxLogprobs), or -1 for no logprobs
  /// (Executor::logprobsOnDevice).
  int32_t logprobs = -1;
  /// A draft model's row: where among the rows reserveDraftProbs reserved
  /// the distribution the token was drawn from goes (as the draft
  /// proposer's host path computes q), or -1 to keep none. Only sampled
  /// rows (temperature > 0) write it.
  int32_t probsRow = -1;

  bool penalized() const {
    return repetitionPenalty != 1.0f || frequencyPenalty != 0.0f ||
           presencePenalty != 0.0f;
  }
};

/// Rows of a draft model's distributions (q, [rows, vocab] f32) an
/// executor keeps where its logits are, for a target's executor on the
/// same device to verify against (DeviceVerify::draftProbs). Valid until
/// the next reserveDraftProbs of the executor that made them.
struct DeviceProbRows {
  uintptr_t address = 0; ///< row 0, in the owner's device address space
  int64_t rows = 0;
  int64_t vocab = 0;
  const void *owner = nullptr; ///< identifies the device context
};

/// The logprobs of a token drawn where the logits are (DeviceDraw::logprobs),
/// as runtime/Sampler's logprobsProcessed reports them: under the
/// distribution the token was drawn from, the token's and the most likely
/// tokens' (most likely first, ties by lower token id).
struct DeviceLogprobs {
  float logprob = 0;
  std::vector<int32_t> topTokens;
  std::vector<float> topLogprobs;
};

/// Speculative verification where the logits are
/// (Executor::forwardVerified): the batch's first numSeqs x (numDraft + 1)
/// logits rows are each sequence's draft rows and the row after them. A
/// sampled sequence's q is a draft model's rows kept on the device
/// (draftProbs, probRows) or, for a deterministic proposer (n-gram lookup),
/// 1 at each draft; greedy sequences read no q.
struct DeviceVerify {
  int64_t numSeqs = 0;  ///< S
  int64_t numDraft = 0; ///< K
  /// [S]: each sequence's processing (temperature 0: greedy), penalties
  /// and logprobs; the uniform and the penalty lists are not read.
  std::vector<DeviceDraw> params;
  /// Where some sequence has penalties, [S, K + 1] lists (empty for the
  /// rows of sequences without): row j's history holds the output and
  /// drafts 0..j-1, so each row has its own counts; as DeviceDraw's
  /// penaltyTokens and penaltyCounts. Each row is penalized in place before
  /// the verification.
  std::vector<std::vector<int32_t>> rowPenaltyTokens, rowPenaltyCounts;
  std::vector<int32_t> drafts; ///< [S, K], -1 padding the end
  /// [S, K + 1] in [0, 1): draft j's acceptance, then the draw (as the
  /// host path's verify entry takes them).
  std::vector<float> uniforms;
  /// A draft model's distributions (another executor's reserveDraftProbs,
  /// on the same device; Executor::verifiesDraftProbs) and, where set, [S]
  /// rows: sequence s's draft j has q at row probRows[s] + j, or -1 for a
  /// one-hot sequence. Empty: every sequence is one-hot.
  DeviceProbRows draftProbs;
  std::vector<int32_t> probRows;
};

/// One verification of speculative tokens (the plan's `verify` entry, see
/// codegen/CPU/SpecVerify.h for the meaning of each array). Views only.
struct VerifyBatch {
  int64_t numSeqs = 0;  ///< S
  int64_t numDraft = 0; ///< K
  int64_t vocab = 0;    ///< V
  /// Rejection sampling (true) or longest argmax match (false).
  bool sample = false;
  const float *targetLogits = nullptr;  ///< [S, K+1, V]
  const int32_t *draftTokens = nullptr; ///< [S, K], -1 padded
  const float *draftProbs = nullptr;    ///< [S, K, V] or null (one-hot)
  const float *uniforms = nullptr;      ///< [S, K+1], sample only
};

/// The model geometry an executor reads off its plan.
struct KVCacheLayout {
  int64_t numLayers = 0;
  int64_t blockSize = 0;
  int64_t bytesPerBlock = 0; ///< all layers, K and V, scales included
  /// What the same caches would take at 16 bits per element, per block:
  /// the baseline that quantized caches are reported against.
  int64_t bytesPerBlock16 = 0;
};

/// Per-head abs-max of everything in the K and V caches, layer by layer:
/// values[(layer * 2 + kv) * kvHeads + head], kv 0 for K and 1 for V.
struct KVCacheAbsMax {
  int64_t layers = 0;
  int64_t kvHeads = 0;
  std::vector<float> values;
};

/// How linear weights the plan keeps as constants (f32, or whatever the
/// model had) are stored once packed: an executor converts them at load.
/// Weights the compiler stored packed (Plan::weights, folioc
/// --weight-dtype) run as stored, whatever this says.
enum class WeightType { F32, BF16, F16 };

/// Parses "f32", "bf16" or "f16".
Expected<WeightType> parseWeightType(const std::string &name);
const char *weightTypeName(WeightType t);

struct ExecutorOptions {
  WeightType weights = WeightType::F32;
  /// Threads (the caller included) for the executor's kernels, oneDNN's
  /// matmul tiles included; 0 = the process-wide pool (FOLIO_NUM_THREADS
  /// or the cores this process may use).
  unsigned numThreads = 0;
  /// Accumulate wall time per step kind (see Executor::profile).
  bool profile = false;
  /// Run the compiler's kernels through the CPU's fused implementations
  /// where it has them (bitwise the same results); off runs every kernel
  /// step by step (for tests and for measuring what fusion buys).
  bool fusedKernels = true;
  /// Put each value in the buffer the compiler planned for it (values
  /// whose lifetimes do not overlap share one); off allocates every value
  /// on its own (for tests).
  bool plannedBuffers = true;
  /// The CUDA executor runs decode steps as CUDA graphs, one per batch
  /// bucket and context range, captured at first use (never while
  /// profiling); off launches every kernel every step (--enforce-eager).
  /// Only a device executor has launches to capture: the CPU executor
  /// always runs each step's kernels directly, as off asks.
  bool cudaGraphs = true;
  /// Told what the executor changed on its own while running, in a
  /// sentence: a CUDA graph it could not capture or replay turns graphs
  /// off (that step and the rest run eagerly). Null: not told.
  std::function<void(const std::string &)> warn;
};

/// Time spent in one kind of step since the last resetProfile.
struct KindProfile {
  std::string kind;
  double seconds = 0;
  int64_t calls = 0;
  double flops = 0; ///< counted by GEMM-like kinds (linear, gated_mlp)
  /// The CUDA executor: host time spent enqueuing them (`seconds` is the
  /// device's time between events around them).
  double hostSeconds = 0;
};

class Executor {
public:
  virtual ~Executor() = default;
  virtual const char *deviceName() const = 0;

  /// Prepares `plan`: binds constants, packs weights, resolves every step's
  /// kernel. Fails, naming the step, when a kind is not implemented.
  virtual Status load(std::shared_ptr<const plan::Plan> plan) = 0;

  /// The KV geometry of the loaded plan.
  virtual KVCacheLayout kvCacheLayout() const = 0;

  /// Allocates every layer's cache with `numBlocks` blocks (block 0 is the
  /// reserved null block, as in the block pool).
  virtual Status allocateKVCache(int64_t numBlocks) = 0;

  /// Runs the entry on one batch; `logits` receives [R, vocab] row-major.
  virtual Status forward(const ForwardBatch &batch, std::vector<float> &logits,
                         int64_t &vocab) = 0;

  /// Whether forwardGreedy takes the argmax where the logits are (a GPU),
  /// sparing their copy to the host: the engine asks for tokens instead of
  /// logits when every row it samples is greedy without penalties or
  /// logprobs.
  virtual bool greedyOnDevice() const { return false; }
  /// forward, then each logits row's greedy token: the lowest index among
  /// its largest logits, or -1 for a row holding a NaN or +inf or nothing
  /// above -inf (the rows runtime/Sampler refuses). The logits stay where
  /// they are.
  virtual Status forwardGreedy(const ForwardBatch &batch,
                               std::vector<int32_t> &tokens, int64_t &vocab) {
    (void)batch;
    (void)tokens;
    (void)vocab;
    return Status::invalidArgument(std::string(deviceName()) +
                                   " executor cannot take greedy tokens "
                                   "where its logits are (greedyOnDevice)");
  }

  /// Whether forwardSampled draws temperature / min-p / top-k / top-p
  /// tokens, and greedy ones, where the logits are (a GPU); the engine then
  /// asks for tokens when every row it samples in a step wants only these
  /// (penalties only where penalizesOnDevice, logprobs only where
  /// logprobsOnDevice).
  virtual bool samplesOnDevice() const { return false; }
  /// Whether forwardSampled also applies draws' penalties there.
  virtual bool penalizesOnDevice() const { return false; }
  /// Whether forwardSampled also reports draws' logprobs from there.
  virtual bool logprobsOnDevice() const { return false; }
  /// forward, then each logits row's token drawn with draws[r] as
  /// runtime/Sampler's processLogits and drawProcessed draw it, or -1 for
  /// a row holding a NaN or +inf or nothing above -inf. `logprobs`
  /// receives one entry per row: the token's logprobs where draws[r] asks
  /// for them and the row has a token, else an empty entry.
  virtual Status forwardSampled(const ForwardBatch &batch,
                                const std::vector<DeviceDraw> &draws,
                                std::vector<int32_t> &tokens,
                                std::vector<DeviceLogprobs> &logprobs,
                                int64_t &vocab) {
    (void)batch;
    (void)draws;
    (void)tokens;
    (void)logprobs;
    (void)vocab;
    return Status::invalidArgument(std::string(deviceName()) +
                                   " executor cannot draw tokens where its "
                                   "logits are (samplesOnDevice)");
  }

  /// Whether forwardVerified verifies drafts where the logits are (a GPU);
  /// the engine then asks for tokens when every speculating sequence of a
  /// step has one-hot drafts (or a draft model's distributions kept where
  /// this executor reads them: verifiesDraftProbs) and plain greedy or
  /// plain draw sampling, and every other row a plain draw.
  virtual bool verifiesOnDevice() const { return false; }
  /// Whether forwardVerified also takes a draft model's distributions kept
  /// in `rows` (they are on this executor's device), with everything a
  /// speculating sequence may ask for there: penalties and logprobs.
  virtual bool verifiesDraftProbs(const DeviceProbRows &rows) const {
    (void)rows;
    return false;
  }
  /// Copies rows [first, first + count) of `rows` (a draft executor's
  /// reservation on this executor's device) to `out` ([count, vocab]): for
  /// a step that verifies them on the host after all.
  virtual Status readDraftProbs(const DeviceProbRows &rows, int64_t first,
                                int64_t count, float *out) const {
    (void)rows;
    (void)first;
    (void)count;
    (void)out;
    return Status::invalidArgument(std::string(deviceName()) +
                                   " executor cannot read draft "
                                   "distributions kept on a device");
  }
  /// Reserves `rows` rows of draft distributions where the logits are,
  /// for forwardSampled's draws to write (DeviceDraw::probsRow); what the
  /// previous reservation held is gone.
  virtual Expected<DeviceProbRows> reserveDraftProbs(int64_t rows) {
    (void)rows;
    return Status::invalidArgument(std::string(deviceName()) +
                                   " executor keeps no draft distributions "
                                   "where its logits are");
  }
  /// forward, then the verification of `verify` over the first
  /// S x (K + 1) logits rows, and a token drawn for each later row with
  /// draws[r] (as forwardSampled, logprobs too). `accepted` receives [S]
  /// kept drafts, or -1 for a sequence one of whose rows 0..k holds a NaN
  /// or +inf or nothing above -inf; `tokens` [S, K + 1] (kept drafts, then
  /// the corrected or bonus token, then -1; all -1 for a faulty sequence),
  /// then one per later row; `logprobs` one per row as `tokens`: a
  /// verified row's for the token it emitted, where its sequence asks
  /// (DeviceVerify::params[i].logprobs), then the later rows'.
  virtual Status
  forwardVerified(const ForwardBatch &batch, const DeviceVerify &verify,
                  const std::vector<DeviceDraw> &draws,
                  std::vector<int32_t> &accepted, std::vector<int32_t> &tokens,
                  std::vector<DeviceLogprobs> &logprobs, int64_t &vocab) {
    (void)batch;
    (void)verify;
    (void)draws;
    (void)accepted;
    (void)tokens;
    (void)logprobs;
    (void)vocab;
    return Status::invalidArgument(std::string(deviceName()) +
                                   " executor cannot verify drafts where its "
                                   "logits are (verifiesOnDevice)");
  }

  /// Runs the plan's verify entry: `accepted` receives [S] kept drafts,
  /// `tokens` [S, K+1] (kept drafts, then the corrected or bonus token,
  /// then -1).
  virtual Status verify(const VerifyBatch &batch,
                        std::vector<int32_t> &accepted,
                        std::vector<int32_t> &tokens) {
    (void)batch;
    (void)accepted;
    (void)tokens;
    return Status::invalidArgument(std::string(deviceName()) +
                                   " executor cannot verify speculative "
                                   "tokens");
  }
  /// The ranges of what the caches hold (calibration: needs f32 caches).
  virtual Expected<KVCacheAbsMax> kvCacheAbsMax() const {
    return Status::invalidArgument(std::string(deviceName()) +
                                   " executor cannot read its KV cache");
  }

  /// Starts (true) or stops recording plan::LinearInputAbsMax for every
  /// linear weight group the forward passes run (calibration: it reads
  /// every input once more); starting clears what was recorded, stopping
  /// drops it.
  virtual Status recordLinearInputs(bool on) {
    (void)on;
    return Status::invalidArgument(std::string(deviceName()) +
                                   " executor cannot record linear inputs");
  }
  /// What the recording running now has seen (empty when none runs).
  virtual plan::LinearInputAbsMax linearInputAbsMax() const { return {}; }

  /// Bytes of packed linear weights one token's forward streams (what a
  /// decode step must read from memory besides the KV cache).
  virtual int64_t linearWeightBytes() const { return 0; }

  /// Per-kind wall time, most expensive first (empty unless profiling).
  virtual std::vector<KindProfile> profile() const { return {}; }
  virtual void resetProfile() {}
};

/// The CPU executor (codegen/CPU kernels). With options.numThreads it runs
/// on the process-wide pool of that size (cpu::ThreadPool::shared: the
/// executors of a process share their threads), on which
/// oneDNN's matmuls run too (as single-threaded tiles). forward() is not
/// reentrant: one executor serves one engine thread; executors on other
/// threads may share a pool, whose jobs then take turns.
std::unique_ptr<Executor>
createCPUExecutor(const ExecutorOptions &options = {});

} // namespace folio::exec

#endif // FOLIO_RUNTIME_EXECUTOR_EXECUTOR_H
