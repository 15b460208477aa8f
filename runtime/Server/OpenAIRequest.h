//===- OpenAIRequest.h - OpenAI request bodies, parsed and checked -*- C++ -*-//
//
// The JSON bodies of /v1/completions and /v1/chat/completions as OpenAI and
// vLLM define them, mapped onto SamplingParams. Every field is either
// honoured or refused with a 400 that names it: a client that asks for
// something folio-serve does not do must not get something else silently.
// JSON null counts as absent, as the OpenAI clients send it.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SERVER_OPENAIREQUEST_H
#define FOLIO_RUNTIME_SERVER_OPENAIREQUEST_H

#include "runtime/Sampler/SamplingParams.h"
#include "runtime/Support/Types.h"

#include <optional>
#include <string>
#include <vector>

namespace folio::server {

enum class Endpoint { Completions, ChatCompletions };

/// A failed request, as the error response will carry it.
struct ApiError {
  int status = 400;
  std::string message;
  /// The request field at fault, if one is.
  std::string param;
  /// OpenAI's machine-readable code, e.g. "model_not_found".
  std::string code;
};

struct ChatMessage {
  std::string role;
  std::string content;
};

/// One prompt of /v1/completions: text, or token ids.
struct PromptInput {
  std::optional<std::string> text;
  std::vector<TokenId> ids;
};

struct GenerateRequest {
  Endpoint endpoint = Endpoint::Completions;
  std::string model;
  /// /v1/completions: the prompts, one for a string or a list of ids, each
  /// of a list of strings or id lists (a batch). Prompt i's samples are
  /// choices i * n to i * n + n - 1, as in OpenAI's API.
  std::vector<PromptInput> prompts;
  /// /v1/chat/completions.
  std::vector<ChatMessage> messages;
  SamplingParams params;
  std::vector<std::string> stop;
  bool stream = false;
  /// stream_options.include_usage: a last chunk with the token counts.
  bool includeUsage = false;
  /// Completions: the prompt's text precedes each choice's text.
  bool echo = false;
  /// The field params.maxTokens came from, for the errors that name it.
  std::string maxTokensField = "max_tokens";
};

/// Parses `body` for `endpoint` into `out`, or says what is wrong with it.
/// Without max_tokens, completions generate 16 tokens (OpenAI's default)
/// and chat completions up to the end of the context.
std::optional<ApiError> parseGenerateRequest(Endpoint endpoint,
                                             const std::string &body,
                                             GenerateRequest &out);

/// The error response body: {"error": {"message", "type", "param",
/// "code"}}.
std::string errorBody(const ApiError &error);

} // namespace folio::server

#endif // FOLIO_RUNTIME_SERVER_OPENAIREQUEST_H
