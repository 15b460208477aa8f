//===- PreTokenizer.cpp - Byte-level BPE pre-tokenization
//------------------===//

#include "runtime/Tokenizer/PreTokenizer.h"

#include "runtime/Tokenizer/Unicode.h"

#include <array>
#include <cassert>

namespace folio {

using unicode::CharClass;

namespace {

/// The text as code points with their byte offsets (offsets has one extra
/// entry: the text's size).
struct CodePoints {
  std::vector<char32_t> cps;
  std::vector<CharClass> classes;
  std::vector<size_t> offsets;

  explicit CodePoints(std::string_view text) {
    size_t pos = 0;
    while (pos < text.size()) {
      offsets.push_back(pos);
      char32_t cp = 0xFFFD;
      if (!unicode::decodeUtf8(text, pos, cp)) {
        assert(false && "pre-tokenizers take valid UTF-8");
        ++pos;
      }
      cps.push_back(cp);
      classes.push_back(unicode::classify(cp));
    }
    offsets.push_back(text.size());
  }
  size_t size() const { return cps.size(); }
};

/// The end of the GPT-2 match starting at code point \p i, following the
/// pattern's alternatives in order (the regex engine takes the first
/// alternative that matches, not the longest).
size_t matchGpt2(const CodePoints &t, size_t i) {
  const size_t n = t.size();
  auto isClass = [&](size_t k, CharClass c) {
    return k < n && t.classes[k] == c;
  };
  auto runOf = [&](size_t k, CharClass c) {
    while (k < n && t.classes[k] == c)
      ++k;
    return k;
  };
  // 's|'t|'re|'ve|'m|'ll|'d (lower case only, as in GPT-2)
  if (t.cps[i] == '\'' && i + 1 < n) {
    char32_t a = t.cps[i + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd')
      return i + 2;
    if (i + 2 < n) {
      char32_t b = t.cps[i + 2];
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') ||
          (a == 'l' && b == 'l'))
        return i + 3;
    }
  }
  //  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+  (the optional prefix is U+0020
  // only; a space that prefixes nothing is left to the whitespace rules)
  size_t start =
      t.cps[i] == ' ' && i + 1 < n && t.classes[i + 1] != CharClass::Whitespace
          ? i + 1
          : i;
  for (CharClass c : {CharClass::Letter, CharClass::Number, CharClass::Other})
    if (isClass(start, c))
      return runOf(start, c);
  // \s+(?!\S): the whitespace run, less its last character when a
  // non-space follows (that character then prefixes the next match), as
  // long as one character remains; otherwise \s+ takes the whole run.
  assert(t.classes[i] == CharClass::Whitespace);
  size_t end = runOf(i, CharClass::Whitespace);
  if (end < n && end - i >= 2)
    return end - 1;
  return end;
}

struct ByteLevelTables {
  std::array<std::string, 256> charOfByte;
  std::array<int, 324> byteOfChar; // byte-level chars are all below U+0144

  ByteLevelTables() {
    byteOfChar.fill(-1);
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
                       (b >= 0xAE && b <= 0xFF);
      char32_t cp = printable ? static_cast<char32_t>(b) : 256 + extra++;
      unicode::appendUtf8(charOfByte[b], cp);
      byteOfChar[cp] = b;
    }
  }
};

const ByteLevelTables &byteLevelTables() {
  static const ByteLevelTables tables;
  return tables;
}

} // namespace

void splitGpt2(std::string_view text, std::vector<std::string> &out) {
  CodePoints t(text);
  size_t i = 0;
  while (i < t.size()) {
    size_t end = matchGpt2(t, i);
    out.emplace_back(text.substr(t.offsets[i], t.offsets[end] - t.offsets[i]));
    i = end;
  }
}

void splitDigits(std::string_view text, bool individual,
                 std::vector<std::string> &out) {
  CodePoints t(text);
  size_t i = 0;
  while (i < t.size()) {
    bool number = t.classes[i] == CharClass::Number;
    size_t end = i + 1;
    if (!number || !individual)
      while (end < t.size() && (t.classes[end] == CharClass::Number) == number)
        ++end;
    out.emplace_back(text.substr(t.offsets[i], t.offsets[end] - t.offsets[i]));
    i = end;
  }
}

std::string_view byteLevelChar(unsigned char b) {
  return byteLevelTables().charOfByte[b];
}

int byteLevelByte(char32_t cp) {
  const auto &table = byteLevelTables().byteOfChar;
  return cp < table.size() ? table[cp] : -1;
}

std::vector<std::string>
preTokenize(std::string_view text, const std::vector<PreTokenizerStep> &steps) {
  assert(!steps.empty() &&
         steps.back().kind == PreTokenizerStep::Kind::ByteLevel &&
         "the pipeline ends with ByteLevel");
  std::vector<std::string> pieces{std::string(text)};
  std::vector<std::string> next;
  for (const PreTokenizerStep &step : steps) {
    next.clear();
    for (std::string &piece : pieces) {
      switch (step.kind) {
      case PreTokenizerStep::Kind::ByteLevel:
        if (step.addPrefixSpace && (piece.empty() || piece[0] != ' '))
          piece.insert(piece.begin(), ' ');
        if (step.useRegex)
          splitGpt2(piece, next);
        else
          next.push_back(std::move(piece));
        break;
      case PreTokenizerStep::Kind::SplitGpt2:
        splitGpt2(piece, next);
        break;
      case PreTokenizerStep::Kind::Digits:
        splitDigits(piece, step.individualDigits, next);
        break;
      }
    }
    pieces.swap(next);
  }
  for (std::string &piece : pieces) {
    std::string mapped;
    mapped.reserve(piece.size() * 2);
    for (char c : piece)
      mapped += byteLevelChar(static_cast<unsigned char>(c));
    piece = std::move(mapped);
  }
  return pieces;
}

} // namespace folio
