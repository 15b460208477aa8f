//===- ChatTemplateTest.cpp - tokenizer_config.json and chat templates
//-----===//

#include "runtime/Server/ChatTemplate.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace folio;
using namespace folio::server;
using ::testing::HasSubstr;

namespace {

/// A directory holding a tokenizer.json placeholder and the given files.
class ModelDir {
public:
  ModelDir() {
    char pattern[] = "/tmp/folio-chat-XXXXXX";
    dir = mkdtemp(pattern);
  }
  ~ModelDir() { std::filesystem::remove_all(dir); }
  void write(const std::string &name, const std::string &text) {
    std::ofstream(dir + "/" + name) << text;
  }
  std::string tokenizer() const { return dir + "/tokenizer.json"; }

private:
  std::string dir;
};

TEST(ChatTemplateTest, ReadsTemplateAndSpecialTokensFromTokenizerConfig) {
  ModelDir d;
  d.write("tokenizer_config.json",
          R"({"bos_token": "<s>", "eos_token": {"content": "</s>"},
              "pad_token": null, "model_max_length": 2048,
              "chat_template": "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}{% endfor %}{% if add_generation_prompt %}[assistant] {% endif %}"})");
  Expected<TokenizerConfig> config = readTokenizerConfig(d.tokenizer());
  ASSERT_TRUE(config) << config.status().message();
  EXPECT_EQ(config->eosToken, std::optional<std::string>("</s>"));
  ASSERT_TRUE(config->hasChatTemplate());
  Expected<std::shared_ptr<const ChatTemplate>> chat =
      ChatTemplate::create(*config);
  ASSERT_TRUE(chat) << chat.status().message();
  Expected<std::string> text =
      (*chat)->render({{"system", "Be brief."}, {"user", "Hi"}});
  ASSERT_TRUE(text) << text.status().message();
  EXPECT_EQ(*text, "<s>[system] Be brief.</s>[user] Hi</s>[assistant] ");
}

TEST(ChatTemplateTest, NamedTemplatesUseDefault) {
  ModelDir d;
  d.write("tokenizer_config.json",
          R"({"chat_template": [{"name": "tool_use", "template": "tools"},
                                {"name": "default", "template": "plain"}]})");
  Expected<TokenizerConfig> config = readTokenizerConfig(d.tokenizer());
  ASSERT_TRUE(config) << config.status().message();
  EXPECT_EQ(config->chatTemplate, "plain");

  ModelDir bad;
  bad.write("tokenizer_config.json",
            R"({"chat_template": [{"name": "tool_use", "template": "x"}]})");
  Expected<TokenizerConfig> refused = readTokenizerConfig(bad.tokenizer());
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("chat_template is a list without a template named "
                        "\"default\""));
}

TEST(ChatTemplateTest, ChatTemplateJinjaFileBesideTheTokenizer) {
  ModelDir d;
  d.write("tokenizer_config.json", R"({"eos_token": "</s>"})");
  d.write("chat_template.jinja", "{% for m in messages %}{{ m.content }}"
                                 "{% endfor %}\n");
  Expected<TokenizerConfig> config = readTokenizerConfig(d.tokenizer());
  ASSERT_TRUE(config) << config.status().message();
  EXPECT_THAT(config->chatTemplatePath, HasSubstr("chat_template.jinja"));
  Expected<std::shared_ptr<const ChatTemplate>> chat =
      ChatTemplate::create(*config);
  ASSERT_TRUE(chat);
  Expected<std::string> text = (*chat)->render({{"user", "x"}, {"user", "y"}});
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, "xy");
}

// Tests that chat_template.jinja wins over the config's chat_template, as
// in transformers, and that an empty one is an error, not the default
// format.
TEST(ChatTemplateTest, TheJinjaFileWinsAndMustNotBeEmpty) {
  ModelDir d;
  d.write("tokenizer_config.json", R"({"chat_template": "from the config"})");
  d.write("chat_template.jinja", "from the file");
  Expected<TokenizerConfig> config = readTokenizerConfig(d.tokenizer());
  ASSERT_TRUE(config) << config.status().message();
  Expected<std::shared_ptr<const ChatTemplate>> chat =
      ChatTemplate::create(*config);
  ASSERT_TRUE(chat);
  Expected<std::string> text = (*chat)->render({{"user", "x"}});
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, "from the file");

  d.write("chat_template.jinja", " \n");
  config = readTokenizerConfig(d.tokenizer());
  ASSERT_TRUE(config) << config.status().message();
  EXPECT_TRUE(config->hasChatTemplate());
  chat = ChatTemplate::create(*config);
  ASSERT_FALSE(chat);
  EXPECT_THAT(chat.status().message(),
              HasSubstr("chat_template.jinja: the chat template is empty"));
}

TEST(ChatTemplateTest, ErrorsNameTheFile) {
  ModelDir d;
  d.write("tokenizer_config.json", R"({"chat_template": "{% if %}"})");
  Expected<TokenizerConfig> config = readTokenizerConfig(d.tokenizer());
  ASSERT_TRUE(config);
  Expected<std::shared_ptr<const ChatTemplate>> chat =
      ChatTemplate::create(*config);
  ASSERT_FALSE(chat);
  EXPECT_THAT(chat.status().message(),
              HasSubstr("tokenizer_config.json: chat template line 1, "
                        "column 7: expected a value, found '%}'"));

  ModelDir notObject;
  notObject.write("tokenizer_config.json", "[1, 2]");
  EXPECT_FALSE(readTokenizerConfig(notObject.tokenizer()));

  ModelDir badEos;
  badEos.write("tokenizer_config.json", R"({"eos_token": 5})");
  Expected<TokenizerConfig> refused = readTokenizerConfig(badEos.tokenizer());
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("eos_token must be a string"));
}

TEST(ChatTemplateTest, NoConfigMeansTheDefaultFormat) {
  ModelDir d;
  Expected<TokenizerConfig> config = readTokenizerConfig(d.tokenizer());
  ASSERT_TRUE(config);
  EXPECT_TRUE(config->path.empty());
  EXPECT_FALSE(config->hasChatTemplate());
  EXPECT_EQ(renderDefaultChat({{"user", "Hi"}}), "user: Hi\nassistant: ");
}

} // namespace
