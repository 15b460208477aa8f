//===- ChatTemplate.h - Chat messages to prompt text -----------*- C++ -*-===//
//
// Hugging Face models keep their chat template (Jinja) and special-token
// names in a tokenizer_config.json beside tokenizer.json (newer exports put
// the template in chat_template.jinja there instead). folio-serve renders
// that template the way transformers' apply_chat_template does
// (runtime/Server/Jinja), with the special tokens as variables and
// add_generation_prompt set; a model without one gets the documented
// default format below.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SERVER_CHATTEMPLATE_H
#define FOLIO_RUNTIME_SERVER_CHATTEMPLATE_H

#include "runtime/Server/Jinja/Template.h"
#include "runtime/Server/OpenAIRequest.h"
#include "runtime/Support/Status.h"
#include "runtime/Tokenizer/Tokenizer.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace folio::server {

/// What folio-serve reads of tokenizer_config.json.
struct TokenizerConfig {
  /// The file read; empty when there is none.
  std::string path;
  /// "eos_token" (a string, or an object with "content").
  std::optional<std::string> eosToken;
  /// The chat template's Jinja source ("chat_template", the one named
  /// "default" when it is a list of named templates, else the
  /// chat_template.jinja beside it); empty when the model has none.
  std::string chatTemplate;
  /// Where chatTemplate came from, for messages.
  std::string chatTemplatePath;
  /// Every "<name>_token" entry (bos_token, eos_token, pad_token, ...) as
  /// text: the variables a chat template sees.
  std::vector<std::pair<std::string, std::string>> specialTokens;

  /// A template was given (an empty one too, which is an error later).
  bool hasChatTemplate() const { return !chatTemplatePath.empty(); }
};

/// Reads the tokenizer_config.json (and chat_template.jinja) in the
/// directory of `tokenizerPath`, if there are any; fails on a file that is
/// not a JSON object or on malformed fields, naming them.
Expected<TokenizerConfig> readTokenizerConfig(const std::string &tokenizerPath);

/// readTokenizerConfig on texts that are no files of their own (a model
/// binary embeds them): a tokenizer_config.json and a chat_template.jinja,
/// each absent when nullopt; the paths name them in messages.
Expected<TokenizerConfig> parseTokenizerConfig(
    const std::optional<std::string> &configText, const std::string &configPath,
    const std::optional<std::string> &jinjaText, const std::string &jinjaPath);

/// The end-of-sequence token: the config's eos_token, else the
/// tokenizer's only special token (GPT-2's <|endoftext|>), else none.
/// Fails when the config names a token the tokenizer does not have.
Expected<std::optional<TokenId>> findEosToken(const Tokenizer &tokenizer,
                                              const TokenizerConfig &config);

/// A model's parsed chat template with the variables it renders with.
class ChatTemplate {
public:
  /// Parses config.chatTemplate; a syntax error or an unsupported
  /// construct fails naming the file, line and column.
  static Expected<std::shared_ptr<const ChatTemplate>>
  create(const TokenizerConfig &config);

  /// The prompt for `messages`, ending with the assistant's turn
  /// (add_generation_prompt). An error, including the template's own
  /// raise_exception (e.g. roles that do not alternate), fails with
  /// StatusCode::InvalidArgument.
  Expected<std::string> render(const std::vector<ChatMessage> &messages,
                               bool addGenerationPrompt = true) const;

  const std::string &path() const { return path_; }

private:
  jinja::Template template_;
  std::vector<std::pair<std::string, std::string>> specialTokens_;
  std::string path_;
};

/// The default chat format: one "<role>: <content>\n" line per message,
/// then "assistant: " for the model to continue.
std::string renderDefaultChat(const std::vector<ChatMessage> &messages);

} // namespace folio::server

#endif // FOLIO_RUNTIME_SERVER_CHATTEMPLATE_H
