//===- KernelSpec.cpp - Specialization parameters of CUDA kernels ---------===//

#include "codegen/CUDA/KernelSpec.h"

#include "codegen/CUDA/Templates.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace folio::cuda {

using cpu::DType;
using cpu::Status;

const std::vector<std::string> &supportedArchs() {
  static const std::vector<std::string> archs = {"sm_80", "sm_86", "sm_89",
                                                 "sm_90a"};
  return archs;
}

bool isSupportedArch(const std::string &arch) {
  for (const std::string &a : supportedArchs())
    if (a == arch)
      return true;
  return false;
}

DeviceTarget deviceTarget(int major, int minor) {
  int cc = major * 10 + minor;
  if (cc == 90)
    return {"sm_90a", true}; // arch-specific: exactly 9.0
  if (cc == 80 || cc == 86 || cc == 89)
    return {"sm_" + std::to_string(cc), true};
  if (cc < 80)
    return {};
  // An sm_8x cubin runs on a later 8.y; beyond, only PTX carries over.
  if (major == 8)
    return {cc >= 86 ? "sm_86" : "sm_80", true};
  return {"sm_89", false};
}

bool isSupportedCacheType(DType t) { return t != DType::I2; }

std::string supportedCacheTypeList() {
  std::string s;
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::FP8E4M3,
                  DType::FP8E5M2, DType::I8, DType::I4}) {
    s += s.empty() ? "" : ", ";
    s += cpu::dtypeName(t);
  }
  return s;
}

/// FNV-1a over every template: a kernel's key changes with its code.
std::string templatesHash() {
  uint64_t h = 1469598103934665603ull;
  for (const char *name : embeddedTemplateNames())
    for (const char *p = embeddedTemplate(name); p && *p; ++p)
      h = (h ^ uint8_t(*p)) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)h);
  return buf;
}

namespace {

Status checkCommon(const char *what, DType t, int headDim, int numKvHeads,
                   int group) {
  std::string where = std::string(what) + " (cache " + cpu::dtypeName(t) +
                      ", head_dim " + std::to_string(headDim) + ")";
  if (!isSupportedCacheType(t))
    return Status::error(where + ": the " + cpu::dtypeName(t) +
                         " cache is not generated for CUDA; supported: " +
                         supportedCacheTypeList());
  if (headDim < 1 || headDim > 512)
    return Status::error(where + ": head_dim must be in [1, 512]");
  if (numKvHeads < 1)
    return Status::error(where + ": num_kv_heads " +
                         std::to_string(numKvHeads) + " must be >= 1");
  if (cpu::hasGroupParams(t)) {
    if (group < 1 || headDim % group != 0 || (t == DType::I4 && group % 2 != 0))
      return Status::error(
          where + ": group " + std::to_string(group) + " must divide head_dim" +
          (t == DType::I4 ? std::string(" and be even") : std::string()));
  } else if (group != 0) {
    return Status::error(where + ": group " + std::to_string(group) +
                         " is only used by int8 and int4 caches; use 0");
  }
  return Status::success();
}

std::string typeTag(DType t, int group) {
  std::string s = cpu::dtypeName(t);
  if (cpu::hasGroupParams(t))
    s += "_g" + std::to_string(group);
  return s;
}

} // namespace

namespace {

/// The launch shape both paged attention kernels share.
Status checkAttentionLaunch(const std::string &where, int64_t blockSize,
                            int64_t queriesPerKv, int64_t threads) {
  if (blockSize < 1)
    return Status::error(where + ": block_size must be >= 1");
  if (queriesPerKv < 1 || queriesPerKv > 16)
    return Status::error(where + ": query heads per kv head " +
                         std::to_string(queriesPerKv) + " must be in [1, 16]");
  if (threads < 32 || threads > 1024 || threads % 32 != 0)
    return Status::error(where + ": threads " + std::to_string(threads) +
                         " must be a multiple of 32 in [32, 1024]");
  return Status::success();
}

Status checkSharedBytes(const std::string &where, size_t bytes,
                        const char *hint) {
  if (bytes <= kMaxDefaultSharedBytes)
    return Status::success();
  return Status::error(where + ": needs " + std::to_string(bytes) +
                       " bytes of shared memory, more than the " +
                       std::to_string(kMaxDefaultSharedBytes) +
                       " a launch gets by default; " + hint);
}

} // namespace

Status validate(const KVWriteSpec &s) {
  return checkCommon("kv_write", s.cacheType, s.headDim, s.numKvHeads, s.group);
}

