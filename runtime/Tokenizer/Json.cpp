//===- Json.cpp - A small JSON reader
//--------------------------------------===//

#include "runtime/Tokenizer/Json.h"

#include "runtime/Tokenizer/Unicode.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace folio {
namespace json {

Value Value::makeBool(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.bool_ = b;
  return v;
}

Value Value::makeNumber(double d, std::string literal) {
  Value v;
  v.kind_ = Kind::Number;
  v.number_ = d;
  v.string_ = std::move(literal);
  return v;
}

Value Value::makeString(std::string s) {
  Value v;
  v.kind_ = Kind::String;
  v.string_ = std::move(s);
  return v;
}

Value Value::makeArray(Array a) {
  Value v;
  v.kind_ = Kind::Array;
  v.array_ = std::move(a);
  return v;
}

Value Value::makeObject(Object o) {
  Value v;
  v.kind_ = Kind::Object;
  v.object_ = std::move(o);
  return v;
}

std::optional<int64_t> Value::asInteger() const {
  if (kind_ != Kind::Number)
    return std::nullopt;
  // Plain integer literals convert exactly; others only when the double is
  // integral and safely inside int64.
  if (string_.find_first_of(".eE") == std::string::npos) {
    errno = 0;
    char *end = nullptr;
    long long v = std::strtoll(string_.c_str(), &end, 10);
    if (errno == ERANGE || end != string_.c_str() + string_.size())
      return std::nullopt;
    return static_cast<int64_t>(v);
  }
  if (std::trunc(number_) != number_ || std::fabs(number_) > 9.0e15)
    return std::nullopt;
  return static_cast<int64_t>(number_);
}

const Value *Value::find(std::string_view key) const {
  if (kind_ != Kind::Object)
    return nullptr;
  for (const Member &m : object_)
    if (m.first == key)
      return &m.second;
  return nullptr;
}

const char *Value::kindName(Kind kind) {
  switch (kind) {
  case Kind::Null:
    return "null";
  case Kind::Bool:
    return "a boolean";
  case Kind::Number:
    return "a number";
  case Kind::String:
    return "a string";
  case Kind::Array:
    return "an array";
  case Kind::Object:
    return "an object";
  }
  return "?";
}

namespace {

/// Deep enough for any configuration file; shallow enough for any stack.
constexpr int kMaxDepth = 512;

class Parser {
public:
  explicit Parser(std::string_view text) : text_(text) {}

  Expected<Value> parseDocument() {
    Value v;
    if (!parseValue(v, 0))
      return status_;
    skipWhitespace();
    if (pos_ != text_.size()) {
      fail("unexpected trailing characters after the JSON value");
      return status_;
    }
    return v;
  }

private:
  std::string_view text_;
  size_t pos_ = 0;
  Status status_;

  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }

  /// Records the error (with its position) and returns false.
  bool fail(const std::string &message) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    status_ = Status::invalidArgument("JSON parse error at line " +
                                      std::to_string(line) + ", column " +
                                      std::to_string(column) + ": " + message);
    return false;
  }

