//===- TextStream.h - One sample's text, token by token --------*- C++ -*-===//
//
// Streaming clients get text, not tokens, and a byte-level BPE token can
// end in the middle of a UTF-8 character, so text is decoded over a short
// window of tokens and released only once it ends on a whole character
// (vLLM's incremental detokenizer: prefix and read offsets).
//
// Stop strings are matched on the text, so they are found across token
// boundaries. Text that could still be the start of a stop string is held
// back until the next token decides; once a stop string appears, the text
// is cut just before it and the stream ends.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SERVER_TEXTSTREAM_H
#define FOLIO_RUNTIME_SERVER_TEXTSTREAM_H

#include "runtime/Support/Status.h"
#include "runtime/Tokenizer/Tokenizer.h"

#include <string>
#include <string_view>
#include <vector>

namespace folio::server {

class TextStream {
public:
  /// `stop` holds the stop strings (none may be empty). Special tokens
  /// (e.g. <|endoftext|>) decode to nothing.
  TextStream(const Tokenizer &tokenizer, std::vector<std::string> stop);

  /// Adds one generated token. Returns the text that became final: whole
  /// characters that can no longer be part of a stop string. After a stop
  /// string appeared, stopped() is true and further tokens add nothing.
  /// Fails on a token id the tokenizer does not know.
  Expected<std::string> append(TokenId token);

  /// At the end of generation: the text still held back (an unfinished
  /// character decodes to U+FFFD, as the tokenizer repairs it).
  Expected<std::string> flush();

  bool stopped() const { return stopped_; }
  /// All text so far, held-back text included; cut before the stop string
  /// once one appeared.
  const std::string &text() const { return text_; }

private:
  Status decodeNew(bool final);
  /// The length of text_ that may be released now.
  size_t releasable() const;

  const Tokenizer &tokenizer_;
  std::vector<std::string> stop_;
  std::vector<TokenId> tokens_;
  size_t prefixOffset_ = 0, readOffset_ = 0;
  std::string text_;
  size_t released_ = 0;
  bool stopped_ = false;
};

/// The characters of UTF-8 text `s` (its bytes that start one; an
/// unfinished character counts once).
size_t utf8Characters(std::string_view s);

} // namespace folio::server

#endif // FOLIO_RUNTIME_SERVER_TEXTSTREAM_H
