//===- DeadOps.cpp - Drop what a rewrite left unused ----------------------===//

#include "compiler/ONNXOps/DeadOps.h"
#include "compiler/ONNXOps/ShapeInference.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

void mlir::folio::eraseDeadOps(func::FuncOp func, ONNXShapeInference *shapes) {
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (op != func.getOperation())
      ops.push_back(op);
  });
  for (Operation *op : llvm::reverse(ops))
    if (op->use_empty() && isMemoryEffectFree(op) &&
        !op->hasTrait<OpTrait::IsTerminator>()) {
      if (shapes)
        for (Value result : op->getResults())
          shapes->forget(result);
      op->erase();
    }
}
