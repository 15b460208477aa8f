//===- Lexer.cpp - Chat-template source to tokens -------------------------===//
//
// Whitespace follows Hugging Face's settings: trim_blocks (the newline
// after a block tag is dropped), lstrip_blocks (spaces and tabs before a
// block tag on its line are dropped), `-` on a tag strips all whitespace on
// that side.
//
//===----------------------------------------------------------------------===//

#include "runtime/Server/Jinja/Lexer.h"

#include "runtime/Server/Jinja/Ast.h"
#include "runtime/Server/Jinja/Builtins.h"

#include <cerrno>
#include <cstdlib>

namespace folio::jinja::detail {

namespace {

bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
         c == '\f';
}
bool isNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool isDigit(char c) { return c >= '0' && c <= '9'; }

constexpr size_t kMaxTagTokens = 4000;

class Lexer {
public:
  Lexer(const std::string &source, const Positions &positions)
      : src(source), positions(positions) {}

  std::vector<Token> run() {
    bool lineStarting = true;
    while (pos < src.size()) {
      size_t start = findTag(pos);
      std::string text = src.substr(pos, start - pos);
      if (start == src.size()) {
        emitText(text, pos);
        break;
      }
      char type = src[start + 1];
      char modifier = start + 2 < src.size() ? src[start + 2] : '\0';
      bool isBlockLike = type == '%' || type == '#';
      if (modifier == '-') {
        while (!text.empty() && isSpace(text.back()))
          text.pop_back();
      } else if (isBlockLike && modifier != '+') {
        // lstrip_blocks: only spaces and tabs between the line's start and
        // the tag.
        size_t lineStart = text.rfind('\n');
        lineStart = lineStart == std::string::npos ? 0 : lineStart + 1;
        if ((lineStart > 0 || lineStarting) &&
            std::all_of(text.begin() + lineStart, text.end(),
                        [](char c) { return c == ' ' || c == '\t'; }))
          text.erase(lineStart);
      }
      emitText(text, pos);
      size_t inner = start + 2 + (modifier == '-' || modifier == '+');
      if (type == '#')
        lexComment(start, inner);
      else
        lexTag(start, inner, type == '{');
      lineStarting = pos > 0 && src[pos - 1] == '\n';
    }
    tokens.push_back(Token{Token::Kind::End, "", 0, 0, src.size()});
    return std::move(tokens);
  }

private:
  [[noreturn]] void fail(const std::string &message, size_t offset) {
    auto [line, column] = positions.at(offset);
    throw TemplateError(message, line, column);
  }

  size_t findTag(size_t from) const {
    for (size_t i = from; i + 1 < src.size(); ++i)
      if (src[i] == '{' &&
          (src[i + 1] == '{' || src[i + 1] == '%' || src[i + 1] == '#'))
        return i;
    return src.size();
  }

  void emitText(const std::string &text, size_t offset) {
    if (!text.empty())
      tokens.push_back(Token{Token::Kind::Text, text, 0, 0, offset});
  }

  /// After a tag: `-` strips every whitespace character, else trim_blocks
  /// drops one newline after a block or comment tag.
  void afterTag(bool strip, bool blockLike) {
    if (strip) {
      while (pos < src.size() && isSpace(src[pos]))
        ++pos;
    } else if (blockLike && pos < src.size() && src[pos] == '\n') {
      ++pos;
    }
  }

  void lexComment(size_t start, size_t inner) {
    size_t end = src.find("#}", inner);
    if (end == std::string::npos)
      fail("unterminated comment: '{#' without '#}'", start);
    bool strip = end > inner && src[end - 1] == '-';
    pos = end + 2;
    afterTag(strip, true);
  }

  void lexTag(size_t start, size_t inner, bool output) {
    const char *close = output ? "}}" : "%}";
    size_t firstToken = tokens.size() + 1;
    tokens.push_back(
        Token{output ? Token::Kind::OutputBegin : Token::Kind::BlockBegin, "",
              0, 0, start});
    pos = inner;
    bool strip = false;
    // Brackets opened in the tag: `}}` closes a dict literal, not the tag,
    // while one is open (Jinja balances them the same way).
    std::string open;
    for (;;) {
      while (pos < src.size() && isSpace(src[pos]))
        ++pos;
      if (pos >= src.size())
        fail(std::string("unterminated tag: '") + (output ? "{{" : "{%") +
                 "' without '" + close + "'",
             start);
      if (open.empty()) {
        if (src.compare(pos, 2, close) == 0)
          break;
        if (src[pos] == '-' && src.compare(pos + 1, 2, close) == 0) {
          strip = true;
          ++pos;
          break;
        }
      }
      // Expression trees are walked recursively (parser, renderer,
      // destructor); a tag's token count bounds their height.
      if (tokens.size() - firstToken >= kMaxTagTokens)
        fail("a tag holds more than " + std::to_string(kMaxTagTokens) +
                 " tokens",
             start);
      lexToken();
      const Token &t = tokens.back();
      if (t.kind != Token::Kind::Op || t.text.size() != 1)
        continue;
      char c = t.text[0];
      if (c == '(' || c == '[' || c == '{') {
        open += c;
      } else if (c == ')' || c == ']' || c == '}') {
        char expected = c == ')' ? '(' : c == ']' ? '[' : '{';
        if (open.empty() || open.back() != expected)
          fail(std::string("unbalanced '") + c + "'", t.offset);
        open.pop_back();
      }
    }
    tokens.push_back(
        Token{output ? Token::Kind::OutputEnd : Token::Kind::BlockEnd, "", 0, 0,
              pos});
    pos += 2;
    afterTag(strip, !output);
    // {% raw %}: everything up to {% endraw %} is text.
    if (!output && tokens.size() == firstToken + 2 &&
        tokens[firstToken].kind == Token::Kind::Name &&
        tokens[firstToken].text == "raw") {
      tokens.resize(firstToken - 1);
      lexRaw(start);
    }
  }

