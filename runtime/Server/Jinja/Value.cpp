//===- Value.cpp - Values of the chat-template language -------------------===//

#include "runtime/Server/Jinja/Value.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace folio::jinja {

const Value *Dict::find(const Value &key) const {
  for (const auto &[k, v] : items)
    if (k.equals(key))
      return &v;
  return nullptr;
}

void Dict::set(const Value &key, Value value) {
  for (auto &[k, v] : items)
    if (k.equals(key)) {
      v = std::move(value);
      return;
    }
  items.emplace_back(key, std::move(value));
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}

Value::Value(bool b) : kind_(Kind::Bool), b_(b) {}
Value::Value(int64_t i) : kind_(Kind::Int), i_(i) {}
Value::Value(double d) : kind_(Kind::Float), d_(d) {}
Value::Value(std::string s)
    : kind_(Kind::String),
      s_(std::make_shared<const std::string>(std::move(s))) {}

Value Value::list(ValueList items) {
  Value v;
  v.kind_ = Kind::List;
  v.list_ = std::make_shared<const ValueList>(std::move(items));
  return v;
}

Value Value::tuple(ValueList items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::Tuple;
  return v;
}

Value Value::dict(std::shared_ptr<Dict> d) {
  Value v;
  v.kind_ = Kind::Dict;
  v.dict_ = std::move(d);
  return v;
}

Value Value::dict() { return dict(std::make_shared<Dict>()); }

Value Value::function(std::string name, Function f) {
  Value v;
  v.kind_ = Kind::Function;
  v.s_ = std::make_shared<const std::string>(std::move(name));
  v.fn_ = std::make_shared<const Function>(std::move(f));
  return v;
}

double Value::asDouble() const {
  switch (kind_) {
  case Kind::Float:
    return d_;
  case Kind::Int:
    return double(i_);
  case Kind::Bool:
    return b_ ? 1.0 : 0.0;
  default:
    return 0.0;
  }
}

bool Value::truthy() const {
  switch (kind_) {
  case Kind::Undefined:
  case Kind::None:
    return false;
  case Kind::Bool:
    return b_;
  case Kind::Int:
    return i_ != 0;
  case Kind::Float:
    return d_ != 0.0;
  case Kind::String:
    return !s_->empty();
  case Kind::List:
  case Kind::Tuple:
    return !list_->empty();
  case Kind::Dict:
    return !dict_->items.empty();
  case Kind::Function:
    return true;
  }
  return false;
}

std::string formatFloat(double d) {
  if (std::isnan(d))
    return "nan";
  if (std::isinf(d))
    return d < 0 ? "-inf" : "inf";
  // The fewest significant digits that read back as the same double, as
  // Python's repr() picks them.
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*e", precision - 1, d);
    if (std::strtod(buf, nullptr) == d)
      break;
  }
  std::string text(buf);
  bool negative = text[0] == '-';
  if (negative)
    text.erase(0, 1);
  size_t e = text.find('e');
  int exponent = std::atoi(text.c_str() + e + 1);
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (text[i] != '.')
      digits += text[i];
  while (digits.size() > 1 && digits.back() == '0')
    digits.pop_back();
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent >= 0) {
      std::string whole =
          digits.substr(0, std::min<size_t>(digits.size(), exponent + 1));
      whole.append(size_t(exponent + 1) - whole.size(), '0');
      std::string frac = digits.size() > size_t(exponent + 1)
                             ? digits.substr(size_t(exponent + 1))
                             : "0";
      return out + whole + "." + frac;
    }
    return out + "0." + std::string(size_t(-exponent - 1), '0') + digits;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1)
    out += "." + digits.substr(1);
  char exp[16];
  std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+',
                std::abs(exponent));
  return out + exp;
}

std::string reprString(const std::string &s) {
  bool single = s.find('\'') != std::string::npos;
  bool dbl = s.find('"') != std::string::npos;
  char quote = single && !dbl ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == quote)
      out += std::string("\\") + char(quote);
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else
      out += char(c);
  }
  return out + quote;
}

std::string Value::str() const {
  switch (kind_) {
  case Kind::Undefined:
    return "";
  case Kind::String:
    return *s_;
  default:
    return repr();
  }
}

std::string Value::repr() const {
  switch (kind_) {
  case Kind::Undefined:
    return "";
  case Kind::None:
    return "None";
  case Kind::Bool:
    return b_ ? "True" : "False";
  case Kind::Int:
    return std::to_string(i_);
  case Kind::Float:
    return formatFloat(d_);
  case Kind::String:
    return reprString(*s_);
  case Kind::List:
  case Kind::Tuple: {
    bool tuple = kind_ == Kind::Tuple;
    std::string out = tuple ? "(" : "[";
    for (size_t i = 0; i < list_->size(); ++i)
      out += (i ? ", " : "") + (*list_)[i].repr();
    if (tuple && list_->size() == 1)
      out += ",";
    return out + (tuple ? ")" : "]");
  }
  case Kind::Dict: {
    if (dict_->isNamespace)
      return "<Namespace>";
    std::string out = "{";
    for (size_t i = 0; i < dict_->items.size(); ++i)
      out += (i ? ", " : "") + dict_->items[i].first.repr() + ": " +
             dict_->items[i].second.repr();
    return out + "}";
  }
  case Kind::Function:
    return "<function " + *s_ + ">";
  }
  return "";
}

const char *Value::typeName() const {
  switch (kind_) {
  case Kind::Undefined:
    return "undefined";
  case Kind::None:
    return "NoneType";
  case Kind::Bool:
    return "bool";
  case Kind::Int:
    return "int";
  case Kind::Float:
    return "float";
  case Kind::String:
    return "str";
  case Kind::List:
    return "list";
  case Kind::Tuple:
    return "tuple";
  case Kind::Dict:
    return dict_->isNamespace ? "Namespace" : "dict";
  case Kind::Function:
    return "function";
  }
  return "?";
}

bool Value::equals(const Value &other) const {
  if (isNumber() && other.isNumber()) {
    if (isFloat() || other.isFloat())
      return asDouble() == other.asDouble();
    return asInt() == other.asInt();
  }
  if (isSequence() && other.isSequence()) {
    if (kind_ != other.kind_ || list_->size() != other.list_->size())
      return false;
    for (size_t i = 0; i < list_->size(); ++i)
      if (!(*list_)[i].equals((*other.list_)[i]))
        return false;
    return true;
  }
  if (kind_ != other.kind_)
    return false;
  switch (kind_) {
  case Kind::Undefined:
  case Kind::None:
    return true;
  case Kind::String:
    return *s_ == *other.s_;
  case Kind::Dict: {
    if (dict_ == other.dict_)
      return true;
    if (dict_->items.size() != other.dict_->items.size())
      return false;
    for (const auto &[k, v] : dict_->items) {
      const Value *o = other.dict_->find(k);
      if (!o || !o->equals(v))
        return false;
    }
    return true;
  }
  case Kind::Function:
    return fn_ == other.fn_;
  default:
    return false;
  }
}

} // namespace folio::jinja