Status validate(const PagedDecodeSpec &s) {
  Status st = checkCommon("paged decode attention", s.cacheType, s.headDim,
                          s.numKvHeads, s.group);
  if (!st.ok())
    return st;
  std::string where = "paged decode attention " + kernelName(s);
  st = checkAttentionLaunch(where, s.blockSize, s.queriesPerKv, s.threads);
  if (!st.ok())
    return st;
  if (s.partition < 1)
    return Status::error(where + ": partition must be >= 1 key");
  return checkSharedBytes(where, pagedDecodeSharedBytes(s),
                          "use a smaller partition");
}

Status validate(const PagedPrefillSpec &s) {
  Status st = checkCommon("paged prefill attention", s.cacheType, s.headDim,
                          s.numKvHeads, s.group);
  if (!st.ok())
    return st;
  std::string where = "paged prefill attention " + kernelName(s);
  st = checkAttentionLaunch(where, s.blockSize, s.queriesPerKv, s.threads);
  if (!st.ok())
    return st;
  if (s.queryTile < 1 || s.keyTile < 1)
    return Status::error(where + ": query tile " + std::to_string(s.queryTile) +
                         " and key tile " + std::to_string(s.keyTile) +
                         " must be >= 1");
  const long long rows = 1LL * s.queryTile * s.queriesPerKv;
  if (s.tensorCores) {
    if (s.headDim % 16 != 0 || s.keyTile % 16 != 0)
      return Status::error(
          where + ": tensor-core prefill needs head_dim (" +
          std::to_string(s.headDim) + ") and the key tile (" +
          std::to_string(s.keyTile) +
          ") to be multiples of 16 (mma.m16n8k16); the CUDA-core kernel "
          "takes any");
    const long long warps = (rows + 15) / 16;
    if (s.threads != 32 * warps)
      return Status::error(where +
                           ": tensor-core prefill runs one warp per 16 "
                           "of its " +
                           std::to_string(rows) +
                           " rows: " + std::to_string(32 * warps) +
                           " threads, not " + std::to_string(s.threads));
    // Each thread keeps q's fragments (head_dim / 4 registers), the output
    // (head_dim / 2 floats) and a key tile of scores (key tile / 2).
    const int regs = s.headDim / 4 + s.headDim / 2 + s.keyTile / 2;
    if (regs > kMaxPrefillMmaRegisters)
      return Status::error(
          where + ": q fragments, output and scores take " +
          std::to_string(regs) + " registers per thread, over the " +
          std::to_string(kMaxPrefillMmaRegisters) + "; use a smaller key tile");
  } else {
    // Each thread keeps its output tiles (4 rows x 8 columns each; see
    // PrefillLayout in Templates/PagedPrefill.cuh) in registers.
    long long tiles = (rows + 3) / 4 * ((s.headDim + 7) / 8);
    long long perThread = (tiles + s.threads - 1) / s.threads * 32;
    if (perThread > 128)
      return Status::error(where + ": an output tile of " +
                           std::to_string(perThread) +
                           " floats per thread is over the 128 kept in "
                           "registers; use a smaller query tile or more "
                           "threads");
  }
  return checkSharedBytes(where, pagedPrefillSharedBytes(s),
                          "use smaller tiles");
}