  void skipWhitespace() {
    while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\n' ||
                        peek() == '\r'))
      ++pos_;
  }

  bool consumeLiteral(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word)
      return false;
    pos_ += word.size();
    return true;
  }

  bool parseValue(Value &out, int depth) {
    if (depth > kMaxDepth) {
      return fail("nesting deeper than " + std::to_string(kMaxDepth) +
                  " levels");
    }
    skipWhitespace();
    if (atEnd()) {
      return fail("unexpected end of input, expected a value");
    }
    char c = peek();
    if (c == '{')
      return parseObject(out, depth);
    if (c == '[')
      return parseArray(out, depth);
    if (c == '"') {
      std::string s;
      if (!parseString(s))
        return false;
      out = Value::makeString(std::move(s));
      return true;
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return parseNumber(out);
    if (consumeLiteral("true")) {
      out = Value::makeBool(true);
      return true;
    }
    if (consumeLiteral("false")) {
      out = Value::makeBool(false);
      return true;
    }
    if (consumeLiteral("null")) {
      out = Value();
      return true;
    }
    return fail(std::string("unexpected character '") + c + "'");
  }

  bool parseObject(Value &out, int depth) {
    ++pos_; // '{'
    Object members;
    skipWhitespace();
    if (!atEnd() && peek() == '}') {
      ++pos_;
      out = Value::makeObject(std::move(members));
      return true;
    }
    while (true) {
      skipWhitespace();
      if (atEnd() || peek() != '"') {
        return fail("expected a string key in an object");
      }
      std::string key;
      if (!parseString(key))
        return false;
      skipWhitespace();
      if (atEnd() || peek() != ':') {
        return fail("expected ':' after an object key");
      }
      ++pos_;
      Value v;
      if (!parseValue(v, depth + 1))
        return false;
      members.emplace_back(std::move(key), std::move(v));
      skipWhitespace();
      if (atEnd()) {
        return fail("unexpected end of input in an object");
      }
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        out = Value::makeObject(std::move(members));
        return true;
      }
      return fail("expected ',' or '}' in an object");
    }
  }

  bool parseArray(Value &out, int depth) {
    ++pos_; // '['
    Array items;
    skipWhitespace();
    if (!atEnd() && peek() == ']') {
      ++pos_;
      out = Value::makeArray(std::move(items));
      return true;
    }
    while (true) {
      Value v;
      if (!parseValue(v, depth + 1))
        return false;
      items.push_back(std::move(v));
      skipWhitespace();
      if (atEnd()) {
        return fail("unexpected end of input in an array");
      }
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        out = Value::makeArray(std::move(items));
        return true;
      }
      return fail("expected ',' or ']' in an array");
    }
  }

  bool parseHex4(char32_t &value) {
    if (pos_ + 4 > text_.size()) {
      return fail("truncated \\u escape");
    }
    value = 0;
    for (int i = 0; i < 4; ++i) {
      char h = text_[pos_++];
      value <<= 4;
      if (h >= '0' && h <= '9')
        value |= h - '0';
      else if (h >= 'a' && h <= 'f')
        value |= h - 'a' + 10;
      else if (h >= 'A' && h <= 'F')
        value |= h - 'A' + 10;
      else {
        --pos_;
        return fail("invalid hex digit in a \\u escape");
      }
    }
    return true;
  }

  bool parseString(std::string &out) {
    ++pos_; // '"'
    while (true) {
      if (atEnd()) {
        return fail("unterminated string");
      }
      auto c = static_cast<unsigned char>(peek());
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) {
        return fail("unescaped control character in a string");
      }
      if (c != '\\') {
        // Copy a run of plain bytes, checking that it is valid UTF-8.
        size_t start = pos_;
        while (!atEnd() && peek() != '"' && peek() != '\\' &&
               static_cast<unsigned char>(peek()) >= 0x20) {
          char32_t cp;
          if (!unicode::decodeUtf8(text_, pos_, cp)) {
            return fail("invalid UTF-8 in a string");
          }
        }
        out.append(text_.substr(start, pos_ - start));
        continue;
      }
      ++pos_; // '\\'
      if (atEnd()) {
        return fail("unterminated escape");
      }
      char e = text_[pos_++];
      switch (e) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '/':
        out += '/';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        char32_t cp = 0;
        if (!parseHex4(cp))
          return false;
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return fail("lone trailing surrogate in a \\u escape");
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          char32_t low = 0;
          if (!consumeLiteral("\\u") || !parseHex4(low) || low < 0xDC00 ||
              low > 0xDFFF) {
            // parseHex4 may have failed with its own message already.
            return status_.isOk()
                       ? fail("lone leading surrogate in a \\u escape")
                       : false;
          }
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        unicode::appendUtf8(out, cp);
        break;
      }
      default:
        --pos_;
        return fail(std::string("invalid escape '\\") + e + "'");
      }
    }
  }

  bool parseNumber(Value &out) {
    size_t start = pos_;
    if (peek() == '-')
      ++pos_;
    auto digits = [&] {
      size_t n = 0;
      while (!atEnd() && peek() >= '0' && peek() <= '9') {
        ++pos_;
        ++n;
      }
      return n;
    };
    size_t intStart = pos_;
    size_t intDigits = digits();
    if (intDigits == 0 || (intDigits > 1 && text_[intStart] == '0')) {
      return fail("malformed number");
    }
    if (!atEnd() && peek() == '.') {
      ++pos_;
      if (digits() == 0) {
        return fail("malformed number: no digits after '.'");
      }
    }
    if (!atEnd() && (peek() == 'e' || peek() == 'E')) {
      ++pos_;
      if (!atEnd() && (peek() == '+' || peek() == '-'))
        ++pos_;
      if (digits() == 0) {
        return fail("malformed number: no digits in the exponent");
      }
    }
    std::string literal(text_.substr(start, pos_ - start));
    double d = std::strtod(literal.c_str(), nullptr);
    out = Value::makeNumber(d, std::move(literal));
    return true;
  }
};

} // namespace

Expected<Value> parse(std::string_view text) {
  return Parser(text).parseDocument();
}

Status typeError(const std::string &path, const char *expected,
                 const Value &value) {
  return Status::invalidArgument("'" + path + "' must be " + expected +
                                 ", got " + Value::kindName(value.kind()));
}

} // namespace json
} // namespace folio
