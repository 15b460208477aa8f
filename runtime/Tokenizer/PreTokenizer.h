//===- PreTokenizer.h - Byte-level BPE pre-tokenization --------*- C++ -*-===//
//
// The pre-tokenizers byte-level BPE tokenizers use: the GPT-2 regex split
// (written out by hand, since std::regex has no \p{L}), the Digits split,
// and the ByteLevel step, which optionally adds a prefix space, splits with
// the GPT-2 regex and maps every byte to a printable character so that BPE
// works on characters that are all in the vocabulary.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_TOKENIZER_PRETOKENIZER_H
#define FOLIO_RUNTIME_TOKENIZER_PRETOKENIZER_H

#include <string>
#include <string_view>
#include <vector>

namespace folio {

/// The GPT-2 pattern as tokenizer.json spells it in a Split pre-tokenizer.
inline constexpr std::string_view kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|"
    "\\s+(?!\\S)|\\s+";

/// One step of a pre-tokenizer pipeline; steps apply to every piece the
/// previous steps produced, in order.
struct PreTokenizerStep {
  enum class Kind {
    ByteLevel, ///< prefix space (optional), GPT-2 split (optional), byte map
    SplitGpt2, ///< Split with kGpt2Pattern, behavior Isolated
    Digits,    ///< numbers isolated one by one, or as contiguous runs
  };
  Kind kind = Kind::ByteLevel;
  bool addPrefixSpace = false;   ///< ByteLevel
  bool useRegex = true;          ///< ByteLevel
  bool individualDigits = false; ///< Digits
};

/// Appends the matches of kGpt2Pattern in \p text (valid UTF-8) to \p out.
/// The matches cover the text exactly, so no text is lost.
void splitGpt2(std::string_view text, std::vector<std::string> &out);

/// Appends the pieces of the Digits pre-tokenizer: runs of non-numbers, and
/// numbers either one per piece or as runs.
void splitDigits(std::string_view text, bool individual,
                 std::vector<std::string> &out);

/// Runs \p steps over \p text (valid UTF-8) and returns the pieces; the
/// last step must be ByteLevel, so the pieces are byte-mapped.
std::vector<std::string>
preTokenize(std::string_view text, const std::vector<PreTokenizerStep> &steps);

/// GPT-2's bytes_to_unicode: the UTF-8 encoding of the character byte \p b
/// stands for.
std::string_view byteLevelChar(unsigned char b);

/// The byte that code point \p cp stands for, or -1 when \p cp is not one of
/// the 256 byte-level characters.
int byteLevelByte(char32_t cp);

} // namespace folio

#endif // FOLIO_RUNTIME_TOKENIZER_PRETOKENIZER_H
