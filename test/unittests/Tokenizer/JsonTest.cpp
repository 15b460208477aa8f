//===- JsonTest.cpp - The tokenizer's JSON reader
//--------------------------===//

#include "runtime/Tokenizer/Json.h"

#include <gtest/gtest.h>

using namespace folio;

namespace {

// Tests that every kind of value parses, with object members in file order.
TEST(RuntimeTokenizerJson, ParsesAllKinds) {
  auto v = json::parse(
      R"( {"b": [1, -2.5e1, true, false, null], "a": {"x": "y"}} )");
  ASSERT_TRUE(v) << v.status().message();
  ASSERT_TRUE(v->isObject());
  ASSERT_EQ(v->asObject().size(), 2u);
  EXPECT_EQ(v->asObject()[0].first, "b");
  const json::Array &b = v->find("b")->asArray();
  ASSERT_EQ(b.size(), 5u);
  EXPECT_EQ(b[0].asInteger(), 1);
  EXPECT_DOUBLE_EQ(b[1].asNumber(), -25.0);
  EXPECT_EQ(b[1].asInteger(), -25); // integral, though written with an exponent
  EXPECT_TRUE(b[2].asBool());
  EXPECT_FALSE(b[3].asBool());
  EXPECT_TRUE(b[4].isNull());
  EXPECT_EQ(v->find("a")->find("x")->asString(), "y");
  EXPECT_EQ(v->find("missing"), nullptr);
}

// Tests escapes, including a surrogate pair, and raw UTF-8.
TEST(RuntimeTokenizerJson, DecodesStrings) {
  auto v = json::parse(
      R"(["a\"b\\c\/d\b\f\n\r\t", "\u00e9\u4e2d\ud83d\ude00", "é中😀"])");
  ASSERT_TRUE(v) << v.status().message();
  EXPECT_EQ(v->asArray()[0].asString(), "a\"b\\c/d\b\f\n\r\t");
  EXPECT_EQ(v->asArray()[1].asString(), "\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80");
  EXPECT_EQ(v->asArray()[2].asString(), v->asArray()[1].asString());
}

// Tests that integers are exact and fractions are not integers.
TEST(RuntimeTokenizerJson, Integers) {
  auto v = json::parse("[9007199254740993, 1.5, 1e400]");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->asArray()[0].asInteger(), int64_t(9007199254740993));
  EXPECT_FALSE(v->asArray()[1].asInteger());
  EXPECT_FALSE(v->asArray()[2].asInteger());
}

// Tests that malformed documents are rejected with a position.
TEST(RuntimeTokenizerJson, ReportsErrors) {
  struct Case {
    const char *text;
    const char *message;
  } cases[] = {
      {"", "line 1, column 1: unexpected end of input"},
      {"{\"a\": 1,\n \"b\" 2}", "line 2, column 6: expected ':'"},
      {"[1, 2", "unexpected end of input in an array"},
      {"[1 2]", "expected ',' or ']'"},
      {"{1: 2}", "expected a string key"},
      {"\"abc", "unterminated string"},
      {"\"a\nb\"", "unescaped control character"},
      {"\"\\x\"", "invalid escape"},
      {"\"\\ud800\"", "lone leading surrogate"},
      {"\"\\udc00\"", "lone trailing surrogate"},
      {"\"\\u12g4\"", "invalid hex digit"},
      {"\"\xC3\x28\"", "invalid UTF-8"},
      {"01", "malformed number"},
      {"1.", "no digits after '.'"},
      {"1e+", "no digits in the exponent"},
      {"tru", "unexpected character 't'"},
      {"{} x", "trailing characters"},
  };
  for (const Case &c : cases) {
    auto v = json::parse(c.text);
    ASSERT_FALSE(v) << c.text;
    EXPECT_EQ(v.status().code(), StatusCode::InvalidArgument);
    EXPECT_NE(v.status().message().find(c.message), std::string::npos)
        << c.text << " -> " << v.status().message();
  }
}

// Tests that deep nesting fails cleanly instead of exhausting the stack.
TEST(RuntimeTokenizerJson, LimitsNesting) {
  std::string deep(100000, '[');
  auto v = json::parse(deep);
  ASSERT_FALSE(v);
  EXPECT_NE(v.status().message().find("nesting deeper"), std::string::npos);
  std::string ok = std::string(500, '[') + std::string(500, ']');
  EXPECT_TRUE(json::parse(ok));
}

} // namespace
