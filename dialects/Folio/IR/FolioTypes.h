//===- FolioTypes.h - folio dialect types -----------------------*- C++ -*-===//

#ifndef FOLIO_IR_FOLIOTYPES_H
#define FOLIO_IR_FOLIOTYPES_H

#include "dialects/Folio/IR/FolioDialect.h"
#include "mlir/IR/BuiltinTypes.h"

#define GET_TYPEDEF_CLASSES
#include "dialects/Folio/IR/FolioTypes.h.inc"

#endif // FOLIO_IR_FOLIOTYPES_H
