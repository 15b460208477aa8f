//===- Plan.h - The compiled plan: steps, value slots, weights --*- C++ -*-===//
//
// A plan is target-independent data: the serving entry as an ordered list of
// steps over numbered value slots, with every weight in one blob. The
// compiler (compiler/Plan) builds it from MLIR; executors (runtime/Executor)
// run it. Nothing here knows MLIR, a target or a kernel library, so one plan
// serves the CPU executor today and a CUDA executor later.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_PLAN_PLAN_H
#define FOLIO_RUNTIME_PLAN_PLAN_H

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace folio::plan {

/// Element types of plan values. Index values (MLIR `index`) are I64.
/// F8E4M3, F8E5M2, I8, I4 and I2 are KV-cache dtypes only: no tensor value
/// has them (validatePlan refuses one that does).
enum class ElemType : uint8_t {
  F32 = 0,
  F16 = 1,
  BF16 = 2,
  I64 = 3,
  I32 = 4,
  F8E4M3 = 5,
  F8E5M2 = 6,
  I8 = 7,
  I4 = 8,
  I2 = 9
};

/// "f32", ..., "i32"; the cache dtypes by their --kv-cache-dtype names
/// ("fp8_e4m3", "fp8_e5m2", "int8", "int4", "int2").
const char *elemTypeName(ElemType t);
/// Bytes per element; 0 for I4 and I2 (two or four elements per byte: size
/// caches with elemTypeBits).
size_t elemTypeSize(ElemType t);
/// Bits per element (4 for I4, 2 for I2).
size_t elemTypeBits(ElemType t);
/// Whether tensor values may have the type (every type but the cache-only
/// ones).
bool isTensorElemType(ElemType t);

/// What the one dynamic dim of a buffer counts, so that its size is an
/// expression of the step: static product x tokens (or logits rows, or
/// sequences).
enum class DimSymbol : uint8_t { None = 0, Tokens = 1, Rows = 2, Seqs = 3 };

const char *dimSymbolName(DimSymbol s);

/// What a value slot holds: a tensor with static dims (-1 = known only at
/// run time) or one layer's paged KV cache.
struct ValueInfo {
  enum class Kind : uint8_t { Tensor = 0, KVCache = 1 };
  Kind kind = Kind::Tensor;
  ElemType type = ElemType::F32;
  std::vector<int64_t> dims;
  /// What the -1 in `dims` counts (None when all dims are static, and for
  /// the contract's inputs with more than one dynamic dim).
  DimSymbol symbol = DimSymbol::None;
  /// The buffer (Plan::buffers) the compiler assigned to this value, or -1
  /// (constants, inputs, the output, views, and what it left unplanned).
  int32_t buffer = -1;
  /// Where a KV cache's quantization scales live (the dialect's
  /// ScaleLayout, same numbering): PerTensor and PerHead are static, f32
  /// constants the cache's kv_write and paged_attention steps take as their
  /// k_scale and v_scale operands; PerTokenHead and PerTokenGroup (kvGroup
  /// elements of a head) are computed when a slot is written and stored
  /// with it. Kivi (int2): keys per channel over one block of tokens,
  /// values per token over kvGroup channels, both stored with the block;
  /// the newest kvResidual tokens of each sequence stay in full precision,
  /// kept by the runtime outside the block pool.
  enum class KVScale : uint8_t {
    None = 0,
    PerTensor = 1,
    PerHead = 2,
    PerTokenHead = 3,
    Kivi = 4,
    PerTokenGroup = 5
  };
  // KV caches only.
  int64_t kvHeads = 0;
  int64_t headDim = 0;
  int64_t blockSize = 0;
  KVScale kvScale = KVScale::None;
  /// Elements per scale group (PerTokenGroup) or per value group (Kivi).
  int64_t kvGroup = 0;
  /// Kivi only: tokens per sequence kept in full precision, whole blocks.
  int64_t kvResidual = 0;
};

const char *kvScaleName(ValueInfo::KVScale s);

/// A step attribute. Enums travel as their MLIR spelling (strings), so a new
/// enum case never changes the format.
using AttrValue = std::variant<int64_t, double, std::string,
                               std::vector<int64_t>, std::vector<double>>;

struct Attr {
  std::string name;
  AttrValue value;
};

/// One op of a kernel. `kind` is one of opKinds() ("linear", "rms_norm",
/// "binary", "reshape", ...); operands and results are value slots, -1 for
/// an absent optional operand.
struct Step {
  std::string kind;
  std::string name; ///< for messages: the ONNX node name when there is one
  std::vector<int32_t> operands;
  std::vector<int32_t> results;
  std::vector<Attr> attrs;

  const Attr *find(const std::string &attrName) const;
  int64_t getInt(const std::string &attrName, int64_t dflt) const;
  double getFloat(const std::string &attrName, double dflt) const;
  std::string getString(const std::string &attrName,
                        const std::string &dflt) const;
  std::vector<int64_t> getInts(const std::string &attrName) const;
};

/// The weight operands of a step that the kernels read as one packed
/// weight, as (first operand, count), in a fixed order: linear's weight
/// (operand 1); gated_mlp's gate and up (1, 2; their input is the step's)
/// and down (3; its input is the gated activation). Empty for other kinds.
std::vector<std::pair<int32_t, int32_t>> linearWeightGroups(const Step &s);

/// Per linear weight group, keyed by (step, first operand) as
/// linearWeightGroups gives them: the largest |x| each input column was
/// given (calibration data; a NaN input is kept as NaN).
using LinearInputAbsMax =
    std::map<std::pair<int32_t, int32_t>, std::vector<float>>;

/// A constant slot whose bytes live in the blob.
struct Constant {
  int32_t value = -1;
  uint64_t offset = 0; ///< in the blob, a multiple of kBlobAlignment
  uint64_t bytes = 0;
};

/// A named entry argument (tokens, positions, ..., kv_cache.N).
struct Argument {
  std::string name;
  int32_t value = -1;
};

inline constexpr uint64_t kBlobAlignment = 64;

/// The plan's blob: owned bytes while compiling, an mmap of the artifact
/// after loading. Either way 64-byte aligned.
class Blob {
public:
  Blob() = default;
  /// Appends `n` bytes at the next aligned offset and returns that offset.
  uint64_t append(const void *data, uint64_t n);
  const uint8_t *data() const { return base; }
  uint64_t size() const { return length; }
  /// Adopts an external region (an mmap) kept alive by `keepAlive`.
  void adopt(const uint8_t *data, uint64_t size,
             std::shared_ptr<void> keepAlive);

private:
  std::shared_ptr<void> owner;
  const uint8_t *base = nullptr;
  uint64_t length = 0;
  uint64_t capacity = 0;
};

/// One kernel: steps [firstStep, firstStep + numSteps) run as a unit, as
/// the compiler's folio-fuse grouped them. `kind` is one of kernelKinds();
/// an executor with a fused implementation of the kind runs that, any
/// other runs the steps in order.
struct Kernel {
  std::string kind;
  int32_t firstStep = 0;
  int32_t numSteps = 0;
  std::vector<int32_t> inputs;  ///< values read from outside the kernel
  std::vector<int32_t> outputs; ///< values read after it (or returned)
  /// Values no later kernel reads: their buffers are free after this one
  /// (decided by the compiler from the whole program).
  std::vector<int32_t> releases;
};

/// The closed sets a plan may name: op kinds of steps, kernel kinds (the
/// fused ones plus every op kind, for kernels of one op). `spec_verify` is
/// an op kind of the verify entries only (see Entry), never of forward.
const std::vector<std::string> &opKinds();
const std::vector<std::string> &fusedKernelKinds();
bool isOpKind(const std::string &kind);
bool isKernelKind(const std::string &kind);

/// The verify entries of speculative decoding (the compiler's
/// folio-speculative adds them): one `spec_verify` step each, in greedy
/// mode, in sample mode with the draft's probabilities, and in sample mode
/// with one-hot drafts (a deterministic proposer, no probabilities).
inline constexpr const char *kVerifyGreedyEntry = "verify_greedy";
inline constexpr const char *kVerifySampleEntry = "verify_sample";
inline constexpr const char *kVerifySampleOneHotEntry = "verify_sample_onehot";
/// The inputs of a verify entry, in the order of the spec_verify step's
/// four operands (an absent one is -1): target_logits f32 [S, K+1, V],
/// draft_tokens i32 [S, K], draft_probs f32 [S, K, V], uniforms f32
/// [S, K+1]. Its outputs are the step's results: accepted i32 [S] and
/// tokens i32 [S, K+1].
inline constexpr const char *kVerifyInputNames[4] = {
    "target_logits", "draft_tokens", "draft_probs", "uniforms"};

/// An entry besides forward. It shares the plan's value table (its values
/// are tensors no forward step touches) and runs its steps in order, each
/// on its own: no kernels, no planned buffers (buffer -1, symbol None). The
/// executor binds the caller's arrays to `inputs` as views and writes
/// `outputs` straight into the caller's vectors.
struct Entry {
  std::string name;
  std::vector<Argument> inputs;
  std::vector<int32_t> outputs;
  std::vector<Step> steps;
};

/// How a stored weight's bytes are laid out. RowsNK: rows W[n, :] of k
/// elements (the [N, K] out_in layout), the operands it stands for stacked
/// along N in operand order: the layout the CPU kernels stream
/// (codegen/CPU/WeightPack.h writes it). Int4G32/G64/G128: int4 rows of
/// 64-byte blocks of 128 nibbles (WeightPack.h gives the nibble order),
/// each group of 32, 64 or 128 weights along K (a row's last group may be
/// shorter) with an f16 (scale, min) pair; the group size is part of the layout
/// because the params' count and the kernel's loop depend on it.
enum class WeightLayout : uint8_t {
  RowsNK = 1,
  Int4G32 = 2,
  Int4G64 = 3,
  Int4G128 = 4
};

const char *weightLayoutName(WeightLayout l);
/// The int4 group size of a layout; 0 for RowsNK (and unknown values).
int64_t int4LayoutGroupSize(WeightLayout l);

/// A linear weight the compiler stored in the dtype and layout the kernels
/// read (folioc --weight-dtype), so an executor points its kernels at the
/// blob and converts nothing. It stands for `numOperands` weight operands
/// of forward step `step`, from `operand` on: a linear's weight (1, 1),
/// a gated MLP's gate and up (1, 2) or its down (3, 1), or an embedding's
/// table (0, 1: a tied table read from its lm_head's packing, on the same
/// ranges; `n` rows of `k`). Those operand values are defined by it (they
/// need no constant). Every byte range is 64-byte aligned in the blob;
/// records may share ranges.
struct StoredWeight {
  int32_t step = -1;
  int32_t operand = -1;
  int32_t numOperands = 1;
  /// F32, BF16, F16, I8 (int8 with one f32 scale per output row and
  /// outlier columns kept in bf16), F8E4M3 (one f32 scale per output row)
  /// or I4 (groups along K, the group size in `layout`).
  ElemType type = ElemType::BF16;
  WeightLayout layout = WeightLayout::RowsNK;
  /// The lowest precision a kernel may round this weight's input (x) to:
  /// F32 (x as it comes) or, for I4 weights only, I8 (x rounded to int8
  /// per weight group, so the codes multiply as integers:
  /// codegen/CPU/GemvInt4X8Avx512.cpp). A floor, not an order: a kernel
  /// may keep x more precise.
  ElemType activations = ElemType::F32;
  int64_t n = 0;           ///< output features (rows), stacked operands summed
  int64_t k = 0;           ///< input features
  int64_t numOutliers = 0; ///< I8: columns kept in bf16
  /// The weights, [n, k] of `type`.
  uint64_t dataOffset = 0, dataBytes = 0;
  /// I8: f32 scales [n], the increasing i32 outlier column indices
  /// [numOutliers], their bf16 weights [n, numOutliers]. F8E4M3: f32
  /// scales [n]. I4: f16 (scale, min) pairs [n, k / group size] in the
  /// scales range. Unused ranges are 0 bytes.
  uint64_t scalesOffset = 0, scalesBytes = 0;
  uint64_t outlierColsOffset = 0, outlierColsBytes = 0;
  uint64_t outliersOffset = 0, outliersBytes = 0;
};

/// A GPU kernel compiled ahead of time (folioc --target=sm_XX): the
/// cubin NVRTC built for `arch` and its PTX, which a newer device JITs.
/// Both live in the blob (64-byte aligned), each with its XXH64 checksum
/// (planHash), so a flipped bit in a kernel is caught even when the
/// weights' hash is skipped. The plan stays target-independent: an
/// executor without a use for them ignores these records.
struct DeviceKernel {
  std::string name; ///< the extern "C" entry point
  std::string key;  ///< the kernel cache key it was compiled under
  std::string arch; ///< "sm_80", "sm_86", "sm_89" or "sm_90a"
  /// The forward steps it runs, increasing.
  std::vector<int32_t> steps;
  uint64_t cubinOffset = 0, cubinBytes = 0, cubinHash = 0;
  uint64_t ptxOffset = 0, ptxBytes = 0, ptxHash = 0;
  /// From ptxas's report; -1 where it gave none.
  int32_t registers = -1;
  int32_t spillStoreBytes = -1, spillLoadBytes = -1;
  int32_t stackFrameBytes = -1;
  int32_t sharedBytes = -1; ///< static shared memory
};

/// A reusable buffer: values whose lifetimes do not overlap share it, so
/// a forward needs as many allocations as buffers, not as values. Its size
/// is an expression of the step: staticBytes x the symbol's count.
struct BufferInfo {
  int64_t staticBytes = 0;
  DimSymbol symbol = DimSymbol::None;
};

struct Plan {
  std::string entry = "forward";
  std::vector<ValueInfo> values;
  std::vector<Argument> inputs;
  std::vector<int32_t> outputs;
  std::vector<Constant> constants;
  std::vector<Step> steps;
  std::vector<Kernel> kernels;
  std::vector<BufferInfo> buffers;
  /// Entries besides forward (the verify entries), by name.
  std::vector<Entry> entries;
  /// Linear weights stored packed (empty: every weight is a constant in
  /// the model's dtype, which an executor packs at load).
  std::vector<StoredWeight> weights;
  /// GPU kernels compiled ahead of time (empty for a CPU target).
  std::vector<DeviceKernel> deviceKernels;
  Blob blob;
  /// Model facts the runtime needs without reading steps (vocab, maximum
  /// positions, block size), as name -> integer.
  std::vector<std::pair<std::string, int64_t>> config;

  int64_t configValue(const std::string &key, int64_t dflt) const;
  /// The entry named `name`, or null.
  const Entry *findEntry(const std::string &name) const;
  /// The stored weight that stands for operand `operand` of forward step
  /// `step` onwards, or null.
  const StoredWeight *findStoredWeight(int32_t step, int32_t operand) const;
  /// Bytes the stored weights hold (data, scales, outliers), a range that
  /// several records share (a tied table's lookup and its lm_head) once.
  int64_t storedWeightBytes() const;
  int32_t addValue(ValueInfo info);
};

/// Bytes of tensor value `v` for a step of `tokens` tokens, `rows` logits
/// rows and `seqs` sequences; -1 for a KV cache or an unsized dim.
int64_t bufferBytes(const ValueInfo &v, int64_t tokens, int64_t rows,
                    int64_t seqs);

} // namespace folio::plan

#endif // FOLIO_RUNTIME_PLAN_PLAN_H
