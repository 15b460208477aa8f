//===- QuantizeKV.cpp - Give the KV caches the configured dtype -----------===//
//
// page-kv builds every cache in the model's own element type; this pass
// gives each the dtype folio-set-target recorded on the module, with the
// scale layout its kernels read back exactly (the table in Passes.td).
// Static fp8 scales come from calibration data on the module, never from
// an implicit 1 that would clip silently: without calibration the pass uses
// a documented default and says so.
//
//===----------------------------------------------------------------------===//

#include "dialects/Folio/IR/FolioOps.h"
#include "dialects/Folio/IR/FolioTypes.h"
#include "dialects/Folio/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Debug.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#define DEBUG_TYPE "folio-quantize-kv"

namespace mlir::folio {
#define GEN_PASS_DEF_FOLIOQUANTIZEKVPASS
#include "dialects/Folio/Transforms/Passes.h.inc"
} // namespace mlir::folio

using namespace mlir;
using namespace mlir::folio;

namespace {

enum class CacheDType { F32, F16, BF16, FP8E4M3, FP8E5M2, Int8, Int4, Int2 };

constexpr StringLiteral kSupported =
    "f32, f16, bf16, fp8_e4m3, fp8_e5m2, int8, int4, int2";

/// The KIVI residual window when none is given: 128 tokens, rounded up to
/// whole blocks.
constexpr int64_t kDefaultResidual = 128;

std::optional<CacheDType> parseDType(StringRef name) {
  return llvm::StringSwitch<std::optional<CacheDType>>(name)
      .Case("f32", CacheDType::F32)
      .Case("f16", CacheDType::F16)
      .Case("bf16", CacheDType::BF16)
      .Case("fp8_e4m3", CacheDType::FP8E4M3)
      .Case("fp8_e5m2", CacheDType::FP8E5M2)
      .Case("int8", CacheDType::Int8)
      .Case("int4", CacheDType::Int4)
      .Case("int2", CacheDType::Int2)
      .Default(std::nullopt);
}

/// The largest even divisor of `n` that is at most `limit`; 0 when `n` has
/// no even divisor (it is odd).
int64_t largestEvenDivisor(int64_t n, int64_t limit) {
  for (int64_t g = std::min(n, limit) / 2 * 2; g >= 2; g -= 2)
    if (n % g == 0)
      return g;
  return 0;
}

bool isFP8(CacheDType d) {
  return d == CacheDType::FP8E4M3 || d == CacheDType::FP8E5M2;
}

/// Largest finite magnitude of the fp8 formats (OCP FP8: E4M3FN 448,
/// E5M2 57344).
float fp8Max(CacheDType d) {
  return d == CacheDType::FP8E4M3 ? 448.f : 57344.f;
}

/// A float as a person writes it ("-2", "nan"), not "-2.000000e+00".
std::string num(float value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

/// The calibrated abs-max of K or V of one layer and head, if given.
class Calibration {
public:
  /// Reads `folio.kv_calibration`; fails with a diagnostic when it is
  /// present but of the wrong type, shape or values.
  static FailureOr<Calibration> read(ModuleOp module,
                                     ArrayRef<KVCacheType> caches) {
    Calibration c;
    Attribute attr = module->getAttr(kKVCalibrationAttrName);
    if (!attr)
      return c;
    auto dense = dyn_cast<DenseFPElementsAttr>(attr);
    if (!dense || !dense.getElementType().isF32()) {
      module.emitError() << kKVCalibrationAttrName
                         << " must be a dense f32 tensor [layers, 2, "
                            "kv_heads], got "
                         << attr;
      return failure();
    }
    ArrayRef<int64_t> shape = dense.getType().getShape();
    int64_t layers = int64_t(caches.size());
    int64_t heads = caches.empty() ? 0 : caches.front().getHeads();
    bool sameHeads = llvm::all_of(
        caches, [&](KVCacheType t) { return int64_t(t.getHeads()) == heads; });
    if (shape.size() != 3 || shape[0] != layers || shape[1] != 2 ||
        shape[2] != heads || !sameHeads) {
      module.emitError() << kKVCalibrationAttrName << " has shape [" << shape
                         << "] but the model's KV caches need [" << layers
                         << ", 2, " << heads << "] (layers, K and V, kv_heads)";
      return failure();
    }
    c.values.assign(dense.getValues<float>().begin(),
                    dense.getValues<float>().end());
    c.heads = heads;
    for (int64_t i = 0, e = int64_t(c.values.size()); i < e; ++i) {
      float x = c.values[size_t(i)];
      if (std::isfinite(x) && x >= 0)
        continue;
      module.emitError() << kKVCalibrationAttrName << " of layer "
                         << i / (2 * heads) << ", "
                         << ((i / heads) % 2 ? "V" : "K") << " head "
                         << i % heads << " is " << num(x)
                         << "; an abs-max must be finite and >= 0";
      return failure();
    }
    return c;
  }

  bool present() const { return !values.empty(); }

  float absMax(int64_t layer, int kv, int64_t head) const {
    return values[size_t((layer * 2 + kv) * heads + head)];
  }

private:
  std::vector<float> values;
  int64_t heads = 0;
};

struct QuantizeKVPass
    : mlir::folio::impl::FolioQuantizeKVPassBase<QuantizeKVPass> {
  using FolioQuantizeKVPassBase::FolioQuantizeKVPassBase;

  void runOnOperation() override;

private:
  /// The cache type layer `layer` gets, or failure (diagnosed).
  FailureOr<KVCacheType> targetType(func::FuncOp func, unsigned layer,
                                    KVCacheType from, CacheDType dtype,
                                    bool skipped);
  /// Per-head scales of one layer's K (kv = 0) or V (kv = 1).
  Value scaleConstant(OpBuilder &b, Location loc, const Calibration &calib,
                      CacheDType dtype, int64_t layer, int kv,
                      KVCacheType cache);
};

FailureOr<KVCacheType>
QuantizeKVPass::targetType(func::FuncOp func, unsigned layer, KVCacheType from,
                           CacheDType dtype, bool skipped) {
  MLIRContext *ctx = func.getContext();
  auto make = [&](Type element, ScaleLayout scale, unsigned group = 0,
                  unsigned residual = 0) {
    return KVCacheType::get(ctx, from.getHeads(), from.getHeadDim(),
                            from.getBlock(), element, scale, residual, group);
  };
  bool quantized = dtype != CacheDType::F32 && dtype != CacheDType::F16 &&
                   dtype != CacheDType::BF16;
  if (skipped && quantized)
    return make(BFloat16Type::get(ctx), ScaleLayout::none);
  switch (dtype) {
  case CacheDType::F32:
    // Explicitly f32: page-kv's caches have the model's element type, which
    // is f16 or bf16 for a half-precision export.
    return make(Float32Type::get(ctx), ScaleLayout::none);
  case CacheDType::F16:
    return make(Float16Type::get(ctx), ScaleLayout::none);
  case CacheDType::BF16:
    return make(BFloat16Type::get(ctx), ScaleLayout::none);
  case CacheDType::FP8E4M3:
    return make(Float8E4M3FNType::get(ctx), ScaleLayout::per_head);
  case CacheDType::FP8E5M2:
    return make(Float8E5M2Type::get(ctx), ScaleLayout::per_head);
  case CacheDType::Int8:
    return make(IntegerType::get(ctx, 8), ScaleLayout::per_token_head);
  case CacheDType::Int4: {
    int64_t headDim = from.getHeadDim();
    // 0: the default, the largest even divisor of head_dim up to 32 (32
    // for the usual power-of-two heads; 20 for head_dim 80, 24 for 48, 28
    // for 112).
    int64_t group = groupSize;
    if (groupSize == 0)
      group = largestEvenDivisor(headDim, 32);
    if (group > 0 && group % 2 == 0 && headDim % group == 0)
      return make(IntegerType::get(ctx, 4), ScaleLayout::per_token_group,
                  unsigned(group));
    InFlightDiagnostic diag = func.emitError()
                              << "int4 KV cache of layer " << layer << ": ";
    if (groupSize == 0) {
      // Only an odd head_dim has no even divisor.
      diag << "head_dim " << headDim
           << " has no even divisor, so no int4 group fits (a group is an "
              "even number of elements that divides head_dim)";
      return failure();
    }
    std::string allowed;
    for (int64_t g = 2; g <= headDim; g += 2)
      if (headDim % g == 0)
        allowed += (allowed.empty() ? "" : ", ") + std::to_string(g);
    diag << "group-size " << group << " must be even and divide head_dim "
         << headDim << "; ";
    if (allowed.empty())
      diag << "head_dim " << headDim << " has no even divisor";
    else
      diag << "allowed: " << allowed;
    return failure();
  }
  case CacheDType::Int2: {
    // KIVI: keys per channel over one block (the block is KIVI's key
    // group), values per token over `group` channels, the newest
    // `residual` tokens in full precision.
    int64_t headDim = from.getHeadDim();
    int64_t block = from.getBlock();
    auto fail = [&]() -> InFlightDiagnostic {
      return func.emitError() << "int2 KV cache of layer " << layer << ": ";
    };
    if (headDim % 4 != 0) {
      fail() << "head_dim " << headDim
             << " is not a multiple of 4 (four 2-bit elements per byte)";
      return failure();
    }
    int64_t window = residual;
    if (residual == 0)
      window = (kDefaultResidual + block - 1) / block * block;
    // The window lives outside the KV block budget (the runtime keeps it
    // in f32): a small part of a context, as in KIVI (32 to 128 tokens).
    constexpr int64_t kMaxResidual = 8192;
    if (window <= 0 || window % block != 0 || window > kMaxResidual) {
      fail() << "residual " << int64_t(residual)
             << " must be a positive multiple of the block size " << block
             << " up to " << kMaxResidual << " tokens";
      return failure();
    }
    // 0: as for int4, the largest even divisor of head_dim up to 32 (one
    // always exists: head_dim is a multiple of 4).
    int64_t group =
        groupSize == 0 ? largestEvenDivisor(headDim, 32) : groupSize;
    if (group <= 0 || headDim % group != 0) {
      std::string allowed;
      for (int64_t g = 1; g <= headDim; ++g)
        if (headDim % g == 0)
          allowed += (allowed.empty() ? "" : ", ") + std::to_string(g);
      fail() << "group-size " << group << " must divide head_dim " << headDim
             << "; allowed: " << allowed;
      return failure();
    }
    return make(IntegerType::get(ctx, 2), ScaleLayout::kivi, unsigned(group),
                unsigned(window));
  }
  }
  llvm_unreachable("every cache dtype is handled");
}

Value QuantizeKVPass::scaleConstant(OpBuilder &b, Location loc,
                                    const Calibration &calib, CacheDType dtype,
                                    int64_t layer, int kv, KVCacheType cache) {
  float range = fp8Max(dtype);
  SmallVector<float> scales;
  for (int64_t h = 0, e = cache.getHeads(); h < e; ++h) {
    // Default: 1.0 keeps |x| <= range exact in range. A head whose abs-max
    // is 0 (or so small the quotient is not a normal float) takes any
    // positive scale; 1 / range is what an abs-max of 1 would give.
    float scale = 1.0f;
    if (calib.present()) {
      scale = calib.absMax(layer, kv, h) / range;
      if (!(scale >= std::numeric_limits<float>::min()))
        scale = 1.0f / range;
    }
    scales.push_back(scale);
  }
  auto type =
      RankedTensorType::get({int64_t(cache.getHeads())}, b.getF32Type());
  return b.create<arith::ConstantOp>(
      loc, DenseElementsAttr::get(type, ArrayRef<float>(scales)));
}

void QuantizeKVPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto dtypeAttr = module->getAttrOfType<StringAttr>(kKVCacheDTypeAttrName);
  if (!dtypeAttr) {
    module.emitError() << "folio-quantize-kv needs the module's "
                       << kKVCacheDTypeAttrName << " (run folio-set-target)";
    return signalPassFailure();
  }
  std::optional<CacheDType> dtype = parseDType(dtypeAttr.getValue());
  if (!dtype) {
    module.emitError() << "unknown " << kKVCacheDTypeAttrName << " '"
                       << dtypeAttr.getValue()
                       << "'; supported: " << kSupported;
    return signalPassFailure();
  }
  if (residual != 0 && *dtype != CacheDType::Int2) {
    module.emitError() << "residual " << int64_t(residual)
                       << " is the full-precision window of an int2 (KIVI) "
                          "cache; the KV cache dtype here is "
                       << dtypeAttr.getValue();
    return signalPassFailure();
  }
  auto func = module.lookupSymbol<func::FuncOp>("forward");
  if (!func || func.isExternal()) {
    module.emitError("no 'forward' entry: the module has not been through "
                     "folio-page-kv");
    return signalPassFailure();
  }

  // Layer N is the N-th cache argument (page-kv's kv_cache.N).
  SmallVector<BlockArgument> cacheArgs;
  SmallVector<KVCacheType> caches;
  for (BlockArgument arg : func.getArguments())
    if (auto t = dyn_cast<KVCacheType>(arg.getType())) {
      cacheArgs.push_back(arg);
      caches.push_back(t);
    }
  int64_t numLayers = int64_t(caches.size());
  llvm::SmallDenseSet<int64_t> skipped;
  for (int64_t layer : skipLayers) {
    if (layer < 0 || layer >= numLayers) {
      module.emitError() << "skip-layers names layer " << layer
                         << ", but the model has " << numLayers
                         << " layers with a KV cache (0 to " << numLayers - 1
                         << ")";
      return signalPassFailure();
    }
    skipped.insert(layer);
  }

  Calibration calib;
  if (isFP8(*dtype)) {
    FailureOr<Calibration> read = Calibration::read(module, caches);
    if (failed(read))
      return signalPassFailure();
    calib = std::move(*read);
    bool anyFP8 = llvm::any_of(llvm::seq<int64_t>(0, numLayers),
                               [&](int64_t l) { return !skipped.contains(l); });
    if (!calib.present() && anyFP8)
      module.emitWarning()
          << "no KV-cache calibration data (" << kKVCalibrationAttrName
          << "): the " << dtypeAttr.getValue()
          << " caches use the default scale 1.0, which keeps |K| and |V| up "
             "to "
          << int64_t(fp8Max(*dtype))
          << " and clips beyond; calibrate with folioc --calibration-data "
             "FILE";
  }

  OpBuilder b(func.getBody());
  for (auto [layer, arg, from] : llvm::enumerate(cacheArgs, caches)) {
    FailureOr<KVCacheType> to = targetType(func, unsigned(layer), from, *dtype,
                                           skipped.contains(int64_t(layer)));
    if (failed(to))
      return signalPassFailure();
    if (*to == from)
      continue;
    if (from.isQuantized() || from.getScale() != ScaleLayout::none) {
      func.emitError() << "KV cache of layer " << layer
                       << " is already quantized (" << from
                       << "); folio-quantize-kv retypes page-kv's caches once";
      return signalPassFailure();
    }
    for (Operation *user : arg.getUsers())
      if (!isa<KVWriteOp, PagedAttentionOp>(user)) {
        user->emitError() << "uses the KV cache of layer " << layer
                          << "; folio-quantize-kv runs before folio-fuse, "
                             "where only kv_write and paged_attention do";
        return signalPassFailure();
      }
    LLVM_DEBUG(llvm::dbgs()
               << "layer " << layer << ": " << from << " -> " << *to << "\n");
    arg.setType(*to);
    if (!to->hasStaticScales())
      continue;
    std::string name = "kv_cache." + std::to_string(layer);
    Value kScale = scaleConstant(
        b, NameLoc::get(b.getStringAttr(name + ".k_scale"), func.getLoc()),
        calib, *dtype, int64_t(layer), 0, *to);
    Value vScale = scaleConstant(
        b, NameLoc::get(b.getStringAttr(name + ".v_scale"), func.getLoc()),
        calib, *dtype, int64_t(layer), 1, *to);
    for (Operation *user : arg.getUsers()) {
      if (auto write = dyn_cast<KVWriteOp>(user)) {
        write.getKScaleMutable().assign(kScale);
        write.getVScaleMutable().assign(vScale);
      } else {
        auto read = cast<PagedAttentionOp>(user);
        read.getKScaleMutable().assign(kScale);
        read.getVScaleMutable().assign(vScale);
      }
    }
  }
  func.setType(FunctionType::get(
      &getContext(), func.getBody().getArgumentTypes(), func.getResultTypes()));
}

} // namespace
