//===- PreTokenizerTest.cpp - GPT-2 split and byte-level mapping
//-----------===//

#include "runtime/Tokenizer/PreTokenizer.h"

#include "runtime/Tokenizer/Unicode.h"

#include <gtest/gtest.h>

using namespace folio;

namespace {

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> out;
  splitGpt2(text, out);
  return out;
}

using Pieces = std::vector<std::string>;

// Tests the alternatives of the GPT-2 pattern, including how a whitespace
// run gives its last space to the word after it.
TEST(RuntimeTokenizerPreTokenizer, Gpt2Split) {
  EXPECT_EQ(split("Hello world"), (Pieces{"Hello", " world"}));
  EXPECT_EQ(split("  x"), (Pieces{" ", " x"}));
  EXPECT_EQ(split("a   "), (Pieces{"a", "   "}));
  EXPECT_EQ(split("\n x"), (Pieces{"\n", " x"}));
  EXPECT_EQ(split("\nx"), (Pieces{"\n", "x"}));
  EXPECT_EQ(split("a\n\n\tb"), (Pieces{"a", "\n\n", "\t", "b"}));
  EXPECT_EQ(split("I'm we'll 'S"),
            (Pieces{"I", "'m", " we", "'ll", " '", "S"}));
  EXPECT_EQ(split("x=1.5;"), (Pieces{"x", "=", "1", ".", "5", ";"}));
  EXPECT_EQ(split("f(x) + 12"), (Pieces{"f", "(", "x", ")", " +", " 12"}));
  EXPECT_EQ(split("caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87"),
            (Pieces{"caf\xC3\xA9", " \xE4\xB8\xAD\xE6\x96\x87"}));
  EXPECT_EQ(split(""), Pieces{});
}

// Tests that the pieces always cover the input exactly.
TEST(RuntimeTokenizerPreTokenizer, CoversInput) {
  std::string text =
      "  def f(a, b):\n\treturn a+b  # \xF0\x9F\x98\x80 \xC2\xA0x\n\n";
  std::string joined;
  for (const std::string &p : split(text))
    joined += p;
  EXPECT_EQ(joined, text);
}

// Tests the Digits pre-tokenizer in both modes.
TEST(RuntimeTokenizerPreTokenizer, Digits) {
  std::vector<std::string> out;
  splitDigits("ab123c4", /*individual=*/true, out);
  EXPECT_EQ(out, (Pieces{"ab", "1", "2", "3", "c", "4"}));
  out.clear();
  splitDigits("ab123c4", /*individual=*/false, out);
  EXPECT_EQ(out, (Pieces{"ab", "123", "c", "4"}));
}

// Tests GPT-2's bytes_to_unicode table: printable bytes map to themselves,
// the rest to U+0100 onwards, and the map inverts.
TEST(RuntimeTokenizerPreTokenizer, ByteLevelMap) {
  EXPECT_EQ(byteLevelChar('a'), "a");
  EXPECT_EQ(byteLevelChar(' '), "\xC4\xA0");  // U+0120 'Ġ'
  EXPECT_EQ(byteLevelChar('\n'), "\xC4\x8A"); // U+010A 'Ċ'
  EXPECT_EQ(byteLevelChar(0xF6), "\xC3\xB6"); // 'ö' stands for itself
  for (int b = 0; b < 256; ++b) {
    std::string_view c = byteLevelChar(static_cast<unsigned char>(b));
    size_t pos = 0;
    char32_t cp;
    ASSERT_TRUE(unicode::decodeUtf8(c, pos, cp));
    EXPECT_EQ(byteLevelByte(cp), b);
  }
  EXPECT_EQ(byteLevelByte(U' '), -1);
  EXPECT_EQ(byteLevelByte(U'\u4E2D'), -1);
}

// Tests the ByteLevel step's prefix space.
TEST(RuntimeTokenizerPreTokenizer, PrefixSpace) {
  PreTokenizerStep step;
  step.addPrefixSpace = true;
  EXPECT_EQ(preTokenize("hi there", {step}),
            (Pieces{"\xC4\xA0hi", "\xC4\xA0there"}));
  EXPECT_EQ(preTokenize(" hi", {step}), (Pieces{"\xC4\xA0hi"}));
  step.addPrefixSpace = false;
  step.useRegex = false;
  EXPECT_EQ(preTokenize("hi there", {step}), (Pieces{"hi\xC4\xA0there"}));
}

} // namespace
