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

namespace {
enum class CacheElementKind { Unscaled, Fp8, Int, Unsupported };
} // namespace

static CacheElementKind classifyCacheElement(Type t) {
  if (t.isF32() || t.isF16() || t.isBF16())
    return CacheElementKind::Unscaled;
  if (isa<Float8E4M3FNType, Float8E5M2Type>(t))
    return CacheElementKind::Fp8;
  if (t.isSignlessInteger(8) || t.isSignlessInteger(4) ||
      t.isSignlessInteger(2))
    return CacheElementKind::Int;
  return CacheElementKind::Unsupported;
}

bool KVCacheType::isQuantized() const {
  CacheElementKind kind = classifyCacheElement(getDtype());
  return kind == CacheElementKind::Fp8 || kind == CacheElementKind::Int;
}

LogicalResult KVCacheType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  unsigned heads, unsigned headDim,
                                  unsigned block, Type dtype, ScaleLayout scale,
                                  unsigned residual) {
  if (heads == 0)
    return emitError() << "kv_cache heads must be positive";
  if (headDim == 0)
    return emitError() << "kv_cache head_dim must be positive";
  if (block == 0 || block > 256 || (block & (block - 1)) != 0)
    return emitError() << "kv_cache block size must be a power of two from 1 "
                          "to 256, got "
                       << block;

  CacheElementKind kind = classifyCacheElement(dtype);
  switch (kind) {
  case CacheElementKind::Unsupported:
    return emitError() << "kv_cache dtype " << dtype
                       << " is not supported; expected one of f32, f16, bf16, "
                          "f8E4M3FN, f8E5M2, i8, i4, i2";
  case CacheElementKind::Unscaled:
    if (scale != ScaleLayout::none)
      return emitError() << "kv_cache dtype " << dtype
                         << " is not quantized and takes no scale layout, got '"
                         << stringifyScaleLayout(scale) << "'";
    break;
  case CacheElementKind::Fp8:
    if (scale == ScaleLayout::kivi)
      return emitError() << "kv_cache scale 'kivi' needs an integer dtype "
                            "(i8, i4, i2), got "
                         << dtype;
    break;
  case CacheElementKind::Int:
    if (scale == ScaleLayout::none)
      return emitError() << "kv_cache dtype " << dtype
                         << " needs a scale layout (per_tensor, per_head, "
                            "per_token_head or kivi)";
    break;
  }

  if (residual != 0 && scale != ScaleLayout::kivi)
    return emitError() << "kv_cache residual window is only meaningful with "
                          "scale 'kivi'";
  if (residual % block != 0)
    return emitError() << "kv_cache KIVI residual window (" << residual
                       << ") must be a multiple of the block size (" << block
                       << ")";
  return success();
}
