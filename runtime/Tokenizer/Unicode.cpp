//===- Unicode.cpp - UTF-8 and GPT-2 regex character classes
//---------------===//

#include "runtime/Tokenizer/Unicode.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

namespace folio {
namespace unicode {

namespace {

/// The range of valid second bytes after lead byte \p lead (Unicode Table
/// 3-7); excludes overlongs, surrogates and values above U+10FFFF.
void secondByteRange(unsigned char lead, unsigned char &lo, unsigned char &hi) {
  lo = 0x80;
  hi = 0xBF;
  if (lead == 0xE0)
    lo = 0xA0;
  else if (lead == 0xED)
    hi = 0x9F;
  else if (lead == 0xF0)
    lo = 0x90;
  else if (lead == 0xF4)
    hi = 0x8F;
}

/// The length a lead byte announces; 0 for bytes that cannot start a
/// sequence (continuations, C0, C1, F5..FF).
size_t sequenceLength(unsigned char lead) {
  if (lead < 0x80)
    return 1;
  if (lead >= 0xC2 && lead <= 0xDF)
    return 2;
  if (lead >= 0xE0 && lead <= 0xEF)
    return 3;
  if (lead >= 0xF0 && lead <= 0xF4)
    return 4;
  return 0;
}

/// How many bytes from \p pos form a valid prefix of a sequence (the
/// "maximal subpart"); equals the sequence length when it is complete.
size_t validPrefix(std::string_view text, size_t pos, size_t &length) {
  auto lead = static_cast<unsigned char>(text[pos]);
  length = sequenceLength(lead);
  if (length <= 1)
    return length;
  size_t n = 1;
  unsigned char lo, hi;
  secondByteRange(lead, lo, hi);
  while (n < length && pos + n < text.size()) {
    auto b = static_cast<unsigned char>(text[pos + n]);
    if (b < lo || b > hi)
      break;
    lo = 0x80;
    hi = 0xBF;
    ++n;
  }
  return n;
}

struct ClassRange {
  char32_t first;
  char32_t last;
  CharClass cls;
};

constexpr ClassRange kClassRanges[] = {
#include "runtime/Tokenizer/UnicodeTables.inc"
};

} // namespace

bool decodeUtf8(std::string_view text, size_t &pos, char32_t &cp) {
  if (pos >= text.size())
    return false;
  size_t length;
  if (validPrefix(text, pos, length) != length || length == 0)
    return false;
  auto lead = static_cast<unsigned char>(text[pos]);
  static constexpr unsigned char kLeadMask[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  char32_t value = lead & kLeadMask[length];
  for (size_t i = 1; i < length; ++i)
    value = (value << 6) | (static_cast<unsigned char>(text[pos + i]) & 0x3F);
  cp = value;
  pos += length;
  return true;
}

void appendUtf8(std::string &out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

size_t findInvalidUtf8(std::string_view text) {
  size_t pos = 0;
  char32_t cp;
  while (pos < text.size()) {
    if (!decodeUtf8(text, pos, cp))
      return pos;
  }
  return std::string_view::npos;
}

std::string repairUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t length;
    size_t valid = validPrefix(bytes, pos, length);
    if (length != 0 && valid == length) {
      out.append(bytes.substr(pos, length));
      pos += length;
      continue;
    }
    appendUtf8(out, 0xFFFD);
    pos += std::max<size_t>(valid, 1);
  }
  return out;
}

CharClass classify(char32_t cp) {
  if (cp < 0x80) {
    if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z'))
      return CharClass::Letter;
    if (cp >= '0' && cp <= '9')
      return CharClass::Number;
    if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D))
      return CharClass::Whitespace;
    return CharClass::Other;
  }
  auto it = std::upper_bound(
      std::begin(kClassRanges), std::end(kClassRanges), cp,
      [](char32_t c, const ClassRange &r) { return c < r.first; });
  if (it == std::begin(kClassRanges))
    return CharClass::Other;
  --it;
  return cp <= it->last ? it->cls : CharClass::Other;
}

} // namespace unicode
} // namespace folio
