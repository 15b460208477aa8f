//===- RegisterAll.h - The dialects and passes Folio uses ---*- C++ -*-===//
//
// Only what Folio uses: InitAllDialects.h would cost a minute and 2.5 GB of
// compile per tool and drag every upstream dialect into folio-opt.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_COMPILER_REGISTRATION_REGISTERALL_H
#define FOLIO_COMPILER_REGISTRATION_REGISTERALL_H

#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Raise/Passes.h"
#include "compiler/RaiseAttention/Passes.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/Folio/IR/FolioDialect.h"
#include "dialects/Folio/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::folio {

inline void registerFolioDialects(DialectRegistry &registry) {
  registry.insert<FolioDialect, arith::ArithDialect, func::FuncDialect,
                  math::MathDialect, tensor::TensorDialect>();
}

inline void registerFolioPassesAndPipelines() {
  registerFolioPasses();
  registerFolioCompilerPasses();
  registerFolioRaisePasses();
  registerFolioRaiseAttentionPasses();
  registerFolioPipelines();
  // canonicalize, cse, inline, symbol-dce, ...: what tests and pipelines use.
  registerTransformsPasses();
}

} // namespace mlir::folio

#endif // FOLIO_COMPILER_REGISTRATION_REGISTERALL_H
