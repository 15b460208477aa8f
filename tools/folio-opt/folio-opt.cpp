//===- folio-opt.cpp - Run folio passes on MLIR files ---------------------===//

#include "compiler/Registration/RegisterAll.h"
#include "test/lib/TestPasses.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::folio::registerFolioDialects(registry);
  mlir::folio::registerFolioPassesAndPipelines();
  mlir::folio::test::registerTestPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Folio optimizer driver\n", registry));
}