namespace {

const char *inputKindName(RowInputKind k) {
  switch (k) {
  case RowInputKind::Row:
    return "row";
  case RowInputKind::Vector:
    return "vector";
  case RowInputKind::Scalar:
    return "scalar";
  }
  return "?";
}

bool contains(const std::vector<std::string> &list, const std::string &x) {
  for (const std::string &y : list)
    if (y == x)
      return true;
  return false;
}

std::string joined(const std::vector<std::string> &list) {
  std::string s;
  for (const std::string &x : list)
    s += (s.empty() ? "" : ", ") + x;
  return s;
}

/// 32-bit FNV-1a as 8 hex digits: a short tag for a program in names.
std::string shortHash(const std::string &text) {
  uint32_t h = 2166136261u;
  for (char c : text)
    h = (h ^ uint8_t(c)) * 16777619u;
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", h);
  return buf;
}

/// Exact text of a double (hex float), so keys tell every constant apart.
std::string exact(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

} // namespace

const std::vector<std::string> &rowUnaryFunctions() {
  static const std::vector<std::string> fns = {
      "neg",        "abs",     "exp",  "tanh", "erf",      "sqrt",
      "reciprocal", "sigmoid", "relu", "silu", "gelu_erf", "gelu_tanh"};
  return fns;
}

const std::vector<std::string> &rowBinaryFunctions() {
  static const std::vector<std::string> fns = {"add", "sub", "mul", "div",
                                               "pow", "max", "min"};
  return fns;
}

Status validate(const RowKernelSpec &s) {
  std::string where =
      "row kernel " + s.label + " (dim " + std::to_string(s.dim) + ")";
  if (s.dim < 1)
    return Status::error(where + ": dim must be >= 1");
  if (s.threads < 32 || s.threads > 1024 || s.threads % 32 != 0)
    return Status::error(where + ": threads " + std::to_string(s.threads) +
                         " must be a multiple of 32 in [32, 1024]");
  if ((s.dim + s.threads - 1) / s.threads > 64)
    return Status::error(where + ": " +
                         std::to_string((s.dim + s.threads - 1) / s.threads) +
                         " elements per thread is over the 64 kept in "
                         "registers; use more threads");
  if (s.inputs.size() > size_t(kMaxRowInputs) || s.numOutputs < 1 ||
      s.numOutputs > kMaxRowOutputs)
    return Status::error(where + ": " + std::to_string(s.inputs.size()) +
                         " inputs and " + std::to_string(s.numOutputs) +
                         " outputs; supported: up to " +
                         std::to_string(kMaxRowInputs) + " inputs and 1 to " +
                         std::to_string(kMaxRowOutputs) + " outputs");
  std::vector<int> written(size_t(s.numOutputs), 0);
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const RowOp &op = s.ops[i];
    std::string at = where + ", op " + std::to_string(i);
    auto operand = [&](int x, bool optional) {
      return (optional && x == -1) ||
             (x >= 0 && size_t(x) < i &&
              s.ops[size_t(x)].kind != RowOpKind::Output);
    };
    bool ok = true;
    switch (op.kind) {
    case RowOpKind::Input:
      if (op.index < 0 || size_t(op.index) >= s.inputs.size())
        return Status::error(at + ": input " + std::to_string(op.index) +
                             " does not exist (the kernel has " +
                             std::to_string(s.inputs.size()) + ")");
      break;
    case RowOpKind::Constant:
      break;
    case RowOpKind::Unary:
      if (!contains(rowUnaryFunctions(), op.fn))
        return Status::error(at + ": unknown unary function '" + op.fn +
                             "'; supported: " + joined(rowUnaryFunctions()));
      ok = operand(op.a, false);
      break;
    case RowOpKind::Binary:
      if (!contains(rowBinaryFunctions(), op.fn))
        return Status::error(at + ": unknown binary function '" + op.fn +
                             "'; supported: " + joined(rowBinaryFunctions()));
      ok = operand(op.a, false) && operand(op.b, false);
      break;
    case RowOpKind::RmsNorm:
    case RowOpKind::LayerNorm:
      ok = operand(op.a, false) && operand(op.b, true) && operand(op.c, true) &&
           (op.kind == RowOpKind::LayerNorm || op.c == -1);
      if (ok && !(op.value >= 0.0 && op.value < 1.0))
        return Status::error(at + ": epsilon " + exact(op.value) +
                             " must be in [0, 1)");
      break;
    case RowOpKind::Output:
      if (op.index < 0 || op.index >= s.numOutputs)
        return Status::error(at + ": output " + std::to_string(op.index) +
                             " does not exist (the kernel has " +
                             std::to_string(s.numOutputs) + ")");
      ++written[size_t(op.index)];
      ok = operand(op.a, false);
      break;
    }
    if (!ok)
      return Status::error(at + ": an operand is not an earlier value");
  }
  for (size_t o = 0; o < written.size(); ++o)
    if (written[o] != 1)
      return Status::error(where + ": output " + std::to_string(o) +
                           " is written " + std::to_string(written[o]) +
                           " times; each output exactly once");
  return Status::success();
}

