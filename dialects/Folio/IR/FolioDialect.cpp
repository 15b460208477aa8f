//===- FolioDialect.cpp - folio dialect registration ----------------------===//

#include "Folio/IR/FolioDialect.h"
#include "Folio/IR/FolioOps.h"
#include "Folio/IR/FolioTypes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::folio;

#include "Folio/IR/FolioDialect.cpp.inc"
#include "Folio/IR/FolioEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "Folio/IR/FolioAttrs.cpp.inc"

void FolioDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "Folio/IR/FolioAttrs.cpp.inc"
      >();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "Folio/IR/FolioOps.cpp.inc"
      >();
}
