//===- FolioDialect.cpp - folio dialect registration ----------------------===//

#include "dialects/Folio/IR/FolioDialect.h"
#include "dialects/Folio/IR/FolioOps.h"
#include "dialects/Folio/IR/FolioTypes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::folio;

#include "dialects/Folio/IR/FolioDialect.cpp.inc"
#include "dialects/Folio/IR/FolioEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Folio/IR/FolioAttrs.cpp.inc"

void FolioDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Folio/IR/FolioAttrs.cpp.inc"
      >();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "dialects/Folio/IR/FolioOps.cpp.inc"
      >();
}