std::string canonicalProgram(const RowKernelSpec &s) {
  std::string t;
  for (size_t i = 0; i < s.inputs.size(); ++i)
    t += "in" + std::to_string(i) + "=" + inputKindName(s.inputs[i]) + ";";
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const RowOp &op = s.ops[i];
    std::string v = "v" + std::to_string(i) + "=";
    auto ref = [](int x) {
      return x < 0 ? std::string("_") : "v" + std::to_string(x);
    };
    switch (op.kind) {
    case RowOpKind::Input:
      t += v + "in(" + std::to_string(op.index) + ")";
      break;
    case RowOpKind::Constant:
      t += v + "const(" + exact(op.value) + ")";
      break;
    case RowOpKind::Unary:
      t += v + op.fn + "(" + ref(op.a) + ")";
      break;
    case RowOpKind::Binary:
      t += v + op.fn + "(" + ref(op.a) + "," + ref(op.b) + ")";
      break;
    case RowOpKind::RmsNorm:
      t += v + "rms_norm(" + ref(op.a) + "," + ref(op.b) +
           ",eps=" + exact(op.value) + ",offset=" + exact(op.weightOffset) +
           ")";
      break;
    case RowOpKind::LayerNorm:
      t += v + "layer_norm(" + ref(op.a) + "," + ref(op.b) + "," + ref(op.c) +
           ",eps=" + exact(op.value) + ")";
      break;
    case RowOpKind::Output:
      t += "out" + std::to_string(op.index) + "=" + ref(op.a);
      break;
    }
    t += ";";
  }
  return t;
}

Status validate(const RotarySpec &s) {
  std::string where = "rotary (head_dim " + std::to_string(s.headDim) +
                      ", rotary_dim " + std::to_string(s.rotaryDim) + ")";
  if (s.headDim < 1 || s.headDim > 512)
    return Status::error(where + ": head_dim must be in [1, 512]");
  if (s.rotaryDim < 2 || s.rotaryDim > s.headDim || s.rotaryDim % 2 != 0)
    return Status::error(where +
                         ": rotary_dim must be even and in [2, head_dim]");
  if (s.numHeads < 1)
    return Status::error(where + ": heads " + std::to_string(s.numHeads) +
                         " must be >= 1");
  return Status::success();
}

Status validate(const GatherSpec &s) {
  std::string where = std::string(s.embedding ? "embedding" : "gather_rows") +
                      " (dim " + std::to_string(s.dim) + ")";
  if (s.dim < 1)
    return Status::error(where + ": dim must be >= 1");
  if (s.threads < 32 || s.threads > 1024 || s.threads % 32 != 0)
    return Status::error(where + ": threads " + std::to_string(s.threads) +
                         " must be a multiple of 32 in [32, 1024]");
  if (!s.embedding && s.tableType != DType::F32)
    return Status::error(where + ": gather_rows reads f32 rows, not " +
                         cpu::dtypeName(s.tableType));
  const bool packed = s.tableType == DType::I8 ||
                      s.tableType == DType::FP8E4M3 || s.tableType == DType::I4;
  if (!cpu::isPlainFloat(s.tableType) && !packed)
    return Status::error(where + ": a " + cpu::dtypeName(s.tableType) +
                         " table is not generated; supported: f32, bf16, f16, "
                         "and a stored int8, fp8_e4m3 or int4 weight");
  if (s.tableType == DType::I4 ? !cpu::isInt4GroupSize(s.groupSize)
                               : s.groupSize != 0)
    return Status::error(where + ": group size " + std::to_string(s.groupSize) +
                         (s.tableType == DType::I4
                              ? " is not an int4 group (32, 64, 128)"
                              : " is for int4 tables only"));
  return Status::success();
}

Status validate(const SampleSpec &s) {
  if (s.threads < 32 || s.threads > 1024 || s.threads % 32 != 0)
    return Status::error("sampling: threads " + std::to_string(s.threads) +
                         " must be a multiple of 32 in [32, 1024]");
  return Status::success();
}

