//===- FolioTypes.cpp - folio dialect types -------------------------------===//

#include "dialects/Folio/IR/FolioTypes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::folio;

#define GET_TYPEDEF_CLASSES
#include "dialects/Folio/IR/FolioTypes.cpp.inc"

void FolioDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/Folio/IR/FolioTypes.cpp.inc"
      >();
}

bool KVCacheType::isQuantized() const {
  Type t = getDtype();
  return !(t.isF32() || t.isF16() || t.isBF16());
}

bool KVCacheType::hasStaticScales() const {
  return getScale() == ScaleLayout::per_tensor ||
         getScale() == ScaleLayout::per_head;
}

/// The layouts each dtype may take: what a kernel can read back exactly.
/// fp8 takes static scales only (per-token fp8 buys nothing over int8);
/// i4 needs groups to stay accurate, i2 KIVI. (i4 with KIVI is refused
/// until something can run it.)
static LogicalResult
verifyScaleLayout(function_ref<InFlightDiagnostic()> emitError, Type dtype,
                  ScaleLayout scale, unsigned headDim, unsigned block,
                  unsigned residual, unsigned group) {
  auto fail = [&](StringRef allowed) {
    return emitError() << "kv_cache dtype " << dtype << " takes scale "
                       << allowed << ", got '" << stringifyScaleLayout(scale)
                       << "'";
  };
  bool isStatic =
      scale == ScaleLayout::per_tensor || scale == ScaleLayout::per_head;
  if (dtype.isF32() || dtype.isF16() || dtype.isBF16()) {
    if (scale != ScaleLayout::none)
      return emitError() << "kv_cache dtype " << dtype
                         << " is not quantized and takes no scale layout, got '"
                         << stringifyScaleLayout(scale) << "'";
  } else if (isa<Float8E4M3FNType, Float8E5M2Type>(dtype)) {
    if (scale == ScaleLayout::none)
      return emitError() << "kv_cache dtype " << dtype
                         << " needs a static scale (per_head or per_tensor), "
                            "never an implicit scale of 1";
    if (!isStatic)
      return fail("per_head or per_tensor");
  } else if (dtype.isSignlessInteger(8)) {
    if (!isStatic && scale != ScaleLayout::per_token_head &&
        scale != ScaleLayout::per_token_group)
      return fail("per_token_head, per_token_group, per_head or per_tensor");
  } else if (dtype.isSignlessInteger(4)) {
    if (scale != ScaleLayout::per_token_group)
      return fail("per_token_group");
  } else if (dtype.isSignlessInteger(2)) {
    if (scale != ScaleLayout::kivi)
      return fail("kivi");
  } else {
    return emitError() << "kv_cache dtype " << dtype
                       << " is not supported; expected one of f32, f16, bf16, "
                          "f8E4M3FN, f8E5M2, i8, i4, i2";
  }

  if (scale == ScaleLayout::kivi) {
    // Keys per channel over a block of tokens, values per token over
    // groups of `group` channels; the newest `residual` tokens stay in full
    // precision outside the pool.
    if (residual == 0)
      return emitError() << "kv_cache scale 'kivi' needs a residual window "
                            "(residual > 0, a multiple of the block size "
                         << block << ")";
    if (group == 0 || headDim % group != 0)
      return emitError() << "kv_cache scale 'kivi' needs a value group that "
                            "divides head_dim ("
                         << headDim << "), got " << group;
    if (headDim % 4 != 0)
      return emitError() << "kv_cache i2 head_dim must be a multiple of 4 "
                            "(four elements per byte), got "
                         << headDim;
    return success();
  }
  if (scale != ScaleLayout::per_token_group) {
    if (group != 0)
      return emitError() << "kv_cache group (" << group
                         << ") is only meaningful with scale "
                            "'per_token_group' or 'kivi'";
    return success();
  }
  if (group == 0 || headDim % group != 0)
    return emitError() << "kv_cache scale 'per_token_group' needs a group "
                          "that divides head_dim ("
                       << headDim << "), got " << group;
  if (dtype.isSignlessInteger(4) && group % 2 != 0)
    return emitError() << "kv_cache i4 group must be even (two elements per "
                          "byte), got "
                       << group;
  return success();
}

LogicalResult KVCacheType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  unsigned heads, unsigned headDim,
                                  unsigned block, Type dtype, ScaleLayout scale,
                                  unsigned residual, unsigned group) {
  if (heads == 0)
    return emitError() << "kv_cache heads must be positive";
  if (headDim == 0)
    return emitError() << "kv_cache head_dim must be positive";
  if (block == 0 || block > 256 || (block & (block - 1)) != 0)
    return emitError() << "kv_cache block size must be a power of two from 1 "
                          "to 256, got "
                       << block;
  if (residual != 0 && scale != ScaleLayout::kivi)
    return emitError() << "kv_cache residual window is only meaningful with "
                          "scale 'kivi'";
  if (residual % block != 0)
    return emitError() << "kv_cache KIVI residual window (" << residual
                       << ") must be a multiple of the block size (" << block
                       << ")";
  return verifyScaleLayout(emitError, dtype, scale, headDim, block, residual,
                           group);
}
