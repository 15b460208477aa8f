//===- UnicodeTest.cpp - UTF-8 and character classes
//-----------------------===//

#include "runtime/Tokenizer/Unicode.h"

#include <gtest/gtest.h>

using namespace folio;
using namespace folio::unicode;

namespace {

// Tests decoding of valid sequences of every length.
TEST(RuntimeTokenizerUnicode, DecodesValidUtf8) {
  std::string s = "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80";
  size_t pos = 0;
  char32_t cp;
  for (char32_t want : {U'a', U'\u00E9', U'\u4E2D', U'\U0001F600'}) {
    ASSERT_TRUE(decodeUtf8(s, pos, cp));
    EXPECT_EQ(cp, want);
  }
  EXPECT_EQ(pos, s.size());
  std::string round;
  for (char32_t c : {U'a', U'\u00E9', U'\u4E2D', U'\U0001F600'})
    appendUtf8(round, c);
  EXPECT_EQ(round, s);
}

// Tests that overlongs, surrogates, out-of-range values and truncations are
// invalid.
TEST(RuntimeTokenizerUnicode, RejectsInvalidUtf8) {
  for (std::string bad :
       {"\xC0\xAF", "\xE0\x80\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80",
        "\xF8\x88\x80\x80\x80", "\x80", "\xC3", "\xE4\xB8", "\xFF"}) {
    size_t pos = 0;
    char32_t cp;
    EXPECT_FALSE(decodeUtf8(bad, pos, cp)) << bad;
    EXPECT_EQ(pos, 0u);
    EXPECT_EQ(findInvalidUtf8("ok" + bad), 2u);
  }
  EXPECT_EQ(findInvalidUtf8("fine \xE2\x9C\x93"), std::string_view::npos);
}

// Tests that repair replaces each maximal invalid subpart with one U+FFFD,
// as Rust's from_utf8_lossy does.
TEST(RuntimeTokenizerUnicode, RepairsLikeRust) {
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(repairUtf8("abc"), "abc");
  EXPECT_EQ(repairUtf8("a\xC3"), "a" + r);
  EXPECT_EQ(repairUtf8("\xF0\x9F\x98"), r); // truncated 4-byte: one
  EXPECT_EQ(repairUtf8("\xF0\x9F\x98x"), r + "x");
  EXPECT_EQ(repairUtf8("\xE0\x80"), r + r);         // E0 80: bad second byte
  EXPECT_EQ(repairUtf8("\xED\xA0\x80"), r + r + r); // surrogate: three
  EXPECT_EQ(repairUtf8("\xF4\x90\x80\x80"), r + r + r + r);
  EXPECT_EQ(repairUtf8("\xC0\xAF"), r + r);
  EXPECT_EQ(repairUtf8("\xF6"), r);
  EXPECT_EQ(repairUtf8("L\xF6we"), "L" + r + "we");
}

// Tests representative code points of each class. The whole table is
// checked against tokenizers by gen_unicode_tables.py --verify.
TEST(RuntimeTokenizerUnicode, Classes) {
  for (char32_t c : {U'a', U'Z', U'\u00E9', U'\u03A9', U'\u0416', U'\u05D0',
                     U'\u0627', U'\u0915', U'\u4E2D', U'\u3042', U'\uAC00',
                     U'\U0001D400', U'\U00020000', U'\u02B0'})
    EXPECT_EQ(classify(c), CharClass::Letter) << uint32_t(c);
  for (char32_t c : {U'0', U'9', U'\u00B2', U'\u00BD', U'\u0661', U'\uFF11',
                     U'\u216B', U'\u2460', U'\U0001D7D9'})
    EXPECT_EQ(classify(c), CharClass::Number) << uint32_t(c);
  for (char32_t c : {U' ', U'\t', U'\n', U'\v', U'\f', U'\r', U'\u0085',
                     U'\u00A0', U'\u1680', U'\u2000', U'\u200A', U'\u2028',
                     U'\u2029', U'\u202F', U'\u205F', U'\u3000'})
    EXPECT_EQ(classify(c), CharClass::Whitespace) << uint32_t(c);
  // Not whitespace to Oniguruma, though Python's str.isspace says so for
  // some: U+001C..001F, U+180E, U+200B, U+FEFF.
  for (char32_t c : {U'!', U'\x1C', U'\x1F', U'\u0301', U'\u0903', U'\u180E',
                     U'\u200B', U'\u200D', U'\uFEFF', U'\uFFFD', U'\U0001F600',
                     U'\uE000', U'\U0010FFFF', U'\u0378'})
    EXPECT_EQ(classify(c), CharClass::Other) << uint32_t(c);
}

} // namespace
