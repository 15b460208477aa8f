//===- TestPasses.h - Registration of test-only passes ----------*- C++ -*-===//

#ifndef FOLIO_TEST_LIB_TESTPASSES_H
#define FOLIO_TEST_LIB_TESTPASSES_H

namespace mlir::folio::test {
void registerTestONNXShapesPass();

inline void registerTestPasses() { registerTestONNXShapesPass(); }
} // namespace mlir::folio::test

#endif // FOLIO_TEST_LIB_TESTPASSES_H
