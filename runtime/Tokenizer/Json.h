//===- Json.h - A small JSON reader for tokenizer.json ---------*- C++ -*-===//
//
// Just enough JSON for reading configuration files such as Hugging Face's
// tokenizer.json: a DOM of null/bool/number/string/array/object values with
// object members kept in file order. Strings are validated UTF-8 with \u
// escapes (surrogate pairs included) decoded. Errors name the line and
// column; nesting is limited so hostile input cannot exhaust the stack.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_TOKENIZER_JSON_H
#define FOLIO_RUNTIME_TOKENIZER_JSON_H

#include "runtime/Support/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace folio {
namespace json {

class Value;
using Array = std::vector<Value>;
using Member = std::pair<std::string, Value>;
using Object = std::vector<Member>;

/// One JSON value. Numbers are kept as double plus the literal's text, so
/// integers can be range-checked exactly.
class Value {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Value() = default;
  static Value makeBool(bool b);
  static Value makeNumber(double d, std::string literal);
  static Value makeString(std::string s);
  static Value makeArray(Array a);
  static Value makeObject(Object o);

  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::Null; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isNumber() const { return kind_ == Kind::Number; }
  bool isString() const { return kind_ == Kind::String; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isObject() const { return kind_ == Kind::Object; }

  bool asBool() const { return bool_; }
  double asNumber() const { return number_; }
  const std::string &asString() const { return string_; }
  const Array &asArray() const { return array_; }
  const Object &asObject() const { return object_; }

  /// The number as an integer when it is one (no fraction, no exponent
  /// producing a fraction) and fits in int64.
  std::optional<int64_t> asInteger() const;

  /// The first member named \p key of an object; null for non-objects.
  const Value *find(std::string_view key) const;

  /// "null", "a boolean", "a number", ... for error messages.
  static const char *kindName(Kind kind);

private:
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  double number_ = 0.0;
  std::string string_; // the string, or a number's literal text
  Array array_;
  Object object_;
};

/// Parses one JSON document (surrounding whitespace allowed).
Expected<Value> parse(std::string_view text);

/// "'<path>' must be <expected>, got <kind of value>": the error readers of
/// configuration files return for a field of the wrong type.
Status typeError(const std::string &path, const char *expected,
                 const Value &value);

} // namespace json
} // namespace folio

#endif // FOLIO_RUNTIME_TOKENIZER_JSON_H
