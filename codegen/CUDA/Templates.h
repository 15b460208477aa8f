//===- Templates.h - The embedded CUDA kernel templates ---------*- C++ -*-===//
//
// The .cuh files of codegen/CUDA/Templates, embedded at build time so a
// generated kernel source is self-contained.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CUDA_TEMPLATES_H
#define FOLIO_CODEGEN_CUDA_TEMPLATES_H

#include <string_view>
#include <vector>

namespace folio::cuda {

/// The text of template `name` (e.g. "Prelude.cuh"); null if there is none.
const char *embeddedTemplate(std::string_view name);

/// Every embedded template, in the build's order: what a kernel's key
/// hashes, so that editing any of them changes every key.
const std::vector<const char *> &embeddedTemplateNames();

} // namespace folio::cuda

#endif // FOLIO_CODEGEN_CUDA_TEMPLATES_H
