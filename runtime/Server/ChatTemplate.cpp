//===- ChatTemplate.cpp - Chat messages to prompt text --------------------===//

#include "runtime/Server/ChatTemplate.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

using namespace folio;
using namespace folio::server;
using Json = nlohmann::json;

Expected<TokenizerConfig>
folio::server::readTokenizerConfig(const std::string &tokenizerPath) {
  TokenizerConfig config;
  size_t slash = tokenizerPath.find_last_of('/');
  std::string path =
      (slash == std::string::npos ? std::string()
                                  : tokenizerPath.substr(0, slash + 1)) +
      "tokenizer_config.Json";
  std::ifstream in(path);
  if (!in)
    return config;
  std::stringstream text;
  text << in.rdbuf();
  Json root = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object())
    return Status::invalidArgument(path + ": not a JSON object");
  config.path = path;
  if (root.contains("eos_token")) {
    const Json &eos = root["eos_token"];
    if (eos.is_string())
      config.eosToken = eos.get<std::string>();
    else if (eos.is_object() && eos.contains("content") &&
             eos["content"].is_string())
      config.eosToken = eos["content"].get<std::string>();
    else if (!eos.is_null())
      return Status::invalidArgument(
          path + ": eos_token must be a string or an object with a "
                 "\"content\" string");
  }
  config.hasChatTemplate =
      root.contains("chat_template") && !root["chat_template"].is_null();
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

std::string
folio::server::renderDefaultChat(const std::vector<ChatMessage> &messages) {
  std::string prompt;
  for (const ChatMessage &m : messages)
    prompt += m.role + ": " + m.content + "\n";
  return prompt + "assistant: ";
}