  void lexRaw(size_t start) {
    for (size_t search = pos;;) {
      size_t tag = src.find("{%", search);
      if (tag == std::string::npos)
        fail("unterminated raw block: '{% raw %}' without '{% endraw %}'",
             start);
      size_t i = tag + 2;
      bool stripBefore = i < src.size() && src[i] == '-';
      if (i < src.size() && (src[i] == '-' || src[i] == '+'))
        ++i;
      while (i < src.size() && isSpace(src[i]))
        ++i;
      if (src.compare(i, 6, "endraw") != 0) {
        search = tag + 2;
        continue;
      }
      i += 6;
      while (i < src.size() && isSpace(src[i]))
        ++i;
      bool stripAfter = i < src.size() && src[i] == '-';
      if (stripAfter)
        ++i;
      if (src.compare(i, 2, "%}") != 0)
        fail("malformed '{% endraw %}'", tag);
      std::string text = src.substr(pos, tag - pos);
      if (stripBefore)
        while (!text.empty() && isSpace(text.back()))
          text.pop_back();
      emitText(text, pos);
      pos = i + 2;
      afterTag(stripAfter, true);
      return;
    }
  }

  void lexToken() {
    size_t start = pos;
    char c = src[pos];
    if (isNameStart(c)) {
      while (pos < src.size() && (isNameStart(src[pos]) || isDigit(src[pos])))
        ++pos;
      tokens.push_back(Token{Token::Kind::Name, src.substr(start, pos - start),
                             0, 0, start});
      return;
    }
    if (isDigit(c)) {
      while (pos < src.size() && (isDigit(src[pos]) || src[pos] == '_'))
        ++pos;
      bool isFloat = false;
      if (pos + 1 < src.size() && src[pos] == '.' && isDigit(src[pos + 1])) {
        isFloat = true;
        ++pos;
        while (pos < src.size() && (isDigit(src[pos]) || src[pos] == '_'))
          ++pos;
      }
      if (pos < src.size() && (src[pos] == 'e' || src[pos] == 'E')) {
        size_t e = pos + 1;
        if (e < src.size() && (src[e] == '+' || src[e] == '-'))
          ++e;
        if (e < src.size() && isDigit(src[e])) {
          isFloat = true;
          pos = e;
          while (pos < src.size() && isDigit(src[pos]))
            ++pos;
        }
      }
      std::string text = src.substr(start, pos - start);
      text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
      Token t{isFloat ? Token::Kind::Float : Token::Kind::Int, text, 0, 0,
              start};
      if (isFloat) {
        t.floatValue = std::strtod(text.c_str(), nullptr);
      } else {
        errno = 0;
        t.intValue = std::strtoll(text.c_str(), nullptr, 10);
        if (errno == ERANGE)
          fail("integer literal " + text + " does not fit in 64 bits", start);
      }
      tokens.push_back(t);
      return;
    }
    if (c == '\'' || c == '"') {
      tokens.push_back(Token{Token::Kind::String, lexString(c), 0, 0, start});
      return;
    }
    static const char *const twoChar[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const char *op : twoChar)
      if (src.compare(pos, 2, op) == 0) {
        pos += 2;
        tokens.push_back(Token{Token::Kind::Op, op, 0, 0, start});
        return;
      }
    if (std::string("+-*/%~<>=()[]{},.:|").find(c) != std::string::npos) {
      ++pos;
      tokens.push_back(Token{Token::Kind::Op, std::string(1, c), 0, 0, start});
      return;
    }
    fail(std::string("unexpected character '") + c + "' in a tag", start);
  }

  /// A quoted string with Python's escapes.
  std::string lexString(char quote) {
    size_t start = pos++;
    std::string out;
    while (pos < src.size() && src[pos] != quote) {
      char c = src[pos++];
      if (c != '\\' || pos >= src.size()) {
        out += c;
        continue;
      }
      char e = src[pos++];
      switch (e) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case '0':
        out += '\0';
        break;
      case '\\':
      case '\'':
      case '"':
        out += e;
        break;
      case '\n':
        break;
      case 'x':
      case 'u':
      case 'U': {
        size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        if (pos + digits > src.size())
          fail("truncated \\" + std::string(1, e) + " escape", pos - 2);
        std::string hex = src.substr(pos, digits);
        char *end = nullptr;
        unsigned long cp = std::strtoul(hex.c_str(), &end, 16);
        if (end != hex.c_str() + digits || cp > 0x10FFFF)
          fail("bad \\" + std::string(1, e) + " escape", pos - 2);
        appendUtf8(out, uint32_t(cp));
        pos += digits;
        break;
      }
      default: // Python keeps unknown escapes as written.
        out += '\\';
        out += e;
      }
    }
    if (pos >= src.size())
      fail("unterminated string literal", start);
    ++pos;
    return out;
  }

  const std::string &src;
  const Positions &positions;
  size_t pos = 0;
  std::vector<Token> tokens;
};

} // namespace

std::string normalizeNewlines(const std::string &source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n')
        ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n')
    out.pop_back();
  return out;
}

std::vector<Token> lexTemplate(const std::string &text,
                               const Positions &positions) {
  return Lexer(text, positions).run();
}

} // namespace folio::jinja::detail
