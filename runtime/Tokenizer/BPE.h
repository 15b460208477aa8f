//===- BPE.h - Byte-pair-encoding model of a tokenizer.json ----*- C++ -*-===//
//
// The "model" object of a Hugging Face tokenizer.json with type BPE: the
// vocabulary, the ranked merges, and the merge loop of `tokenizers` (lowest
// rank first, leftmost first among equal ranks), plus its handling of
// characters missing from the vocabulary (byte fallback, unknown token,
// otherwise dropped).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_TOKENIZER_BPE_H
#define FOLIO_RUNTIME_TOKENIZER_BPE_H

#include "runtime/Support/Status.h"
#include "runtime/Support/Types.h"
#include "runtime/Tokenizer/Json.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace folio {

class BPEModel {
public:
  /// Ids above this are rejected: the reverse vocabulary is a dense table.
  static constexpr int64_t kMaxTokenId = (int64_t(1) << 24) - 1;

  /// Reads the "model" object; errors name the offending field
  /// ("model.merges[12]: ...").
  static Expected<BPEModel> fromJson(const json::Value &model);

  /// Appends the tokens of one pre-tokenized piece to \p out.
  void encodePiece(std::string_view piece, std::vector<TokenId> &out) const;

  std::optional<TokenId> tokenToId(std::string_view token) const;
  /// The token of \p id, or null when the vocabulary has no such id.
  const std::string *idToToken(TokenId id) const;
  size_t vocabSize() const { return vocab_.size(); }

private:
  struct Merge {
    int32_t rank;
    TokenId merged;
  };
  static uint64_t pairKey(TokenId a, TokenId b) {
    return (uint64_t(uint32_t(a)) << 32) | uint32_t(b);
  }
  const Merge *findMerge(TokenId a, TokenId b) const;

  std::unordered_map<std::string, TokenId> vocab_;
  std::vector<std::string> tokens_; // by id; absent ids are empty
  std::vector<bool> hasToken_;      // by id
  std::unordered_map<uint64_t, Merge> merges_;
  std::optional<TokenId> unkId_;
  bool fuseUnk_ = false;
  bool byteFallback_ = false;
  bool ignoreMerges_ = false;
};

} // namespace folio

#endif // FOLIO_RUNTIME_TOKENIZER_BPE_H
