//===- ChatTemplate.cpp - Chat messages to prompt text --------------------===//

#include "runtime/Server/ChatTemplate.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

using namespace folio;
using namespace folio::server;
using Json = nlohmann::json;

namespace {

std::string directoryOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

/// The file's bytes, or nothing when it cannot be opened.
std::optional<std::string> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// A token entry: a string, or an AddedToken object with "content".
std::optional<std::string> tokenText(const Json &entry) {
  if (entry.is_string())
    return entry.get<std::string>();
  if (entry.is_object() && entry.contains("content") &&
      entry["content"].is_string())
    return entry["content"].get<std::string>();
  return std::nullopt;
}

} // namespace

Expected<TokenizerConfig>
folio::server::readTokenizerConfig(const std::string &tokenizerPath) {
  std::string directory = directoryOf(tokenizerPath);
  std::string path = directory + "tokenizer_config.json";
  std::string jinjaPath = directory + "chat_template.jinja";
  return parseTokenizerConfig(readFile(path), path, readFile(jinjaPath),
                              jinjaPath);
}

Expected<TokenizerConfig> folio::server::parseTokenizerConfig(
    const std::optional<std::string> &configText, const std::string &path,
    const std::optional<std::string> &jinjaText, const std::string &jinjaPath) {
  TokenizerConfig config;
  if (const std::optional<std::string> &text = configText) {
    Json root = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (root.is_discarded() || !root.is_object())
      return Status::invalidArgument(path + ": not a JSON object");
    config.path = path;
    for (const auto &[key, value] : root.items()) {
      if (key.size() < 7 || key.compare(key.size() - 6, 6, "_token") != 0 ||
          value.is_null())
        continue;
      std::optional<std::string> text = tokenText(value);
      if (!text) {
        // Only eos_token matters to serving; other *_token entries of
        // another shape (lists, numbers) are not token texts.
        if (key == "eos_token")
          return Status::invalidArgument(
              path + ": eos_token must be a string or an object with a "
                     "\"content\" string");
        continue;
      }
      config.specialTokens.emplace_back(key, *text);
      if (key == "eos_token")
        config.eosToken = *text;
    }
    if (root.contains("chat_template") && !root["chat_template"].is_null()) {
      const Json &tmpl = root["chat_template"];
      config.chatTemplatePath = path;
      if (tmpl.is_string()) {
        config.chatTemplate = tmpl.get<std::string>();
      } else if (tmpl.is_array()) {
        // Named templates ({"name", "template"}): chat uses "default".
        for (const Json &entry : tmpl)
          if (entry.is_object() && entry.value("name", "") == "default" &&
              entry.contains("template") && entry["template"].is_string())
            config.chatTemplate = entry["template"].get<std::string>();
        if (config.chatTemplate.empty())
          return Status::invalidArgument(
              path + ": chat_template is a list without a template named "
                     "\"default\"");
      } else {
        return Status::invalidArgument(
            path + ": chat_template must be a string or a list of "
                   "{\"name\", \"template\"} objects");
      }
    }
  }
  // The file wins over the config's template, as in transformers (which
  // writes its templates there since 4.47).
  if (jinjaText) {
    config.chatTemplate = *jinjaText;
    config.chatTemplatePath = jinjaPath;
  }
  return config;
}

Expected<std::optional<TokenId>>
folio::server::findEosToken(const Tokenizer &tokenizer,
                            const TokenizerConfig &config) {
  if (config.eosToken) {
    std::optional<TokenId> id = tokenizer.tokenToId(*config.eosToken);
    if (!id)
      return Status::invalidArgument(config.path + ": eos_token '" +
                                     *config.eosToken +
                                     "' is not a token of the tokenizer");
    return std::optional<TokenId>(*id);
  }
  std::optional<TokenId> only;
  for (const AddedToken &token : tokenizer.addedTokens()) {
    if (!token.special)
      continue;
    if (only)
      return std::optional<TokenId>(); // Several: no way to tell which.
    only = token.id;
  }
  return only;
}

Expected<std::shared_ptr<const ChatTemplate>>
ChatTemplate::create(const TokenizerConfig &config) {
  // An empty file renders every conversation as nothing: say so at start
  // rather than serve prompts of no tokens.
  if (config.chatTemplate.find_first_not_of(" \t\r\n") == std::string::npos)
    return Status::invalidArgument(config.chatTemplatePath +
                                   ": the chat template is empty");
  Expected<jinja::Template> parsed =
      jinja::Template::parse(config.chatTemplate);
  if (!parsed)
    return Status::invalidArgument(config.chatTemplatePath + ": " +
                                   parsed.status().message());
  auto chat = std::make_shared<ChatTemplate>();
  chat->template_ = std::move(*parsed);
  chat->specialTokens_ = config.specialTokens;
  chat->path_ = config.chatTemplatePath;
  return std::shared_ptr<const ChatTemplate>(std::move(chat));
}

Expected<std::string>
ChatTemplate::render(const std::vector<ChatMessage> &messages,
                     bool addGenerationPrompt) const {
  using jinja::Value;
  jinja::ValueList list;
  for (const ChatMessage &m : messages) {
    auto message = std::make_shared<jinja::Dict>();
    message->set(Value("role"), Value(m.role));
    message->set(Value("content"), Value(m.content));
    list.push_back(Value::dict(message));
  }
  auto context = std::make_shared<jinja::Dict>();
  for (const auto &[name, text] : specialTokens_)
    context->set(Value(name), Value(text));
  context->set(Value("messages"), Value::list(std::move(list)));
  context->set(Value("add_generation_prompt"), Value(addGenerationPrompt));
  Expected<std::string> text = template_.render(Value::dict(context));
  if (!text)
    return Status::invalidArgument(path_ + ": " + text.status().message());
  return text;
}

std::string
folio::server::renderDefaultChat(const std::vector<ChatMessage> &messages) {
  std::string prompt;
  for (const ChatMessage &m : messages)
    prompt += m.role + ": " + m.content + "\n";
  return prompt + "assistant: ";
}
