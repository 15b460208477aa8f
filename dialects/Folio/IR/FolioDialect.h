//===- FolioDialect.h - The folio dialect -----------------------*- C++ -*-===//

#ifndef FOLIO_IR_FOLIODIALECT_H
#define FOLIO_IR_FOLIODIALECT_H

#include "mlir/IR/Dialect.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/Folio/IR/FolioDialect.h.inc"
#include "dialects/Folio/IR/FolioEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Folio/IR/FolioAttrs.h.inc"

namespace mlir::folio {

/// The paged KV memory of a layer. Ops that read or write a
/// `!folio.kv_cache` declare their effects on this resource.
struct KVCacheResource : public SideEffects::Resource::Base<KVCacheResource> {
  StringRef getName() final { return "<KVCache>"; }
};

} // namespace mlir::folio

#endif // FOLIO_IR_FOLIODIALECT_H
