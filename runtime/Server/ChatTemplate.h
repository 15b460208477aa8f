//===- ChatTemplate.h - Chat messages to prompt text -----------*- C++ -*-===//
//
// Hugging Face models keep their chat template (Jinja) and special-token
// names in a tokenizer_config.json beside tokenizer.json. folio-serve does
// not evaluate Jinja: a model that ships a template gets its chat endpoint
// refused (a different format would silently degrade its answers), and a
// model without one gets the documented default format below.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SERVER_CHATTEMPLATE_H
#define FOLIO_RUNTIME_SERVER_CHATTEMPLATE_H

#include "runtime/Server/OpenAIRequest.h"
#include "runtime/Support/Status.h"
#include "runtime/Tokenizer/Tokenizer.h"

#include <optional>
#include <string>
#include <vector>

namespace folio::server {

/// What folio-serve reads of tokenizer_config.json.
struct TokenizerConfig {
  /// The file read; empty when there is none.
  std::string path;
  /// "eos_token" (a string, or an object with "content").
  std::optional<std::string> eosToken;
  /// Whether it holds a "chat_template".
  bool hasChatTemplate = false;
};

/// Reads the tokenizer_config.json in the directory of `tokenizerPath`, if
/// there is one; fails on a file that is not a JSON object.
Expected<TokenizerConfig> readTokenizerConfig(const std::string &tokenizerPath);

/// The end-of-sequence token: the config's eos_token, else the
/// tokenizer's only special token (GPT-2's <|endoftext|>), else none.
/// Fails when the config names a token the tokenizer does not have.
Expected<std::optional<TokenId>> findEosToken(const Tokenizer &tokenizer,
                                              const TokenizerConfig &config);

/// The default chat format: one "<role>: <content>\n" line per message,
/// then "assistant: " for the model to continue.
std::string renderDefaultChat(const std::vector<ChatMessage> &messages);

} // namespace folio::server

#endif // FOLIO_RUNTIME_SERVER_CHATTEMPLATE_H
