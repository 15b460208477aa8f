//===- Value.h - Values of the chat-template language ---------*- C++ -*-===//
//
// Hugging Face chat templates are Jinja2 templates evaluated by Python, so
// their values behave like Python's: None, bool, int, float, str, list,
// tuple, dict (insertion-ordered), plus Jinja's `undefined` (a missing
// variable or key, which prints as nothing and is false) and the callables
// a template can call (macros, range, namespace, ...). Lists and dicts are
// shared by reference as in Python; templates cannot mutate them (Hugging
// Face renders in Jinja's immutable sandbox) except a namespace's
// attributes.
//
// str() and repr() follow Python's spelling (True, None, 1.0, ['a', 'b']),
// because a template that prints a value prints Python's text.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SERVER_JINJA_VALUE_H
#define FOLIO_RUNTIME_SERVER_JINJA_VALUE_H

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace folio::jinja {

class Value;
using ValueList = std::vector<Value>;
using KeywordArgs = std::vector<std::pair<std::string, Value>>;
using Function =
    std::function<Value(const ValueList &args, const KeywordArgs &kwargs)>;

/// An insertion-ordered dict; templates hold a handful of keys, so lookups
/// are linear.
struct Dict {
  std::vector<std::pair<Value, Value>> items;
  /// Jinja's namespace(): the one object whose attributes `set` may assign.
  bool isNamespace = false;

  const Value *find(const Value &key) const;
  /// Inserts or replaces.
  void set(const Value &key, Value value);
};

class Value {
public:
  enum class Kind : uint8_t {
    Undefined,
    None,
    Bool,
    Int,
    Float,
    String,
    List,
    Tuple,
    Dict,
    Function
  };

  Value() = default;
  static Value none();
  Value(bool b);
  Value(int64_t i);
  Value(int i) : Value(int64_t(i)) {}
  Value(double d);
  Value(std::string s);
  Value(const char *s) : Value(std::string(s)) {}
  static Value list(ValueList items);
  static Value tuple(ValueList items);
  static Value dict(std::shared_ptr<Dict> d);
  static Value dict();
  static Value function(std::string name, Function f);

  Kind kind() const { return kind_; }
  bool isUndefined() const { return kind_ == Kind::Undefined; }
  bool isNone() const { return kind_ == Kind::None; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isInt() const { return kind_ == Kind::Int; }
  bool isFloat() const { return kind_ == Kind::Float; }
  /// Python's numbers: int, float and bool.
  bool isNumber() const { return isInt() || isFloat() || isBool(); }
  bool isString() const { return kind_ == Kind::String; }
  /// A list or a tuple.
  bool isSequence() const {
    return kind_ == Kind::List || kind_ == Kind::Tuple;
  }
  bool isDict() const { return kind_ == Kind::Dict; }
  bool isFunction() const { return kind_ == Kind::Function; }

  bool asBool() const { return b_; }
  int64_t asInt() const { return isBool() ? int64_t(b_) : i_; }
  /// The number as a double (int, float or bool).
  double asDouble() const;
  const std::string &asString() const { return *s_; }
  const ValueList &asList() const { return *list_; }
  const Dict &asDict() const { return *dict_; }
  Dict &mutableDict() const { return *dict_; }
  const std::string &functionName() const { return *s_; }
  const Function &asFunction() const { return *fn_; }

  /// Python's truth value; undefined is false.
  bool truthy() const;
  /// Python's str(); undefined prints as the empty string.
  std::string str() const;
  /// Python's repr().
  std::string repr() const;
  /// Python's type name, for messages ("str", "list", "undefined", ...).
  const char *typeName() const;

  /// Python's ==, with 1 == 1.0 == True.
  bool equals(const Value &other) const;

private:
  Kind kind_ = Kind::Undefined;
  bool b_ = false;
  int64_t i_ = 0;
  double d_ = 0;
  std::shared_ptr<const std::string> s_;
  std::shared_ptr<const ValueList> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<const Function> fn_;
};

/// Python's repr() of a float (shortest round-trip digits, "1.0", "inf").
std::string formatFloat(double d);
/// Python's repr() of a str: single quotes unless the text holds ' and no
/// ", escapes as Python writes them.
std::string reprString(const std::string &s);

} // namespace folio::jinja

#endif // FOLIO_RUNTIME_SERVER_JINJA_VALUE_H