Status validate(const LinearSpec &s) {
  std::string where = std::string("linear (") + cpu::dtypeName(s.weightType) +
                      " weights, k " + std::to_string(s.k) + ")";
  switch (s.weightType) {
  case DType::F32:
  case DType::BF16:
  case DType::F16:
  case DType::I8:
  case DType::FP8E4M3:
  case DType::I4:
    break;
  default:
    return Status::error(where + ": " + cpu::dtypeName(s.weightType) +
                         " weights are not generated; supported: f32, bf16, "
                         "f16, int8, fp8_e4m3, int4");
  }
  // Row offsets are 64-bit, but k and the chunk indices are ints.
  if (s.k < 1 || s.k > (1 << 24))
    return Status::error(where + ": k must be in [1, 16777216]");
  if (s.weightType == DType::I4) {
    if (s.groupSize != 32 && s.groupSize != 64 && s.groupSize != 128)
      return Status::error(where + ": group size " +
                           std::to_string(s.groupSize) +
                           " is not one of 32, 64, 128");
  } else if (s.groupSize != 0) {
    return Status::error(where + ": group size " + std::to_string(s.groupSize) +
                         " given for weights without groups (int4 only)");
  }
  if (s.dequantToBf16 && s.weightType != DType::I8 &&
      s.weightType != DType::FP8E4M3 && s.weightType != DType::I4)
    return Status::error(where + ": dequantizing to bf16 takes int8, "
                                 "fp8_e4m3 or int4 weights");
  if (s.quantizeXToFp8 && (s.weightType != DType::FP8E4M3 || s.dequantToBf16))
    return Status::error(where + ": quantizing x to fp8 is for the GEMMs of "
                                 "fp8_e4m3 weights, and not with "
                                 "dequantToBf16");
  if (s.rowsPerPass < 1 || s.rowsPerPass > 16)
    return Status::error(where + ": rows per pass " +
                         std::to_string(s.rowsPerPass) + " must be in [1, 16]");
  if (s.outputsPerWarp < 1 || s.outputsPerWarp > 8)
    return Status::error(where + ": outputs per warp " +
                         std::to_string(s.outputsPerWarp) +
                         " must be in [1, 8]");
  if (s.threads < 32 || s.threads > 1024 || s.threads % 32 != 0)
    return Status::error(where + ": threads " + std::to_string(s.threads) +
                         " must be a multiple of 32 in [32, 1024]");
  return Status::success();
}

std::string kernelName(const KVWriteSpec &s) {
  return "folio_kv_write_" + typeTag(s.cacheType, s.group) + "_d" +
         std::to_string(s.headDim) + "_kv" + std::to_string(s.numKvHeads);
}

std::string kernelName(const PagedDecodeSpec &s) {
  return "folio_paged_decode_" + typeTag(s.cacheType, s.group) + "_d" +
         std::to_string(s.headDim) + "_b" + std::to_string(s.blockSize) +
         "_kv" + std::to_string(s.numKvHeads) + "_q" +
         std::to_string(s.queriesPerKv) + "_p" + std::to_string(s.partition) +
         "_t" + std::to_string(s.threads);
}

std::string combineKernelName(const PagedDecodeSpec &s) {
  return "folio_paged_decode_combine_d" + std::to_string(s.headDim) + "_t" +
         std::to_string(s.threads);
}

std::string kernelName(const PagedPrefillSpec &s) {
  return "folio_paged_prefill_" + typeTag(s.cacheType, s.group) + "_d" +
         std::to_string(s.headDim) + "_b" + std::to_string(s.blockSize) +
         "_kv" + std::to_string(s.numKvHeads) + "_q" +
         std::to_string(s.queriesPerKv) + "_m" + std::to_string(s.queryTile) +
         "_n" + std::to_string(s.keyTile) + "_t" + std::to_string(s.threads) +
         (s.tensorCores ? "_tc" : "");
}

std::string canonicalKey(const KVWriteSpec &s) {
  return "kv_write:cache=" + std::string(cpu::dtypeName(s.cacheType)) +
         ";head_dim=" + std::to_string(s.headDim) +
         ";kv_heads=" + std::to_string(s.numKvHeads) +
         ";group=" + std::to_string(s.group) + ";templates=" + templatesHash();
}

namespace {

/// The key fields both paged attention kernels take, in key order.
template <typename Spec> std::string attentionKeyFields(const Spec &s) {
  return std::string(cpu::dtypeName(s.cacheType)) +
         ";head_dim=" + std::to_string(s.headDim) +
         ";block_size=" + std::to_string(s.blockSize) +
         ";kv_heads=" + std::to_string(s.numKvHeads) +
         ";q_per_kv=" + std::to_string(s.queriesPerKv) +
         ";group=" + std::to_string(s.group);
}

} // namespace

std::string canonicalKey(const PagedDecodeSpec &s) {
  return "paged_decode:cache=" + attentionKeyFields(s) +
         ";partition=" + std::to_string(s.partition) +
         ";threads=" + std::to_string(s.threads) +
         ";templates=" + templatesHash();
}

std::string canonicalKey(const PagedPrefillSpec &s) {
  return "paged_prefill:cache=" + attentionKeyFields(s) +
         ";query_tile=" + std::to_string(s.queryTile) +
         ";key_tile=" + std::to_string(s.keyTile) +
         ";threads=" + std::to_string(s.threads) +
         ";products=" + (s.tensorCores ? "bf16_tensor_cores" : "f32") +
         ";templates=" + templatesHash();
}

