//===- TextStreamTest.cpp - Incremental detokenization and stop strings ---===//
//
// With the bundled tokenizer (byte-level BPE, so characters outside ASCII
// span several tokens): streamed pieces concatenate to the full decode and
// are always whole UTF-8; stop strings are found across token boundaries
// and cut the text just before them; text that may begin a stop string is
// held back until it is decided.
//
//===----------------------------------------------------------------------===//

#include "runtime/Server/TextStream.h"

#include <gtest/gtest.h>

using namespace folio;
using namespace folio::server;

namespace {

const Tokenizer &tokenizer() {
  static const Tokenizer tok = [] {
    auto t = Tokenizer::fromFile(std::string(FOLIO_SOURCE_DIR) +
                                 "/models/bundled/tokenizer.json");
    EXPECT_TRUE(t) << t.status().message();
    return std::move(*t);
  }();
  return tok;
}

std::vector<TokenId> encode(const std::string &text) {
  auto ids = tokenizer().encode(text);
  EXPECT_TRUE(ids) << ids.status().message();
  return ids ? *ids : std::vector<TokenId>();
}

bool validUtf8(const std::string &s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80         ? 1
               : (c >> 5) == 6  ? 2
               : (c >> 4) == 14 ? 3
               : (c >> 3) == 30 ? 4
                                : 0;
    if (n == 0 || i + n > s.size())
      return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80)
        return false;
    i += n;
  }
  return true;
}

/// Streams `ids`; returns the pieces (the flush last).
std::vector<std::string> stream(TextStream &ts,
                                const std::vector<TokenId> &ids) {
  std::vector<std::string> pieces;
  for (TokenId id : ids) {
    auto piece = ts.append(id);
    EXPECT_TRUE(piece) << piece.status().message();
    pieces.push_back(piece ? *piece : "");
  }
  auto rest = ts.flush();
  EXPECT_TRUE(rest);
  pieces.push_back(rest ? *rest : "");
  return pieces;
}

std::string join(const std::vector<std::string> &pieces) {
  std::string s;
  for (const std::string &p : pieces)
    s += p;
  return s;
}

TEST(TextStream, PiecesAreWholeCharactersAndJoinToTheText) {
  const std::string text = "caf\xC3\xA9 \xE2\x9C\x93 \xE6\x97\xA5\xE6\x9C\xAC "
                           "def f(x):\n    return x";
  std::vector<TokenId> ids = encode(text);
  // The test means something only if some character spans tokens.
  size_t partial = 0;
  for (TokenId id : ids)
    partial +=
        tokenizer().decode({id})->find("\xEF\xBF\xBD") != std::string::npos;
  ASSERT_GT(partial, 0u);
  TextStream ts(tokenizer(), {});
  std::vector<std::string> pieces = stream(ts, ids);
  for (const std::string &p : pieces)
    EXPECT_TRUE(validUtf8(p)) << "piece '" << p << "'";
  EXPECT_EQ(join(pieces), text);
  EXPECT_EQ(ts.text(), text);
  EXPECT_FALSE(ts.stopped());
}

// Tests the character count text_offset is given in: code points, an
// unfinished character once.
TEST(TextStream, Utf8CharactersCountsCodePoints) {
  EXPECT_EQ(utf8Characters(""), 0u);
  EXPECT_EQ(utf8Characters("abc"), 3u);
  EXPECT_EQ(utf8Characters("\xc3\xa9t\xc3\xa9"), 3u);            // été
  EXPECT_EQ(utf8Characters("\xe6\x97\xa5\xf0\x9f\x98\x80"), 2u); // 日😀
  EXPECT_EQ(utf8Characters("a\xe6\x97"), 2u); // an unfinished 日
}

TEST(TextStream, StopStringAcrossTokensCutsBeforeIt) {
  const std::string text = "import os\nimport sys\n\ndef main():\n    pass\n";
  std::vector<TokenId> ids = encode(text);
  // "sys\n\nde" spans several tokens.
  TextStream ts(tokenizer(), {"zzz", "sys\n\nde"});
  std::vector<std::string> pieces = stream(ts, ids);
  EXPECT_TRUE(ts.stopped());
  EXPECT_EQ(ts.text(), "import os\nimport ");
  EXPECT_EQ(join(pieces), "import os\nimport ");
}

TEST(TextStream, EarliestStopWins) {
  std::vector<TokenId> ids = encode("alpha beta gamma delta");
  TextStream ts(tokenizer(), {"delta", "beta"});
  EXPECT_EQ(join(stream(ts, ids)), "alpha ");
  EXPECT_TRUE(ts.stopped());
}

TEST(TextStream, HoldsBackWhatMayStartAStopString) {
  const std::string stop = "\ny = 3";
  std::vector<TokenId> ids = encode("x = 1\ny = 2");
  TextStream ts(tokenizer(), {stop});
  std::string released;
  bool heldSome = false;
  for (TokenId id : ids) {
    auto piece = ts.append(id);
    ASSERT_TRUE(piece);
    released += *piece;
    // Whatever is held back could still become the stop string.
    std::string held = ts.text().substr(released.size());
    EXPECT_EQ(stop.compare(0, held.size(), held), 0) << "held '" << held << "'";
    heldSome |= !held.empty();
  }
  EXPECT_TRUE(heldSome);
  EXPECT_FALSE(ts.stopped());
  auto rest = ts.flush();
  ASSERT_TRUE(rest);
  EXPECT_EQ(released + *rest, "x = 1\ny = 2");
}

TEST(TextStream, SpecialTokensDecodeToNothing) {
  std::vector<TokenId> ids = encode("hello");
  ids.push_back(0); // <|endoftext|>
  TextStream ts(tokenizer(), {});
  EXPECT_EQ(join(stream(ts, ids)), "hello");
}

TEST(TextStream, UnknownTokenIsAnError) {
  TextStream ts(tokenizer(), {});
  EXPECT_FALSE(ts.append(TokenId(1) << 20));
}

} // namespace
