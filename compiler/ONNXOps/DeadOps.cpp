//===- DeadOps.cpp - Drop what a rewrite left unused ----------------------===//

#include "compiler/ONNXOps/DeadOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

void mlir::folio::eraseDeadOps(func::FuncOp func) {
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (op != func.getOperation())
      ops.push_back(op);
  });
  for (Operation *op : llvm::reverse(ops))
    if (op->use_empty() && isMemoryEffectFree(op) &&
        !op->hasTrait<OpTrait::IsTerminator>())
      op->erase();
}