std::string kernelName(const RowKernelSpec &s) {
  std::string label;
  for (char c : s.label)
    label += (std::isalnum(uint8_t(c)) ? char(std::tolower(uint8_t(c))) : '_');
  return "folio_row_" + label + "_d" + std::to_string(s.dim) + "_t" +
         std::to_string(s.threads) + "_" + shortHash(canonicalProgram(s));
}

std::string kernelName(const RotarySpec &s) {
  return std::string("folio_rotary_") +
         (s.interleaved ? "interleaved" : "half") + "_d" +
         std::to_string(s.headDim) + "_r" + std::to_string(s.rotaryDim) + "_h" +
         std::to_string(s.numHeads);
}

std::string kernelName(const GatherSpec &s) {
  return (s.embedding
              ? "folio_embedding_" + std::string(cpu::dtypeName(s.tableType))
              : std::string("folio_gather_rows")) +
         (s.groupSize ? "_g" + std::to_string(s.groupSize) : "") + "_d" +
         std::to_string(s.dim) + "_t" + std::to_string(s.threads);
}

namespace {

const char *sampleMode(const SampleSpec &s) {
  switch (s.mode) {
  case SampleMode::Greedy:
    return "greedy";
  case SampleMode::Draw:
    return "top_k_top_p";
  case SampleMode::Verify:
    return "verify_drafts";
  case SampleMode::Penalize:
    return "penalize";
  case SampleMode::Logprobs:
    return "logprobs";
  }
  return "?";
}

} // namespace

std::string kernelName(const SampleSpec &s) {
  return std::string("folio_sample_") + sampleMode(s) + "_t" +
         std::to_string(s.threads);
}

namespace {

std::string weightTag(const LinearSpec &s) {
  std::string t = cpu::dtypeName(s.weightType);
  if (s.weightType == DType::I4)
    t += "_g" + std::to_string(s.groupSize);
  return t;
}

/// How the kernel reads a row (LinearChunk in Linear.cuh): whole 16-byte
/// chunks, or one element at a time where k does not split into them. The
/// key names it so that kernels of one structure share their code.
const char *linearLoads(const LinearSpec &s) {
  if (s.weightType == DType::I4)
    return "int4_blocks";
  int bytes =
      cpu::isPlainFloat(s.weightType) ? cpu::dtypeBits(s.weightType) / 8 : 1;
  return s.k % (16 / bytes) == 0 ? "chunks16" : "elements";
}

} // namespace

std::string kernelName(const LinearSpec &s) {
  if (s.quantizeXToFp8)
    return "folio_quant_fp8_rows_k" + std::to_string(s.k) + "_t" +
           std::to_string(s.threads);
  if (s.dequantToBf16)
    return "folio_dequant_bf16_" + weightTag(s) + "_k" + std::to_string(s.k) +
           "_t" + std::to_string(s.threads);
  return "folio_linear_" + weightTag(s) + "_k" + std::to_string(s.k) + "_m" +
         std::to_string(s.rowsPerPass) + "_t" + std::to_string(s.threads) +
         (s.outputsPerWarp != 1 ? "_o" + std::to_string(s.outputsPerWarp)
                                : std::string());
}

std::string canonicalKey(const LinearSpec &s) {
  if (s.quantizeXToFp8)
    return "quant_fp8_rows:k=" + std::to_string(s.k) +
           ";threads=" + std::to_string(s.threads) +
           ";templates=" + templatesHash();
  if (s.dequantToBf16)
    return "dequant_bf16:weights=" + std::string(cpu::dtypeName(s.weightType)) +
           ";k=" + std::to_string(s.k) +
           ";group=" + std::to_string(s.groupSize) +
           ";threads=" + std::to_string(s.threads) +
           ";templates=" + templatesHash();
  return "linear:weights=" + std::string(cpu::dtypeName(s.weightType)) +
         ";k=" + std::to_string(s.k) + ";group=" + std::to_string(s.groupSize) +
         ";loads=" + linearLoads(s) +
         ";rows_per_pass=" + std::to_string(s.rowsPerPass) +
         ";threads=" + std::to_string(s.threads) +
         ";outputs_per_warp=" + std::to_string(s.outputsPerWarp) +
         ";templates=" + templatesHash();
}

std::string canonicalKey(const RowKernelSpec &s) {
  return "row:label=" + s.label + ";dim=" + std::to_string(s.dim) +
         ";threads=" + std::to_string(s.threads) +
         ";outputs=" + std::to_string(s.numOutputs) +
         ";program=" + canonicalProgram(s) + "templates=" + templatesHash();
}

