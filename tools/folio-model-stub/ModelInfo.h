//===- ModelInfo.h - What a model binary says about its model ---*- C++ -*-===//
//
// The model's configuration as a model binary's --help prints it, read from
// the plan alone (the runtime has no compiler to ask): vocabulary, layers,
// heads, head_dim, KV block size and dtype, maximum positions.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_FOLIO_MODEL_STUB_MODELINFO_H
#define FOLIO_TOOLS_FOLIO_MODEL_STUB_MODELINFO_H

#include "runtime/Plan/Plan.h"

#include <string>

namespace folio::tools {

/// One "  key  value" line per configuration fact of `plan`, and the
/// longest sequence it serves by default.
std::string describeModelConfig(const plan::Plan &plan);

} // namespace folio::tools

#endif // FOLIO_TOOLS_FOLIO_MODEL_STUB_MODELINFO_H
