//===- Types.h - Vocabulary types shared across the runtime ----*- C++ -*-===//

#ifndef FOLIO_RUNTIME_SUPPORT_TYPES_H
#define FOLIO_RUNTIME_SUPPORT_TYPES_H

#include <cstdint>
#include <string>

namespace folio {

/// A vocabulary index; i32 because that is the `tokens[T]` dtype of the
/// serving contract.
using TokenId = int32_t;

/// An index into the KV block pool; i32 as in `block_tables[S, max_blocks]`.
using BlockId = int32_t;

/// Block 0 is never handed out: padding entries of `block_tables` point to
/// it, so a kernel that reads past a sequence's end reads harmless memory.
inline constexpr BlockId kNullBlockId = 0;

/// Requests are named by the client (OpenAI ids), so ids are strings.
using RequestId = std::string;

} // namespace folio

#endif // FOLIO_RUNTIME_SUPPORT_TYPES_H
