//===- Target.h - Compilation targets and KV-cache dtypes -------*- C++ -*-===//
//
// The names users type (`--target=sm_90a`, `--kv-cache-dtype=auto`) and the
// one rule that turns `auto` into a concrete cache dtype. Plain C++ so that
// the compiler, the runtime and the tools agree without linking MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TARGET_TARGET_H
#define FOLIO_TARGET_TARGET_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace folio {

enum class Target { CPU, SM80, SM86, SM89, SM90a };

enum class KVCacheDType {
  Auto,
  F32,
  F16,
  BF16,
  FP8E4M3,
  FP8E5M2,
  Int8,
  Int4,
  Int2
};

std::optional<Target> parseTarget(std::string_view name);
std::string_view targetName(Target target);
/// "cpu, sm_80, sm_86, sm_89, sm_90a": for error messages and --help.
std::string supportedTargets();

/// True for GPUs with hardware FP8 conversions (Ada sm_89, Hopper sm_90a).
bool hasHardwareFP8(Target target);

std::optional<KVCacheDType> parseKVCacheDType(std::string_view name);
std::string_view kvCacheDTypeName(KVCacheDType dtype);
std::string supportedKVCacheDTypes();

/// Resolves `auto` to the default cache dtype of `target`: fp8_e4m3 where the
/// GPU converts FP8 in hardware, int8 everywhere else (the CPU and Ampere,
/// where int8 dequantization is cheaper than emulated FP8). Any other
/// request is returned unchanged.
KVCacheDType resolveKVCacheDType(Target target, KVCacheDType requested);

/// Bits per stored cache element.
unsigned kvCacheDTypeBits(KVCacheDType dtype);

/// The stored weight dtypes `folioc --weight-dtype` takes, for messages and
/// for the tools that pass the flag on to folioc.
inline constexpr const char *kWeightDtypeNames =
    "f32, bf16, f16, int8, fp8_e4m3, int4";
bool isWeightDtypeName(std::string_view name);

/// KV block sizes are powers of two from 1 to 256 tokens.
bool isValidBlockSize(int64_t blockSize);

/// The block size for a resolved cache dtype when none was asked for (0):
/// 32 for int2, whose keys are quantized per channel over a block (KIVI's
/// group of 32 tokens; their scales then cost under 0.10x of an f32
/// cache), 16 otherwise. A requested size is returned unchanged.
int64_t resolveBlockSize(KVCacheDType resolved, int64_t requested);

} // namespace folio

#endif // FOLIO_TARGET_TARGET_H
