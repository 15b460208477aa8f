//===- ModelBinary.h - The model embedded in a serving binary ---*- C++ -*-===//
//
// `folioc --emit=binary` copies the serving stub (folio-model-stub, an ELF
// executable) and appends the model to it; the stub finds the model in its
// own file (/proc/self/exe) at start. Layout of the result:
//
//   [0, S)          the stub's ELF image, unchanged (S: where the image's
//                   program headers, sections and section table end)
//   [S, P)          zeros; P = S rounded up to kPayloadAlignment
//   P               payload header (kPayloadHeaderBytes, little-endian):
//     P+0   "FOLIOBIN"          magic
//     P+8   u32 version         kModelBinaryVersion
//     P+12  u32 headerBytes     kPayloadHeaderBytes
//     P+16  u64 stubBytes       S
//     P+24  u64 fileBytes       the whole binary, trailer included
//     P+32  5 x {u64 offset, u64 bytes, u64 hash}: plan, tokenizer,
//           tokenizer config, chat template, manifest (offsets from the
//           start of the file; hash: planHash of the section, 0 for the
//           plan, whose .folio header carries its own checksums)
//     P+152 u64 headerHash      planHash of [P, P+152)
//   P + kPayloadAlignment  the .folio plan, byte for byte, so that it is
//                   mapped in place at a page-aligned offset (readPlanAt)
//   then            tokenizer.json, tokenizer_config.json and
//                   chat_template.jinja (each empty when the model has
//                   none) and the manifest, back to back
//   last 16 bytes   trailer: u64 P, "FOLIOEND"
//
// The start of the payload follows from the ELF image alone, so a binary cut
// short (no trailer any more) is told apart from a bare stub (no bytes past
// its image), and every check names the byte offset at fault. Stripping a
// model binary drops its payload: strip the stub before folioc copies it.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_COMMON_MODELBINARY_H
#define FOLIO_TOOLS_COMMON_MODELBINARY_H

#include "runtime/Plan/PlanIO.h"
#include "runtime/Support/Status.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace folio::tools {

inline constexpr char kPayloadMagic[9] = "FOLIOBIN";
inline constexpr char kTrailerMagic[9] = "FOLIOEND";
inline constexpr uint32_t kModelBinaryVersion = 1;
inline constexpr uint64_t kPayloadHeaderBytes = 160;
inline constexpr uint64_t kTrailerBytes = 16;
/// The payload and the plan start at multiples of this: 64 KiB covers the
/// page sizes of x86-64 (4 KiB) and of arm64 kernels (4, 16 or 64 KiB), so
/// the plan maps in place on all of them.
inline constexpr uint64_t kPayloadAlignment = 65536;

/// What a model binary says about itself, as `key=value` lines: the model's
/// name (the served name by default), the ONNX file it was compiled from
/// and the compile target.
struct ModelManifest {
  std::string name, source, target;

  std::string serialize() const;
  /// Refuses lines without '=', unknown keys and a missing or empty name.
  static Expected<ModelManifest> parse(const std::string &text);
};

struct ModelBinarySection {
  uint64_t offset = 0, bytes = 0, hash = 0;
};

struct ModelBinaryLayout {
  uint64_t stubBytes = 0, payloadOffset = 0, fileBytes = 0;
  ModelBinarySection plan, tokenizer, tokenizerConfig, chatTemplate, manifest;
};

/// Where the ELF image of the file `path` ends (see above); errors when the
/// file is not a complete 64-bit little-endian ELF file.
Expected<uint64_t> elfImageBytes(const std::string &path);

/// Reads and checks the payload header and trailer of `path`. A file with
/// nothing past its ELF image fails with StatusCode::NotFound; every other
/// failure (truncated, bytes appended, a bad magic, version, offset or
/// checksum) with InvalidArgument, naming the byte offset at fault.
Expected<ModelBinaryLayout> readModelBinaryLayout(const std::string &path);

/// The small sections of a model binary, read and checked against their
/// hashes; the plan stays in the file, to be mapped by loadEmbeddedPlan.
struct EmbeddedModel {
  ModelBinaryLayout layout;
  std::string tokenizerJson;
  std::string tokenizerConfigJson; ///< empty: the model shipped none
  std::string chatTemplateJinja;   ///< likewise
  ModelManifest manifest;
};
Expected<EmbeddedModel> readEmbeddedModel(const std::string &path);

/// Maps the plan of `model` from `path` in place (readPlanAt).
Expected<plan::Plan> loadEmbeddedPlan(const std::string &path,
                                      const EmbeddedModel &model,
                                      const plan::ReadPlanOptions &options);

struct ModelBinaryContents {
  std::string planBytes; ///< a .folio artifact (serializePlan)
  std::string tokenizerJson;
  std::string tokenizerConfigJson; ///< may be empty
  std::string chatTemplateJinja;   ///< may be empty
  ModelManifest manifest;
};

/// Writes `stubPath` followed by `contents` to `outPath`, atomically (a
/// temporary file in the same directory, renamed into place) and
/// executable (mode 0755). The stub must be a bare ELF executable.
Status writeModelBinary(const std::string &stubPath,
                        const ModelBinaryContents &contents,
                        const std::string &outPath);

} // namespace folio::tools

#endif // FOLIO_TOOLS_COMMON_MODELBINARY_H
