//===- Lexer.h - Chat-template source to tokens ---------------*- C++ -*-===//
//
// Internal to runtime/Server/Jinja: the lexer Parser.cpp reads from. Text
// between tags is one token with Hugging Face's whitespace rules already
// applied (trim_blocks, lstrip_blocks, `-`); a tag is its begin token, its
// expression tokens and its end token; {% raw %} blocks are text.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SERVER_JINJA_LEXER_H
#define FOLIO_RUNTIME_SERVER_JINJA_LEXER_H

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace folio::jinja::detail {

struct Token {
  enum class Kind {
    Text,
    OutputBegin,
    OutputEnd,
    BlockBegin,
    BlockEnd,
    Name,
    String,
    Int,
    Float,
    Op,
    End
  };
  Kind kind;
  std::string text;
  int64_t intValue = 0;
  double floatValue = 0;
  size_t offset = 0;
};

/// Line and column (both from 1) of byte offsets in the source.
class Positions {
public:
  explicit Positions(const std::string &source) {
    starts.push_back(0);
    for (size_t i = 0; i < source.size(); ++i)
      if (source[i] == '\n')
        starts.push_back(i + 1);
  }
  std::pair<int, int> at(size_t offset) const {
    auto it = std::upper_bound(starts.begin(), starts.end(), offset);
    size_t line = size_t(it - starts.begin());
    return {int(line), int(offset - starts[line - 1] + 1)};
  }

private:
  std::vector<size_t> starts;
};

/// Jinja reads the source line by line: \r\n and \r become \n, and one
/// trailing newline is dropped (keep_trailing_newline is off).
std::string normalizeNewlines(const std::string &source);

/// The tokens of normalized source text, ending with a Token::Kind::End;
/// throws TemplateError.
std::vector<Token> lexTemplate(const std::string &text,
                               const Positions &positions);

} // namespace folio::jinja::detail

#endif // FOLIO_RUNTIME_SERVER_JINJA_LEXER_H
