//===- Unicode.h - UTF-8 and the character classes of GPT-2's regex -*- C++
//-*-===//
//
// UTF-8 decoding and encoding, Rust's lossy UTF-8 repair (what
// `tokenizers` applies after byte-level decoding), and the four character
// classes the GPT-2 pre-tokenizer regex distinguishes: \p{L}, \p{N}, \s
// and everything else. The class table is generated from Unicode 14.0
// (Python 3.11's unicodedata) by gen_unicode_tables.py, the version of the
// Oniguruma engine inside `tokenizers` 0.21; see docs/tokenizer.md.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_TOKENIZER_UNICODE_H
#define FOLIO_RUNTIME_TOKENIZER_UNICODE_H

#include <cstddef>
#include <string>
#include <string_view>

namespace folio {
namespace unicode {

/// Decodes the scalar value starting at \p pos and advances \p pos past it.
/// Returns false (leaving \p pos unchanged) on an invalid or truncated
/// sequence, an overlong form, a surrogate or a value above U+10FFFF.
bool decodeUtf8(std::string_view text, size_t &pos, char32_t &cp);

/// Appends the UTF-8 encoding of scalar value \p cp.
void appendUtf8(std::string &out, char32_t cp);

/// The byte offset of the first invalid UTF-8 sequence, or npos.
size_t findInvalidUtf8(std::string_view text);

/// Replaces every maximal invalid subsequence with U+FFFD, as Rust's
/// String::from_utf8_lossy does (the Unicode "maximal subpart" practice).
std::string repairUtf8(std::string_view bytes);

/// The classes of the GPT-2 pre-tokenizer regex.
enum class CharClass : unsigned char {
  Other,      ///< [^\s\p{L}\p{N}]
  Letter,     ///< \p{L}: Lu, Ll, Lt, Lm, Lo
  Number,     ///< \p{N}: Nd, Nl, No
  Whitespace, ///< \s as Oniguruma defines it: U+0009-000D, U+0085, Zs, Zl, Zp
};

CharClass classify(char32_t cp);

} // namespace unicode
} // namespace folio

#endif // FOLIO_RUNTIME_TOKENIZER_UNICODE_H
