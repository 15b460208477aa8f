//===- Operators.cpp - Arithmetic, comparison, indexing, slicing ----------===//

#include "runtime/Server/Jinja/Builtins.h"

#include <cmath>

namespace folio::jinja::detail {

void fail(const std::string &message) { throw TemplateError(message, 0, 0); }

std::vector<std::string> characters(const std::string &s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    size_t n = c < 0x80         ? 1
               : (c >> 5) == 6  ? 2
               : (c >> 4) == 14 ? 3
               : (c >> 3) == 30 ? 4
                                : 1;
    if (i + n > s.size())
      n = 1;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80)
        n = 1; // Not UTF-8: one byte per character.
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

void appendUtf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

uint32_t decodeUtf8(const std::string &c) {
  unsigned char b = c[0];
  if (c.size() == 1)
    return b;
  uint32_t cp = b & (0xFF >> (c.size() + 1));
  for (size_t i = 1; i < c.size(); ++i)
    cp = (cp << 6) | (static_cast<unsigned char>(c[i]) & 0x3F);
  return cp;
}

namespace {

std::string operandTypes(const char *op, const Value &a, const Value &b) {
  return std::string("unsupported operand types for ") + op + ": '" +
         a.typeName() + "' and '" + b.typeName() + "'";
}

bool isIntLike(const Value &v) { return v.isInt() || v.isBool(); }

/// a op b on int64, failing on overflow (Python's ints do not overflow;
/// a template needing more than 64 bits is refused).
template <typename Op> int64_t checked(int64_t a, int64_t b, Op op) {
  int64_t r = 0;
  if (op(a, b, &r))
    fail("integer overflow");
  return r;
}

bool addOverflow(int64_t a, int64_t b, int64_t *r) {
  return __builtin_add_overflow(a, b, r);
}
bool subOverflow(int64_t a, int64_t b, int64_t *r) {
  return __builtin_sub_overflow(a, b, r);
}
bool mulOverflow(int64_t a, int64_t b, int64_t *r) {
  return __builtin_mul_overflow(a, b, r);
}

Value repeat(const Value &seq, int64_t times) {
  if (times > 1 << 20)
    fail("repetition count " + std::to_string(times) + " is too large");
  if (seq.isString()) {
    std::string out;
    for (int64_t i = 0; i < times; ++i)
      out += seq.asString();
    return Value(std::move(out));
  }
  ValueList out;
  for (int64_t i = 0; i < times; ++i)
    out.insert(out.end(), seq.asList().begin(), seq.asList().end());
  return seq.kind() == Value::Kind::Tuple ? Value::tuple(std::move(out))
                                          : Value::list(std::move(out));
}

/// Python's ordering of two values, or a failure when they do not order.
int order(const char *op, const Value &a, const Value &b) {
  if (a.isNumber() && b.isNumber()) {
    if (isIntLike(a) && isIntLike(b))
      return a.asInt() < b.asInt() ? -1 : a.asInt() > b.asInt() ? 1 : 0;
    double x = a.asDouble(), y = b.asDouble();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.isString() && b.isString())
    return a.asString().compare(b.asString()) < 0   ? -1
           : a.asString().compare(b.asString()) > 0 ? 1
                                                    : 0;
  if (a.isSequence() && a.kind() == b.kind()) {
    const ValueList &x = a.asList(), &y = b.asList();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!x[i].equals(y[i]))
        return order(op, x[i], y[i]);
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  fail(std::string("'") + op + "' not supported between '" + a.typeName() +
       "' and '" + b.typeName() + "'");
}

} // namespace

Value binaryOp(const std::string &op, const Value &a, const Value &b) {
  if (op == "~")
    return Value(a.str() + b.str());
  if (a.isUndefined() || b.isUndefined())
    fail("an undefined value in '" + op + "'");
  bool ints = isIntLike(a) && isIntLike(b);
  bool numbers = a.isNumber() && b.isNumber();
  if (op == "+") {
    if (ints)
      return Value(checked(a.asInt(), b.asInt(), addOverflow));
    if (numbers)
      return Value(a.asDouble() + b.asDouble());
    if (a.isString() && b.isString())
      return Value(a.asString() + b.asString());
    if (a.isSequence() && a.kind() == b.kind()) {
      ValueList out = a.asList();
      out.insert(out.end(), b.asList().begin(), b.asList().end());
      return a.kind() == Value::Kind::Tuple ? Value::tuple(std::move(out))
                                            : Value::list(std::move(out));
    }
  } else if (op == "-") {
    if (ints)
      return Value(checked(a.asInt(), b.asInt(), subOverflow));
    if (numbers)
      return Value(a.asDouble() - b.asDouble());
  } else if (op == "*") {
    if (ints)
      return Value(checked(a.asInt(), b.asInt(), mulOverflow));
    if (numbers)
      return Value(a.asDouble() * b.asDouble());
    if ((a.isString() || a.isSequence()) && isIntLike(b))
      return repeat(a, b.asInt());
    if (isIntLike(a) && (b.isString() || b.isSequence()))
      return repeat(b, a.asInt());
  } else if (op == "/") {
    if (numbers) {
      if (b.asDouble() == 0)
        fail("division by zero");
      return Value(a.asDouble() / b.asDouble());
    }
  } else if (op == "//" || op == "%") {
    if (numbers) {
      if (b.asDouble() == 0)
        fail(op == "//" ? "integer division by zero" : "modulo by zero");
      if (ints) {
        int64_t x = a.asInt(), y = b.asInt();
        if (x == INT64_MIN && y == -1)
          fail("integer overflow");
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) { // Python floors.
          --q;
          m += y;
        }
        return op == "//" ? Value(q) : Value(m);
      }
      double x = a.asDouble(), y = b.asDouble();
      double m = std::fmod(x, y);
      if (m != 0 && ((m < 0) != (y < 0)))
        m += y;
      return op == "//" ? Value(std::floor((x - m) / y + 0.5)) : Value(m);
    }
    if (op == "%" && a.isString())
      fail("string formatting with '%' is not supported; use '~' or "
           "the format-free filters");
  } else if (op == "**") {
    if (ints && b.asInt() >= 0) {
      int64_t base = a.asInt(), result = 1;
      for (int64_t e = b.asInt(); e > 0; --e)
        if (__builtin_mul_overflow(result, base, &result))
          fail("integer overflow");
      return Value(result);
    }
    if (numbers)
      return Value(std::pow(a.asDouble(), b.asDouble()));
  }
  fail(operandTypes(op.c_str(), a, b));
}

