//===- Npy.h - Writing a float32 NumPy array --------------------*- C++ -*-===//

#ifndef FOLIO_TOOLS_FOLIO_RUN_NPY_H
#define FOLIO_TOOLS_FOLIO_RUN_NPY_H

#include "runtime/Support/Status.h"

#include <string>
#include <vector>

namespace folio::run {

/// Writes `data` as a C-order float32 .npy (format 1.0) of `shape`.
Status writeNpyF32(const std::string &path, const std::vector<float> &data,
                   const std::vector<int64_t> &shape);

} // namespace folio::run

#endif // FOLIO_TOOLS_FOLIO_RUN_NPY_H
