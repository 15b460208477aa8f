//===- TokenizerAgreementTest.cpp - Agreement with Hugging Face tokenizers
//-===//
//
// fixtures.json holds, for the bundled tokenizer and the mini-*.json
// variants, what `tokenizers` (Python) returns for every corpus text: encode
// ids and decodes. Regenerate with gen_fixtures.py.
//
//===----------------------------------------------------------------------===//

#include "runtime/Tokenizer/Json.h"
#include "runtime/Tokenizer/Tokenizer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <sstream>

using namespace folio;

namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<TokenId> idsOf(const json::Value &array) {
  std::vector<TokenId> ids;
  for (const json::Value &v : array.asArray())
    ids.push_back(static_cast<TokenId>(*v.asInteger()));
  return ids;
}

/// The fixture and every tokenizer it names, loaded once.
class Fixture {
public:
  static const Fixture &get() {
    static const Fixture f;
    return f;
  }
  json::Value root;
  std::map<std::string, std::shared_ptr<Tokenizer>> tokenizers;
  std::string error;

private:
  Fixture() {
    std::string dir = FOLIO_SOURCE_DIR;
    auto parsed =
        json::parse(readFile(dir + "/test/unittests/Tokenizer/fixtures.json"));
    if (!parsed) {
      error = parsed.status().message();
      return;
    }
    root = std::move(*parsed);
    for (const json::Member &m : root.find("tokenizers")->asObject()) {
      auto tok = Tokenizer::fromFile(dir + "/" + m.second.asString());
      if (!tok) {
        error = tok.status().message();
        return;
      }
      tokenizers[m.first] = std::make_shared<Tokenizer>(std::move(*tok));
    }
  }
};

/// A field of a case, or the text when the generator left it out because
/// it equals the text.
std::string expected(const json::Value &c, const char *field,
                     const std::string &text) {
  const json::Value *v = c.find(field);
  return v ? v->asString() : text;
}

// Tests that every tokenizer of the fixture loads, with tokenizers' vocab size.
TEST(RuntimeTokenizerAgreement, Loads) {
  const Fixture &f = Fixture::get();
  ASSERT_TRUE(f.error.empty()) << f.error;
  EXPECT_EQ(f.tokenizers.size(), 7u);
  for (const json::Member &m : f.root.find("vocab_sizes")->asObject())
    EXPECT_EQ(f.tokenizers.at(m.first)->vocabSize(),
              size_t(*m.second.asInteger()))
        << m.first;
}

// Tests that encode gives exactly tokenizers' ids for every text, and
// decode (with and without special tokens) exactly its text.
TEST(RuntimeTokenizerAgreement, EncodeAndDecodeMatch) {
  const Fixture &f = Fixture::get();
  ASSERT_TRUE(f.error.empty()) << f.error;
  const json::Value &texts = *f.root.find("texts");
  size_t checked = 0;
  for (const json::Value &c : f.root.find("cases")->asArray()) {
    const std::string &tname = c.find("tokenizer")->asString();
    const std::string &cname = c.find("text")->asString();
    const std::string &text = texts.find(cname)->asString();
    const Tokenizer &tok = *f.tokenizers.at(tname);
    std::vector<TokenId> want = idsOf(*c.find("ids"));
    auto got = tok.encode(text);
    ASSERT_TRUE(got) << tname << "/" << cname << ": " << got.status().message();
    EXPECT_EQ(*got, want) << tname << "/" << cname;
    auto dec = tok.decode(want);
    ASSERT_TRUE(dec) << dec.status().message();
    EXPECT_EQ(*dec, expected(c, "decoded", text)) << tname << "/" << cname;
    auto decSkip = tok.decode(want, /*skipSpecialTokens=*/true);
    ASSERT_TRUE(decSkip) << decSkip.status().message();
    EXPECT_EQ(*decSkip, expected(c, "decoded_skip_special", text))
        << tname << "/" << cname;
    ++checked;
  }
  EXPECT_GT(checked, 500u);
}

// Tests decoding of random id sequences, whose bytes are often invalid
// UTF-8 (repaired with U+FFFD exactly as tokenizers does).
TEST(RuntimeTokenizerAgreement, RandomIdsDecodeMatch) {
  const Fixture &f = Fixture::get();
  ASSERT_TRUE(f.error.empty()) << f.error;
  for (const json::Value &c : f.root.find("decode_cases")->asArray()) {
    const Tokenizer &tok = *f.tokenizers.at(c.find("tokenizer")->asString());
    std::vector<TokenId> ids = idsOf(*c.find("ids"));
    auto dec = tok.decode(ids);
    ASSERT_TRUE(dec) << dec.status().message();
    EXPECT_EQ(*dec, c.find("decoded")->asString());
    auto decSkip = tok.decode(ids, /*skipSpecialTokens=*/true);
    ASSERT_TRUE(decSkip) << decSkip.status().message();
    EXPECT_EQ(*decSkip, c.find("decoded_skip_special")->asString());
  }
}

// Tests decode(encode(x)) == x with the bundled tokenizer on every text.
TEST(RuntimeTokenizerAgreement, BundledRoundTrips) {
  const Fixture &f = Fixture::get();
  ASSERT_TRUE(f.error.empty()) << f.error;
  const Tokenizer &tok = *f.tokenizers.at("bundled");
  for (const json::Member &m : f.root.find("texts")->asObject()) {
    auto ids = tok.encode(m.second.asString());
    ASSERT_TRUE(ids) << ids.status().message();
    auto text = tok.decode(*ids);
    ASSERT_TRUE(text) << text.status().message();
    EXPECT_EQ(*text, m.second.asString()) << m.first;
  }
}

// Tests the bundled tokenizer's special token and lookups.
TEST(RuntimeTokenizerAgreement, BundledSpecialToken) {
  const Fixture &f = Fixture::get();
  ASSERT_TRUE(f.error.empty()) << f.error;
  const Tokenizer &tok = *f.tokenizers.at("bundled");
  std::optional<TokenId> eot = tok.tokenToId("<|endoftext|>");
  ASSERT_TRUE(eot);
  EXPECT_TRUE(tok.isSpecial(*eot));
  EXPECT_EQ(tok.idToToken(*eot), "<|endoftext|>");
  auto ids = tok.encode("x<|endoftext|>y");
  ASSERT_TRUE(ids);
  ASSERT_EQ(ids->size(), 3u);
  EXPECT_EQ((*ids)[1], *eot);
  EXPECT_EQ(*tok.decode(*ids, /*skipSpecialTokens=*/true), "xy");
}

} // namespace