bool compareOp(const std::string &op, const Value &a, const Value &b) {
  if (op == "==")
    return a.equals(b);
  if (op == "!=")
    return !a.equals(b);
  if (op == "in" || op == "not in") {
    bool found = false;
    if (b.isString()) {
      if (!a.isString())
        fail(std::string("'in <string>' requires a string on the left, not '") +
             a.typeName() + "'");
      found = b.asString().find(a.asString()) != std::string::npos;
    } else if (b.isSequence()) {
      for (const Value &item : b.asList())
        found = found || item.equals(a);
    } else if (b.isDict()) {
      found = b.asDict().find(a) != nullptr;
    } else if (!b.isUndefined()) {
      fail(std::string("argument of type '") + b.typeName() +
           "' is not iterable");
    }
    return op == "in" ? found : !found;
  }
  int c = order(op.c_str(), a, b);
  if (op == "<")
    return c < 0;
  if (op == "<=")
    return c <= 0;
  if (op == ">")
    return c > 0;
  return c >= 0;
}

int64_t length(const Value &v) {
  if (v.isString())
    return int64_t(characters(v.asString()).size());
  if (v.isSequence())
    return int64_t(v.asList().size());
  if (v.isDict())
    return int64_t(v.asDict().items.size());
  if (v.isUndefined())
    return 0;
  fail(std::string("object of type '") + v.typeName() + "' has no len()");
}

ValueList iterate(const Value &v) {
  if (v.isSequence())
    return v.asList();
  if (v.isDict()) {
    ValueList keys;
    for (const auto &item : v.asDict().items)
      keys.push_back(item.first);
    return keys;
  }
  if (v.isString()) {
    ValueList chars;
    for (std::string &c : characters(v.asString()))
      chars.emplace_back(std::move(c));
    return chars;
  }
  if (v.isUndefined())
    return {};
  fail(std::string("'") + v.typeName() + "' object is not iterable");
}

Value getItem(const Value &obj, const Value &key) {
  if ((obj.isSequence() || obj.isString()) && (key.isInt() || key.isBool())) {
    int64_t index = key.asInt();
    if (obj.isString()) {
      std::vector<std::string> chars = characters(obj.asString());
      int64_t n = int64_t(chars.size());
      if (index < 0)
        index += n;
      if (index < 0 || index >= n)
        return Value();
      return Value(chars[size_t(index)]);
    }
    int64_t n = int64_t(obj.asList().size());
    if (index < 0)
      index += n;
    if (index < 0 || index >= n)
      return Value();
    return obj.asList()[size_t(index)];
  }
  if (obj.isDict())
    if (const Value *found = obj.asDict().find(key))
      return *found;
  if (key.isString())
    return getAttribute(obj, key.asString());
  return Value();
}

Value slice(const Value &obj, const Value *start, const Value *stop,
            const Value *step) {
  auto index = [](const Value *v, const char *what) -> const Value * {
    if (!v || v->isNone())
      return nullptr;
    if (!v->isInt() && !v->isBool())
      fail(std::string("slice ") + what + " must be an integer, not '" +
           v->typeName() + "'");
    return v;
  };
  start = index(start, "start");
  stop = index(stop, "stop");
  step = index(step, "step");
  int64_t by = step ? step->asInt() : 1;
  if (by == 0)
    fail("slice step cannot be zero");
  bool isString = obj.isString();
  std::vector<std::string> chars;
  if (isString)
    chars = characters(obj.asString());
  else if (!obj.isSequence())
    fail(std::string("'") + obj.typeName() + "' object cannot be sliced");
  int64_t n = isString ? int64_t(chars.size()) : int64_t(obj.asList().size());
  // Python's slice.indices().
  auto clamp = [&](const Value *v, int64_t fallback) {
    if (!v)
      return fallback;
    int64_t i = v->asInt();
    if (i < 0)
      i = std::max<int64_t>(i + n, by < 0 ? -1 : 0);
    else
      i = std::min<int64_t>(i, by < 0 ? n - 1 : n);
    return i;
  };
  int64_t from = clamp(start, by < 0 ? n - 1 : 0);
  int64_t to = clamp(stop, by < 0 ? -1 : n);
  std::string text;
  ValueList items;
  for (int64_t i = from; by > 0 ? i < to : i > to; i += by) {
    if (isString)
      text += chars[size_t(i)];
    else
      items.push_back(obj.asList()[size_t(i)]);
  }
  if (isString)
    return Value(std::move(text));
  return obj.kind() == Value::Kind::Tuple ? Value::tuple(std::move(items))
                                          : Value::list(std::move(items));
}

} // namespace folio::jinja::detail
