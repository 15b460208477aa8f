//===- TokenizerErrorTest.cpp - Malformed and unsupported tokenizer.json
//---===//

#include "runtime/Tokenizer/Tokenizer.h"

#include <gtest/gtest.h>

using namespace folio;

namespace {

/// A valid minimal byte-level BPE tokenizer.json with \p pieces substituted.
std::string doc(const std::string &model = "",
                const std::string &pre =
                    R"({"type": "ByteLevel", "add_prefix_space": false})",
                const std::string &extra = "") {
  std::string m =
      model.empty()
          ? R"({"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "<s>": 3},
                            "merges": [["a", "b"]]})"
          : model;
  return R"({"version": "1.0", "pre_tokenizer": )" + pre +
         R"(, "decoder": {"type": "ByteLevel"}, )" + extra + R"("model": )" +
         m + "}";
}

void expectError(const std::string &json, const std::string &fragment) {
  auto tok = Tokenizer::fromJson(json);
  ASSERT_FALSE(tok) << "accepted: " << json;
  EXPECT_EQ(tok.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(tok.status().message().find(fragment), std::string::npos)
      << "message: " << tok.status().message() << "\nwanted: " << fragment;
}

// Tests that the minimal document itself loads and works.
TEST(RuntimeTokenizerErrors, MinimalDocumentLoads) {
  auto tok = Tokenizer::fromJson(doc());
  ASSERT_TRUE(tok) << tok.status().message();
  EXPECT_EQ(*tok->encode("abba"), (std::vector<TokenId>{2, 1, 0}));
  EXPECT_EQ(*tok->decode({2, 1, 0}), "abba");
}

// Tests malformed JSON and a wrong top level.
TEST(RuntimeTokenizerErrors, NotJson) {
  expectError("{\"model\": ", "JSON parse error at line 1");
  expectError("[]", "'(root)' must be an object, got an array");
}

// Tests errors in the model object, each naming its field.
TEST(RuntimeTokenizerErrors, Model) {
  expectError(R"({"decoder": {"type": "ByteLevel"}})", "missing field 'model'");
  expectError(doc(R"({"type": "WordPiece", "vocab": {}})"),
              "'model.type' is \"WordPiece\": only BPE");
  expectError(doc(R"({"type": "BPE", "vocab": [], "merges": []})"),
              "'model.vocab' must be an object of token: id, got an array");
  expectError(doc(R"({"type": "BPE", "merges": []})"),
              "missing field 'model.vocab'");
  expectError(doc(R"({"type": "BPE", "vocab": {"a": -1}, "merges": []})"),
              "'model.vocab[\"a\"]' must be an integer id");
  expectError(doc(R"({"type": "BPE", "vocab": {"a": 1.5}, "merges": []})"),
              "'model.vocab[\"a\"]' must be an integer id");
  expectError(
      doc(R"({"type": "BPE", "vocab": {"a": 0, "b": 0}, "merges": []})"),
      "'model.vocab': id 0 is used by");
  expectError(doc(R"({"type": "BPE", "vocab": {"a": 0}})"),
              "missing field 'model.merges'");
  expectError(doc(R"({"type": "BPE", "vocab": {"a": 0}, "merges": {}})"),
              "'model.merges' must be an array, got an object");
  expectError(
      doc(R"({"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": [["a", "c"]]})"),
      "'model.merges[0]': token \"c\" is not in model.vocab");
  expectError(
      doc(R"({"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": [["a", "b"]]})"),
      "'model.merges[0]': merged token \"ab\" is not in model.vocab");
  expectError(doc(R"({"type": "BPE", "vocab": {"a": 0}, "merges": ["a b c"]})"),
              "'model.merges[0]' must be two tokens separated by one space");
  expectError(doc(R"({"type": "BPE", "vocab": {"a": 0}, "merges": [1]})"),
              "'model.merges[0]' must be a string \"a b\" or an array");
  expectError(
      doc(R"({"type": "BPE", "vocab": {"a": 0}, "merges": [], "dropout": 0.1})"),
      "'model.dropout' must be null or 0");
  expectError(doc(R"({"type": "BPE", "vocab": {"a": 0}, "merges": [],
                      "continuing_subword_prefix": "##"})"),
              "'model.continuing_subword_prefix' must be null");
  expectError(
      doc(R"({"type": "BPE", "vocab": {"a": 0}, "merges": [], "unk_token": "<unk>"})"),
      "'model.unk_token' \"<unk>\" is not in model.vocab");
  expectError(
      doc(R"({"type": "BPE", "vocab": {"a": 0}, "merges": [], "byte_fallback": 1})"),
      "'model.byte_fallback' must be a boolean, got a number");
}

