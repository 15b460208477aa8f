//===- EmitBinary.h - folioc --emit=binary ----------------------*- C++ -*-===//
//
// Writes one executable that serves the compiled model with no other file:
// the serving stub (folio-model-stub, installed next to folioc) with the
// plan, the tokenizer (with the tokenizer_config.json and
// chat_template.jinja that lie beside it) and a manifest appended
// (tools/common/ModelBinary.h).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_FOLIOC_EMITBINARY_H
#define FOLIO_TOOLS_FOLIOC_EMITBINARY_H

#include "runtime/Plan/Plan.h"
#include "runtime/Support/Status.h"

#include <string>

namespace folio::tools {

struct EmitBinaryOptions {
  std::string modelPath;     ///< the .onnx compiled (named in the manifest)
  std::string target;        ///< the compile target (likewise)
  std::string tokenizerPath; ///< tokenizer.json
  /// folio-model-stub; empty: the one next to the running folioc, found
  /// from `argv0`.
  std::string stubPath;
  std::string argv0;
  std::string outputPath; ///< its stem is the model's name
};

/// Checks the tokenizer against `plan` (its ids must fit the logits) and
/// writes the binary atomically with mode 0755.
Status emitModelBinary(const plan::Plan &plan,
                       const EmitBinaryOptions &options);

} // namespace folio::tools

#endif // FOLIO_TOOLS_FOLIOC_EMITBINARY_H
