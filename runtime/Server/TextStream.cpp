//===- TextStream.cpp - One sample's text, token by token -----------------===//

#include "runtime/Server/TextStream.h"

#include <algorithm>

using namespace folio;
using namespace folio::server;

namespace {

/// The tokenizer's repair of an incomplete UTF-8 sequence.
const std::string kReplacement = "\xEF\xBF\xBD";

bool endsWithReplacement(const std::string &s) {
  return s.size() >= kReplacement.size() &&
         s.compare(s.size() - kReplacement.size(), kReplacement.size(),
                   kReplacement) == 0;
}

bool isContinuationByte(char c) { return (uint8_t(c) & 0xC0) == 0x80; }

} // namespace

size_t folio::server::utf8Characters(std::string_view s) {
  size_t n = 0;
  for (char c : s)
    n += !isContinuationByte(c);
  return n;
}

TextStream::TextStream(const Tokenizer &tokenizer,
                       std::vector<std::string> stop)
    : tokenizer_(tokenizer), stop_(std::move(stop)) {}

Status TextStream::decodeNew(bool final) {
  std::vector<TokenId> window(tokens_.begin() + long(prefixOffset_),
                              tokens_.end());
  Expected<std::string> all =
      tokenizer_.decode(window, /*skipSpecialTokens=*/true);
  if (!all)
    return all.status();
  std::vector<TokenId> prefix(tokens_.begin() + long(prefixOffset_),
                              tokens_.begin() + long(readOffset_));
  Expected<std::string> known =
      tokenizer_.decode(prefix, /*skipSpecialTokens=*/true);
  if (!known)
    return known.status();
  // Wait for the rest of a character unless generation is over.
  if (all->size() <= known->size() || (!final && endsWithReplacement(*all)))
    return Status::ok();
  size_t searchFrom = text_.size();
  text_ += all->substr(known->size());
  prefixOffset_ = readOffset_;
  readOffset_ = tokens_.size();

  // The earliest stop string that the new text completes.
  size_t cut = std::string::npos;
  for (const std::string &s : stop_) {
    size_t from = searchFrom >= s.size() - 1 ? searchFrom - (s.size() - 1) : 0;
    size_t at = text_.find(s, from);
    if (at != std::string::npos)
      cut = std::min(cut, at);
  }
  if (cut != std::string::npos) {
    text_.resize(cut);
    stopped_ = true;
  }
  return Status::ok();
}

size_t TextStream::releasable() const {
  if (stopped_)
    return text_.size();
  size_t end = text_.size();
  // Hold back the longest suffix that some stop string starts with.
  for (size_t at = released_; at < text_.size(); ++at) {
    size_t length = text_.size() - at;
    bool prefixOfStop =
        std::any_of(stop_.begin(), stop_.end(), [&](const std::string &s) {
          return s.size() > length &&
                 s.compare(0, length, text_, at, length) == 0;
        });
    if (prefixOfStop) {
      end = at;
      break;
    }
  }
  while (end > released_ && end < text_.size() &&
         isContinuationByte(text_[end]))
    --end;
  return end;
}

Expected<std::string> TextStream::append(TokenId token) {
  if (stopped_)
    return std::string();
  tokens_.push_back(token);
  if (Status s = decodeNew(/*final=*/false); !s)
    return s;
  size_t end = releasable();
  std::string out = text_.substr(released_, end - released_);
  released_ = end;
  return out;
}

Expected<std::string> TextStream::flush() {
  if (!stopped_ && readOffset_ < tokens_.size())
    if (Status s = decodeNew(/*final=*/true); !s)
      return s;
  std::string out = text_.substr(released_);
  released_ = text_.size();
  return out;
}