// Tests unsupported pipeline parts, each naming its field.
TEST(RuntimeTokenizerErrors, Pipeline) {
  expectError(doc("", R"({"type": "Whitespace"})"),
              "'pre_tokenizer.type' is \"Whitespace\"");
  expectError(doc("", "null"), "'pre_tokenizer' must be ByteLevel");
  expectError(doc("", R"({"type": "Sequence", "pretokenizers": [
                           {"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "Isolated"},
                           {"type": "ByteLevel"}]})"),
              "'pre_tokenizer.pretokenizers[0].pattern' must be {\"Regex\": "
              "<the GPT-2 pattern>}");
  expectError(doc("", R"({"type": "Sequence", "pretokenizers": [
                           {"type": "ByteLevel"}, {"type": "Digits"}]})"),
              "exactly one ByteLevel, as its last step");
  expectError(doc("", R"({"type": "Sequence", "pretokenizers": [
                           {"type": "ByteLevel", "use_regex": "yes"}]})"),
              "'pre_tokenizer.pretokenizers[0].use_regex' must be a boolean, "
              "got a string");
  expectError(
      doc("", R"({"type": "ByteLevel"})", R"("normalizer": {"type": "NFC"},)"),
      "'normalizer' must be null");
  expectError(doc("", R"({"type": "ByteLevel"})",
                  R"("truncation": {"max_length": 8},)"),
              "'truncation' must be null");
  expectError(doc("", R"({"type": "ByteLevel"})",
                  R"("post_processor": {"type": "TemplateProcessing"},)"),
              "'post_processor.type' must be \"ByteLevel\"");
  expectError(
      R"({"pre_tokenizer": {"type": "ByteLevel"}, "decoder": {"type": "Metaspace"},
                  "model": {"type": "BPE", "vocab": {}, "merges": []}})",
      "'decoder.type' must be \"ByteLevel\"");
}

// Tests errors in added tokens.
TEST(RuntimeTokenizerErrors, AddedTokens) {
  auto withAdded = [](const std::string &added) {
    return doc("", R"({"type": "ByteLevel"})",
               "\"added_tokens\": " + added + ",");
  };
  expectError(withAdded(R"({})"),
              "'added_tokens' must be an array, got an object");
  expectError(withAdded(R"([{"content": "<s>"}])"),
              "'added_tokens[0].id' must be an integer id");
  expectError(withAdded(R"([{"id": 3, "content": 3}])"),
              "'added_tokens[0].content' must be a string, got a number");
  expectError(withAdded(R"([{"id": 9, "content": ""}])"),
              "'added_tokens[0].content' must not be empty");
  expectError(
      withAdded(R"([{"id": 3, "content": "<s>", "single_word": true}])"),
      "'added_tokens[0].single_word' must be false");
  expectError(withAdded(R"([{"id": 0, "content": "<s>"}])"),
              "'added_tokens[0]': id 0 is \"a\" in model.vocab, not \"<s>\"");
  expectError(
      withAdded(
          R"([{"id": 3, "content": "<s>"}, {"id": 3, "content": "<s>"}])"),
      "'added_tokens[1]': id 3 appears twice");
}

// Tests file and input errors.
TEST(RuntimeTokenizerErrors, FilesAndInputs) {
  auto missing = Tokenizer::fromFile("/nonexistent/tokenizer.json");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.status().code(), StatusCode::NotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/tokenizer.json"),
            std::string::npos);

  auto tok = Tokenizer::fromJson(doc());
  ASSERT_TRUE(tok) << tok.status().message();
  auto bad = tok->encode("ab\xC3");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("not valid UTF-8 (byte offset 2)"),
            std::string::npos);
  auto unknown = tok->decode({0, 99});
  ASSERT_FALSE(unknown);
  EXPECT_NE(
      unknown.status().message().find("token id 99 is not in the vocabulary"),
      std::string::npos);
  EXPECT_FALSE(tok->decode({-1}));
}

} // namespace
