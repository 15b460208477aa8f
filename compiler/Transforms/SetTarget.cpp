//===- SetTarget.cpp - Record the compile configuration on the module -----===//

#include "compiler/Target/Target.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#define DEBUG_TYPE "folio-set-target"

namespace mlir::folio {
#define GEN_PASS_DEF_FOLIOSETTARGETPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::folio

using namespace mlir;
using namespace mlir::folio;

namespace {

struct SetTargetPass
    : mlir::folio::impl::FolioSetTargetPassBase<SetTargetPass> {
  using FolioSetTargetPassBase::FolioSetTargetPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<::folio::Target> parsedTarget = ::folio::parseTarget(target);
    if (!parsedTarget) {
      module.emitError() << "unknown target '" << target
                         << "'; supported: " << ::folio::supportedTargets();
      return signalPassFailure();
    }
    std::optional<::folio::KVCacheDType> requested =
        ::folio::parseKVCacheDType(kvCacheDtype);
    if (!requested) {
      module.emitError() << "unknown kv-cache-dtype '" << kvCacheDtype
                         << "'; supported: "
                         << ::folio::supportedKVCacheDTypes();
      return signalPassFailure();
    }
    ::folio::KVCacheDType dtype =
        ::folio::resolveKVCacheDType(*parsedTarget, *requested);
    int64_t block = ::folio::resolveBlockSize(dtype, blockSize);
    if (!::folio::isValidBlockSize(block)) {
      module.emitError() << "block-size must be a power of two from 1 to 256, "
                            "got "
                         << block;
      return signalPassFailure();
    }

    Builder b(module.getContext());
    NamedAttribute attrs[] = {
        b.getNamedAttr(kTargetAttrName,
                       b.getStringAttr(::folio::targetName(*parsedTarget))),
        b.getNamedAttr(kKVCacheDTypeAttrName,
                       b.getStringAttr(::folio::kvCacheDTypeName(dtype))),
        b.getNamedAttr(kBlockSizeAttrName, b.getI64IntegerAttr(block)),
    };
    // A module compiled for one configuration must not silently be
    // re-targeted: its caches and kernels were specialised for it.
    for (const NamedAttribute &attr : attrs) {
      Attribute existing = module->getAttr(attr.getName());
      if (existing && existing != attr.getValue()) {
        module.emitError() << "module is already configured with "
                           << attr.getName() << " = " << existing
                           << "; refusing to change it to " << attr.getValue();
        return signalPassFailure();
      }
    }
    for (const NamedAttribute &attr : attrs)
      module->setAttr(attr.getName(), attr.getValue());
  }
};

} // namespace