std::string canonicalKey(const RotarySpec &s) {
  return "rotary:head_dim=" + std::to_string(s.headDim) +
         ";rotary_dim=" + std::to_string(s.rotaryDim) +
         ";style=" + (s.interleaved ? "interleaved" : "half_split") +
         ";heads=" + std::to_string(s.numHeads) +
         ";templates=" + templatesHash();
}

std::string canonicalKey(const GatherSpec &s) {
  return std::string(s.embedding ? "embedding" : "gather_rows") +
         ":table=" + cpu::dtypeName(s.tableType) +
         ";group=" + std::to_string(s.groupSize) +
         ";dim=" + std::to_string(s.dim) +
         ";threads=" + std::to_string(s.threads) +
         ";templates=" + templatesHash();
}

std::string canonicalKey(const SampleSpec &s) {
  return std::string("sample:mode=") + sampleMode(s) +
         ";threads=" + std::to_string(s.threads) +
         ";templates=" + templatesHash();
}

LaunchGeometry rowKernelLaunch(const RowKernelSpec &s, int64_t rows) {
  LaunchGeometry g;
  g.grid[0] = unsigned(rows);
  g.block[0] = unsigned(s.threads);
  return g;
}

LaunchGeometry rotaryLaunch(const RotarySpec &s, int64_t numTokens) {
  LaunchGeometry g;
  g.grid[0] = unsigned(numTokens);
  g.grid[1] = unsigned(s.numHeads);
  g.block[0] = unsigned((s.headDim / 2 + 31) / 32 * 32);
  return g;
}

LaunchGeometry gatherLaunch(const GatherSpec &s, int64_t numRows) {
  LaunchGeometry g;
  g.grid[0] = unsigned(numRows);
  g.block[0] = unsigned(s.threads);
  return g;
}

LaunchGeometry sampleLaunch(const SampleSpec &s, int64_t numRows) {
  LaunchGeometry g;
  g.grid[0] = unsigned(numRows);
  g.block[0] = unsigned(s.threads);
  return g;
}

const char *castTypeName(CastType t) {
  switch (t) {
  case CastType::F32:
    return "f32";
  case CastType::F16:
    return "f16";
  case CastType::BF16:
    return "bf16";
  case CastType::I32:
    return "i32";
  case CastType::I64:
    return "i64";
  }
  return "?";
}

Status validate(const CastSpec &s) {
  auto isInt = [](CastType t) {
    return t == CastType::I32 || t == CastType::I64;
  };
  if (isInt(s.from) != isInt(s.to))
    return Status::error(std::string("cast from ") + castTypeName(s.from) +
                         " to " + castTypeName(s.to) +
                         ": casts are within integers or within floats only");
  if (s.threads < 32 || s.threads > 1024 || s.threads % 32 != 0)
    return Status::error("cast: threads " + std::to_string(s.threads) +
                         " must be a multiple of 32 in [32, 1024]");
  return Status::success();
}

std::string kernelName(const CastSpec &s) {
  return std::string("folio_cast_") + castTypeName(s.from) + "_" +
         castTypeName(s.to) + "_t" + std::to_string(s.threads);
}

std::string canonicalKey(const CastSpec &s) {
  return std::string("cast:from=") + castTypeName(s.from) +
         ";to=" + castTypeName(s.to) + ";threads=" + std::to_string(s.threads) +
         ";templates=" + templatesHash();
}

LaunchGeometry castLaunch(const CastSpec &s, int64_t n) {
  LaunchGeometry g;
  g.grid[0] = unsigned((n + s.threads - 1) / s.threads);
  g.block[0] = unsigned(s.threads);
  return g;
}

LaunchGeometry linearLaunch(const LinearSpec &s, int64_t n) {
  LaunchGeometry g;
  if (s.dequantToBf16 || s.quantizeXToFp8) {
    g.grid[0] = unsigned(n);
    g.block[0] = unsigned(s.threads);
    return g;
  }
  int64_t perBlock = int64_t(s.threads / 32) * s.outputsPerWarp;
  g.grid[0] = unsigned((n + perBlock - 1) / perBlock);
  g.block[0] = unsigned(s.threads);
  return g;
}

LaunchGeometry kvWriteLaunch(const KVWriteSpec &s, int64_t numTokens) {
  LaunchGeometry g;
  g.grid[0] = unsigned(numTokens);
  g.grid[1] = unsigned(s.numKvHeads);
  g.block[0] = 32;
  return g;
}

