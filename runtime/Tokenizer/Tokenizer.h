//===- Tokenizer.h - Hugging Face byte-level BPE tokenizers ----*- C++ -*-===//
//
// Reads a Hugging Face `tokenizer.json` describing a byte-level BPE
// tokenizer of GPT-2's shape (GPT-2's own, the bundled model's) and encodes
// and decodes exactly as `tokenizers` does:
//
//   added tokens (special or not) are split out first, leftmost-longest;
//   the rest goes through the pre-tokenizer (ByteLevel, optionally after a
//   GPT-2 Split and/or Digits in a Sequence), then BPE;
//   decoding maps byte-level characters back to bytes and repairs invalid
//   UTF-8 with U+FFFD.
//
// A loaded Tokenizer is immutable: encode and decode are const, keep no
// cache, and may run concurrently.
//
// Anything else a tokenizer.json may hold (normalizers, other models,
// template post-processors, truncation, padding) is rejected with a message
// naming the field, rather than silently tokenized differently.
// See docs/tokenizer.md.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_TOKENIZER_TOKENIZER_H
#define FOLIO_RUNTIME_TOKENIZER_TOKENIZER_H

#include "runtime/Support/Status.h"
#include "runtime/Support/Types.h"
#include "runtime/Tokenizer/BPE.h"
#include "runtime/Tokenizer/PreTokenizer.h"

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace folio {

/// One entry of tokenizer.json's "added_tokens".
struct AddedToken {
  TokenId id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false; ///< the match absorbs whitespace on its left
  bool rstrip = false; ///< ... and on its right
  bool normalized = false;
};

class Tokenizer {
public:
  /// Parses the text of a tokenizer.json.
  static Expected<Tokenizer> fromJson(std::string_view jsonText);
  /// Reads and parses a tokenizer.json file.
  static Expected<Tokenizer> fromFile(const std::string &path);

  /// The token ids of \p text; fails only when \p text is not valid UTF-8.
  /// No BOS/EOS are added (the supported post-processors add none).
  Expected<std::vector<TokenId>> encode(std::string_view text) const;

  /// The text of \p ids. With \p skipSpecialTokens, special added tokens are
  /// left out (`tokenizers`' default in Python). Unlike `tokenizers`, which
  /// silently skips ids it does not know, an unknown id is an error.
  Expected<std::string> decode(const std::vector<TokenId> &ids,
                               bool skipSpecialTokens = false) const;

  /// Model vocabulary plus added tokens that are not in it.
  size_t vocabSize() const { return vocabSize_; }
  std::optional<TokenId> tokenToId(std::string_view token) const;
  std::optional<std::string> idToToken(TokenId id) const;
  /// Whether \p id is an added token marked special (e.g. <|endoftext|>).
  bool isSpecial(TokenId id) const;
  const std::vector<AddedToken> &addedTokens() const { return added_; }

private:
  Tokenizer() = default;

  /// Splits \p text around added tokens; pieces with id >= 0 are added
  /// tokens, the others still need pre-tokenization.
  struct Segment {
    std::string_view text;
    TokenId id;
  };
  void splitAdded(std::string_view text, bool normalizedPass,
                  std::vector<Segment> &out) const;
  const AddedToken *findAdded(TokenId id) const;

  BPEModel model_;
  std::vector<PreTokenizerStep> preTokenizer_;
  std::vector<AddedToken> added_;
  std::unordered_map<TokenId, size_t> addedById_; // index into added_
  std::unordered_set<std::string> specialContents_;
  size_t vocabSize_ = 0;
};

} // namespace folio

#endif // FOLIO_RUNTIME_TOKENIZER_TOKENIZER_H