size_t pagedDecodeSharedBytes(const PagedDecodeSpec &s) {
  // q [G][D] and scores [G][P] in f32, slots [P] in int32.
  return size_t(s.queriesPerKv) * (size_t(s.headDim) + size_t(s.partition)) *
             4 +
         size_t(s.partition) * 4;
}

PagedDecodeLaunch pagedDecodeLaunch(const PagedDecodeSpec &s, int64_t numTokens,
                                    int64_t maxContext) {
  PagedDecodeLaunch l;
  l.numPartitions = maxContext <= s.partition
                        ? 1
                        : int((maxContext + s.partition - 1) / s.partition);
  int64_t heads = int64_t(s.numKvHeads) * s.queriesPerKv;
  l.main.grid[0] = unsigned(s.numKvHeads);
  l.main.grid[1] = unsigned(numTokens);
  l.main.grid[2] = unsigned(l.numPartitions);
  l.main.block[0] = unsigned(s.threads);
  l.main.dynamicShared = pagedDecodeSharedBytes(s);
  l.combine.grid[0] = unsigned(heads);
  l.combine.grid[1] = unsigned(numTokens);
  l.combine.block[0] = unsigned(s.threads);
  if (l.numPartitions > 1) {
    l.statFloats = size_t(numTokens * heads * l.numPartitions);
    l.partialFloats = l.statFloats * size_t(s.headDim);
  }
  return l;
}

size_t pagedPrefillSharedBytes(const PagedPrefillSpec &s) {
  size_t r = size_t(s.queryTile) * size_t(s.queriesPerKv);
  size_t n = size_t(s.keyTile), d = size_t(s.headDim);
  if (s.tensorCores) {
    // bf16: the q tile (rows rounded up to the warps' 16), which the K
    // tile [N][D + 8] overwrites once q's fragments are in registers; V
    // transposed [D][N + 8]; then the slots [N] in int32. Rows 8 bf16
    // longer put a fragment load's 32 words in 32 banks.
    size_t rows = (r + 15) / 16 * 16;
    return 2 * (std::max(rows, n) * (d + 8) + d * (n + 8)) + 4 * n;
  }
  // q [R][D + 1], K [N][D + 1] (rows padded against bank conflicts), V
  // [N][D], scores [R][N + 1], max / sum / rescale [R] in f32, slots [N]
  // in int32, with R = queryTile * queriesPerKv rows.
  return 4 * (r * (d + 1) + n * (d + 1) + n * d + r * (n + 1) + 3 * r + n);
}

LaunchGeometry pagedPrefillLaunch(const PagedPrefillSpec &s, int64_t numSeqs,
                                  int64_t maxQueryLen) {
  LaunchGeometry g;
  g.grid[0] = unsigned(s.numKvHeads);
  g.grid[1] = unsigned((maxQueryLen + s.queryTile - 1) / s.queryTile);
  g.grid[2] = unsigned(numSeqs);
  g.block[0] = unsigned(s.threads);
  g.dynamicShared = pagedPrefillSharedBytes(s);
  return g;
}

PagedPrefillSpec defaultPagedPrefillSpec(DType cacheType, int headDim,
                                         int blockSize, int numKvHeads,
                                         int queriesPerKv, int group,
                                         bool tensorCores) {
  PagedPrefillSpec s;
  s.cacheType = cacheType;
  s.headDim = headDim;
  s.blockSize = blockSize;
  s.numKvHeads = numKvHeads;
  s.queriesPerKv = queriesPerKv;
  s.group = group;
  s.threads = 128;
  // About 64 query rows (tokens x heads) per block, then the largest key
  // tile that fits; halve the query tile while nothing fits.
  s.queryTile = queriesPerKv >= 64 ? 1 : 64 / queriesPerKv;
  if (tensorCores && headDim % 16 == 0) {
    PagedPrefillSpec t = s;
    t.tensorCores = true;
    for (;;) {
      t.threads = 32 * ((t.queryTile * queriesPerKv + 15) / 16);
      for (int n : {64, 32, 16}) {
        t.keyTile = n;
        if (validate(t).ok())
          return t;
      }
      if (t.queryTile == 1)
        break; // the CUDA-core kernel below, or why nothing fits
      t.queryTile /= 2;
    }
  }
  for (;;) {
    for (int n : {64, 32, 16, 8}) {
      s.keyTile = n;
      if (validate(s).ok())
        return s;
    }
    if (s.queryTile == 1)
      return s; // validate() says why nothing fits
    s.queryTile /= 2;
  }
}

} // namespace folio::cuda
