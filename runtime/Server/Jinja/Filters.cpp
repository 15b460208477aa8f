//===- Filters.cpp - Filters, tests, tojson and the global functions ------===//

#include "runtime/Server/Jinja/Builtins.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace folio::jinja::detail {

namespace {

/// Binds a filter's positional and keyword arguments to its parameters
/// (after the filtered value), as Python calls it; missing ones are null.
std::vector<const Value *> bind(const std::string &filter,
                                const ValueList &args,
                                const KeywordArgs &kwargs,
                                std::initializer_list<const char *> params) {
  std::vector<const char *> names(params);
  if (args.size() > names.size())
    fail("filter '" + filter + "' takes at most " +
         std::to_string(names.size()) + " arguments, got " +
         std::to_string(args.size()));
  std::vector<const Value *> bound(names.size(), nullptr);
  for (size_t i = 0; i < args.size(); ++i)
    bound[i] = &args[i];
  for (const auto &[key, value] : kwargs) {
    auto it = std::find_if(names.begin(), names.end(),
                           [&](const char *n) { return key == n; });
    if (it == names.end())
      fail("filter '" + filter + "' has no argument '" + key + "'");
    size_t i = size_t(it - names.begin());
    if (bound[i])
      fail("filter '" + filter + "' got argument '" + key + "' twice");
    bound[i] = &value;
  }
  return bound;
}

bool flag(const Value *v) { return v && v->truthy(); }

std::string lowerAscii(std::string s) {
  for (char &c : s)
    if (static_cast<unsigned char>(c) < 0x80)
      c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// A value's sort key: strings fold case unless asked not to (Jinja's
/// sort, dictsort, unique, min and max ignore case by default).
Value sortKey(const Value &v, bool caseSensitive) {
  if (v.isString() && !caseSensitive)
    return Value(lowerAscii(v.asString()));
  return v;
}

/// attribute="a.b.0" lookups of map, sort, selectattr, ...
Value attributePath(const Value &item, const std::string &path) {
  Value v = item;
  size_t i = 0;
  while (i <= path.size()) {
    size_t dot = path.find('.', i);
    std::string part =
        path.substr(i, dot == std::string::npos ? std::string::npos : dot - i);
    bool numeric =
        !part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        });
    v = numeric ? getItem(v, Value(int64_t(std::stoll(part))))
                : getItem(v, Value(part));
    if (dot == std::string::npos)
      break;
    i = dot + 1;
  }
  return v;
}

std::string attributeArg(const std::string &filter, const Value *v) {
  if (!v->isString() && !v->isInt())
    fail("filter '" + filter + "': attribute must be a string");
  return v->str();
}

std::string htmlEscape(const std::string &s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&#34;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

void jsonString(std::string &out, const std::string &s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    default:
      if (c < 0x20) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\u%04x", c);
        out += hex;
      } else {
        out += char(c);
      }
    }
  }
  out += '"';
}

void jsonValue(std::string &out, const Value &v, int indent, bool sortKeys,
               int level) {
  auto newline = [&](int depth) {
    out += '\n';
    out.append(size_t(indent * depth), ' ');
  };
  const char *itemSeparator = indent < 0 ? ", " : ",";
  switch (v.kind()) {
  case Value::Kind::None:
    out += "null";
    return;
  case Value::Kind::Bool:
    out += v.asBool() ? "true" : "false";
    return;
  case Value::Kind::Int:
    out += std::to_string(v.asInt());
    return;
  case Value::Kind::Float: {
    double d = v.asDouble();
    out += std::isnan(d)   ? "NaN"
           : std::isinf(d) ? (d < 0 ? "-Infinity" : "Infinity")
                           : formatFloat(d);
    return;
  }
  case Value::Kind::String:
    jsonString(out, v.asString());
    return;
  case Value::Kind::List:
  case Value::Kind::Tuple: {
    const ValueList &items = v.asList();
    if (items.empty()) {
      out += "[]";
      return;
    }
    out += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i)
        out += itemSeparator;
      if (indent >= 0)
        newline(level + 1);
      jsonValue(out, items[i], indent, sortKeys, level + 1);
    }
    if (indent >= 0)
      newline(level);
    out += ']';
    return;
  }
  case Value::Kind::Dict: {
    std::vector<std::pair<std::string, const Value *>> items;
    for (const auto &[key, value] : v.asDict().items) {
      std::string k;
      if (key.isString())
        k = key.asString();
      else if (key.isNone())
        k = "null";
      else if (key.isBool())
        k = key.asBool() ? "true" : "false";
      else if (key.isInt() || key.isFloat())
        k = key.repr();
      else
        fail(std::string("tojson: keys must be str, int, float, bool or "
                         "None, not '") +
             key.typeName() + "'");
      items.emplace_back(k, &value);
    }
    if (sortKeys)
      std::stable_sort(
          items.begin(), items.end(),
          [](const auto &a, const auto &b) { return a.first < b.first; });
    if (items.empty()) {
      out += "{}";
      return;
    }
    out += '{';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i)
        out += itemSeparator;
      if (indent >= 0)
        newline(level + 1);
      jsonString(out, items[i].first);
      out += ": ";
      jsonValue(out, *items[i].second, indent, sortKeys, level + 1);
    }
    if (indent >= 0)
      newline(level);
    out += '}';
    return;
  }
  default:
    fail(std::string("tojson: a value of type '") + v.typeName() +
         "' is not JSON serializable");
  }
}

ValueList sortedBy(const std::string &filter, ValueList items, bool reverse,
                   bool caseSensitive, const Value *attribute) {
  std::string path = attribute ? attributeArg(filter, attribute) : "";
  auto key = [&](const Value &v) {
    return sortKey(path.empty() ? v : attributePath(v, path), caseSensitive);
  };
  std::stable_sort(
      items.begin(), items.end(), [&](const Value &a, const Value &b) {
        Value ka = key(a), kb = key(b);
        return reverse ? compareOp(">", ka, kb) : compareOp("<", ka, kb);
      });
  return items;
}

Value selectOrReject(const std::string &filter, const Value &value,
                     const ValueList &args, bool byAttribute, bool keep) {
  size_t first = byAttribute ? 1 : 0;
  if (byAttribute && args.empty())
    fail("filter '" + filter + "' needs an attribute name");
  std::string path = byAttribute ? attributeArg(filter, &args[0]) : "";
  ValueList out;
  for (const Value &item : iterate(value)) {
    Value subject = byAttribute ? attributePath(item, path) : item;
    bool pass;
    if (args.size() > first) {
      if (!args[first].isString())
        fail("filter '" + filter + "': the test name must be a string");
      ValueList testArgs(args.begin() + first + 1, args.end());
      pass = applyTest(args[first].asString(), subject, testArgs);
    } else {
      pass = subject.truthy();
    }
    if (pass == keep)
      out.push_back(item);
  }
  return Value::list(std::move(out));
}

/// Whether a character matches Python's \w: ASCII letters, digits and _,
/// and non-ASCII letters and digits, approximated as every code point
/// outside the punctuation and symbol blocks.
bool isWordCharacter(const std::string &c) {
  unsigned char b = c[0];
  if (c.size() == 1)
    return std::isalnum(b) || b == '_';
  uint32_t cp = decodeUtf8(c);
  bool symbol =
      (cp >= 0xA0 && cp <= 0xBF && cp != 0xAA && cp != 0xB5 && cp != 0xBA) ||
      cp == 0xD7 || cp == 0xF7 || (cp >= 0x2000 && cp <= 0x2BFF) ||
      (cp >= 0x3000 && cp <= 0x303F) || (cp >= 0xFE30 && cp <= 0xFE4F) ||
      cp >= 0x1F000;
  return !symbol;
}

double roundHalfEven(double x) { return std::nearbyint(x); }

} // namespace

bool applyTest(const std::string &name, const Value &value,
               const ValueList &args) {
  auto needArgs = [&](size_t n) {
    if (args.size() != n)
      fail("test '" + name + "' takes " + std::to_string(n) +
           " argument(s), got " + std::to_string(args.size()));
  };
  if (name == "defined" || name == "undefined") {
    needArgs(0);
    return value.isUndefined() == (name == "undefined");
  }
  if (name == "none")
    return needArgs(0), value.isNone();
  if (name == "boolean")
    return needArgs(0), value.isBool();
  if (name == "true" || name == "false")
    return needArgs(0), value.isBool() && value.asBool() == (name == "true");
  if (name == "integer")
    return needArgs(0), value.isInt();
  if (name == "float")
    return needArgs(0), value.isFloat();
  if (name == "number")
    return needArgs(0), value.isNumber();
  if (name == "string")
    return needArgs(0), value.isString();
  if (name == "mapping")
    return needArgs(0), value.isDict();
  if (name == "iterable")
    return needArgs(0), value.isString() || value.isSequence() ||
                            value.isDict() || value.isUndefined();
  if (name == "sequence")
    return needArgs(0), value.isString() || value.isSequence() ||
                            value.isDict() || value.isUndefined();
  if (name == "callable")
    return needArgs(0), value.isFunction();
  if (name == "odd" || name == "even") {
    needArgs(0);
    if (!value.isInt() && !value.isBool())
      fail("test '" + name + "' needs an integer, got '" + value.typeName() +
           "'");
    return (value.asInt() % 2 != 0) == (name == "odd");
  }
  if (name == "divisibleby") {
    needArgs(1);
    return binaryOp("%", value, args[0]).equals(Value(int64_t(0)));
  }
  if (name == "lower" || name == "upper") {
    needArgs(0);
    std::string s = value.str();
    return std::none_of(s.begin(), s.end(), [&](char c) {
      return name == "lower" ? std::isupper(static_cast<unsigned char>(c))
                             : std::islower(static_cast<unsigned char>(c));
    });
  }
  static const std::pair<const char *, const char *> comparisons[] = {
      {"eq", "=="}, {"equalto", "=="}, {"==", "=="},      {"ne", "!="},
      {"!=", "!="}, {"lt", "<"},       {"lessthan", "<"}, {"<", "<"},
      {"le", "<="}, {"<=", "<="},      {"gt", ">"},       {"greaterthan", ">"},
      {">", ">"},   {"ge", ">="},      {">=", ">="},      {"in", "in"}};
  for (const auto &[test, op] : comparisons)
    if (name == test) {
      needArgs(1);
      return compareOp(op, value, args[0]);
    }
  if (name == "sameas") {
    needArgs(1);
    if (value.kind() != args[0].kind())
      return false;
    return value.isNone() || value.isUndefined() ||
           (value.isBool() && value.equals(args[0]));
  }
  fail("unknown test '" + name + "'");
}

bool isFilter(const std::string &name) {
  // Asked of applyFilter itself, so that no second list of names can
  // drift from it: filters are pure, and on an undefined value with no
  // arguments every known one returns or fails on its value or its
  // arguments, only an unknown name with this message.
  try {
    applyFilter(name, Value(), {}, {});
  } catch (const TemplateError &e) {
    return std::string(e.what()).rfind("unknown filter '", 0) != 0;
  }
  return true;
}

Value applyFilter(const std::string &name, const Value &value,
                  const ValueList &args, const KeywordArgs &kwargs) {
  if (name == "default" || name == "d") {
    auto a = bind(name, args, kwargs, {"default_value", "boolean"});
    bool useDefault = value.isUndefined() || (flag(a[1]) && !value.truthy());
    return useDefault ? (a[0] ? *a[0] : Value("")) : value;
  }
  if (name == "length" || name == "count") {
    bind(name, args, kwargs, {});
    return Value(length(value));
  }
  if (name == "string") {
    bind(name, args, kwargs, {});
    return Value(value.str());
  }
  if (name == "safe") {
    bind(name, args, kwargs, {});
    return value;
  }
  if (name == "e" || name == "escape") {
    bind(name, args, kwargs, {});
    return Value(htmlEscape(value.str()));
  }
  if (name == "trim") {
    auto a = bind(name, args, kwargs, {"chars"});
    ValueList methodArgs;
    if (a[0])
      methodArgs.push_back(*a[0]);
    return getAttribute(Value(value.str()), "strip")
        .asFunction()(methodArgs, {});
  }
  if (name == "upper" || name == "lower" || name == "title" ||
      name == "capitalize") {
    bind(name, args, kwargs, {});
    return getAttribute(Value(value.str()), name).asFunction()({}, {});
  }
  if (name == "replace") {
    auto a = bind(name, args, kwargs, {"old", "new", "count"});
    if (!a[0] || !a[1])
      fail("filter 'replace' needs the old and the new text");
    ValueList methodArgs = {*a[0], *a[1]};
    if (a[2] && !a[2]->isNone())
      methodArgs.push_back(*a[2]);
    return getAttribute(Value(value.str()), "replace")
        .asFunction()(methodArgs, {});
  }
  if (name == "tojson") {
    auto a = bind(name, args, kwargs,
                  {"ensure_ascii", "indent", "separators", "sort_keys"});
    if (flag(a[0]))
      fail("tojson: ensure_ascii=True is not supported");
    if (a[2] && !a[2]->isNone())
      fail("tojson: custom separators are not supported");
    int indent = -1;
    if (a[1] && !a[1]->isNone()) {
      if (!a[1]->isInt() || a[1]->asInt() < 0 || a[1]->asInt() > 64)
        fail("tojson: indent must be an integer from 0 to 64");
      indent = int(a[1]->asInt());
    }
    return Value(toJson(value, indent, flag(a[3])));
  }
  if (name == "first" || name == "last") {
    bind(name, args, kwargs, {});
    ValueList items = iterate(value);
    if (items.empty())
      return Value();
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") {
    bind(name, args, kwargs, {});
    return Value::list(iterate(value));
  }
  if (name == "reverse") {
    bind(name, args, kwargs, {});
    if (value.isString()) {
      std::vector<std::string> cs = characters(value.asString());
      std::string out;
      for (auto it = cs.rbegin(); it != cs.rend(); ++it)
        out += *it;
      return Value(out);
    }
    ValueList items = iterate(value);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "join") {
    auto a = bind(name, args, kwargs, {"d", "attribute"});
    std::string sep = a[0] ? a[0]->str() : "";
    std::string path = a[1] ? attributeArg(name, a[1]) : "";
    std::string out;
    ValueList items = iterate(value);
    for (size_t i = 0; i < items.size(); ++i)
      out += (i ? sep : "") +
             (path.empty() ? items[i] : attributePath(items[i], path)).str();
    return Value(out);
  }
  if (name == "items") {
    bind(name, args, kwargs, {});
    if (value.isUndefined())
      return Value::list({});
    if (!value.isDict())
      fail(std::string("filter 'items' needs a dict, got '") +
           value.typeName() + "'");
    return getAttribute(value, "items").asFunction()({}, {});
  }
  if (name == "dictsort") {
    auto a = bind(name, args, kwargs, {"case_sensitive", "by", "reverse"});
    if (!value.isDict())
      fail(std::string("filter 'dictsort' needs a dict, got '") +
           value.typeName() + "'");
    std::string by = a[1] ? a[1]->str() : "key";
    if (by != "key" && by != "value")
      fail("filter 'dictsort': by must be 'key' or 'value'");
    ValueList items =
        getAttribute(value, "items").asFunction()({}, {}).asList();
    Value index(int64_t(by == "key" ? 0 : 1));
    bool caseSensitive = flag(a[0]), reverse = flag(a[2]);
    std::stable_sort(
        items.begin(), items.end(), [&](const Value &x, const Value &y) {
          Value kx = sortKey(getItem(x, index), caseSensitive);
          Value ky = sortKey(getItem(y, index), caseSensitive);
          return reverse ? compareOp(">", kx, ky) : compareOp("<", kx, ky);
        });
    return Value::list(std::move(items));
  }
  if (name == "sort") {
    auto a =
        bind(name, args, kwargs, {"reverse", "case_sensitive", "attribute"});
    return Value::list(
        sortedBy(name, iterate(value), flag(a[0]), flag(a[1]), a[2]));
  }
  if (name == "unique") {
    auto a = bind(name, args, kwargs, {"case_sensitive", "attribute"});
    std::string path = a[1] ? attributeArg(name, a[1]) : "";
    ValueList out, seen;
    for (const Value &item : iterate(value)) {
      Value key =
          sortKey(path.empty() ? item : attributePath(item, path), flag(a[0]));
      if (std::none_of(seen.begin(), seen.end(),
                       [&](const Value &s) { return s.equals(key); })) {
        seen.push_back(key);
        out.push_back(item);
      }
    }
    return Value::list(std::move(out));
  }
  if (name == "min" || name == "max") {
    auto a = bind(name, args, kwargs, {"case_sensitive", "attribute"});
    ValueList items =
        sortedBy(name, iterate(value), name == "max", flag(a[0]), a[1]);
    return items.empty() ? Value() : items.front();
  }
  if (name == "sum") {
    auto a = bind(name, args, kwargs, {"attribute", "start"});
    std::string path = a[0] ? attributeArg(name, a[0]) : "";
    Value total = a[1] ? *a[1] : Value(int64_t(0));
    for (const Value &item : iterate(value))
      total =
          binaryOp("+", total, path.empty() ? item : attributePath(item, path));
    return total;
  }
  if (name == "map") {
    for (const auto &[key, v] : kwargs)
      if (key != "attribute" && key != "default")
        fail("filter 'map' has no argument '" + key + "'");
    ValueList out;
    const Value *attribute = nullptr, *fallback = nullptr;
    for (const auto &[key, v] : kwargs)
      (key == "attribute" ? attribute : fallback) = &v;
    if (attribute) {
      if (!args.empty())
        fail("filter 'map' takes either attribute= or a filter name");
      std::string path = attributeArg(name, attribute);
      for (const Value &item : iterate(value)) {
        Value v = attributePath(item, path);
        out.push_back(v.isUndefined() && fallback ? *fallback : v);
      }
      return Value::list(std::move(out));
    }
    if (args.empty() || !args[0].isString())
      fail("filter 'map' needs attribute= or a filter name");
    ValueList filterArgs(args.begin() + 1, args.end());
    for (const Value &item : iterate(value))
      out.push_back(applyFilter(args[0].asString(), item, filterArgs, {}));
    return Value::list(std::move(out));
  }
  if (name == "select" || name == "reject" || name == "selectattr" ||
      name == "rejectattr") {
    if (!kwargs.empty())
      fail("filter '" + name + "' takes no keyword arguments");
    bool byAttribute = name == "selectattr" || name == "rejectattr";
    return selectOrReject(name, value, args, byAttribute,
                          name == "select" || name == "selectattr");
  }
  if (name == "abs") {
    bind(name, args, kwargs, {});
    if (value.isFloat())
      return Value(std::fabs(value.asDouble()));
    if (value.isInt() || value.isBool()) {
      if (value.asInt() == INT64_MIN)
        fail("integer overflow");
      return Value(value.asInt() < 0 ? -value.asInt() : value.asInt());
    }
    fail(std::string("filter 'abs' needs a number, got '") + value.typeName() +
         "'");
  }
  if (name == "int") {
    auto a = bind(name, args, kwargs, {"default", "base"});
    Value fallback = a[0] ? *a[0] : Value(int64_t(0));
    if (value.isInt() || value.isBool())
      return Value(value.asInt());
    if (value.isFloat())
      return std::isfinite(value.asDouble()) &&
                     std::fabs(value.asDouble()) < 9.2e18
                 ? Value(int64_t(value.asDouble()))
                 : fallback;
    if (value.isString()) {
      std::string s = value.asString();
      char *end = nullptr;
      errno = 0;
      long long i =
          std::strtoll(s.c_str(), &end, int(a[1] ? a[1]->asInt() : 10));
      while (end && *end && std::isspace(static_cast<unsigned char>(*end)))
        ++end;
      if (end != s.c_str() && end && !*end && errno == 0)
        return Value(int64_t(i));
      double d = std::strtod(s.c_str(), &end);
      if (end != s.c_str() && !*end && std::isfinite(d))
        return Value(int64_t(d));
    }
    return fallback;
  }
  if (name == "float") {
    auto a = bind(name, args, kwargs, {"default"});
    if (value.isNumber())
      return Value(value.asDouble());
    if (value.isString()) {
      char *end = nullptr;
      double d = std::strtod(value.asString().c_str(), &end);
      if (end != value.asString().c_str() && !*end)
        return Value(d);
    }
    return a[0] ? *a[0] : Value(0.0);
  }
  if (name == "round") {
    auto a = bind(name, args, kwargs, {"precision", "method"});
    if (!value.isNumber())
      fail(std::string("filter 'round' needs a number, got '") +
           value.typeName() + "'");
    int64_t precision = a[0] ? a[0]->asInt() : 0;
    std::string method = a[1] ? a[1]->str() : "common";
    double scale = std::pow(10.0, double(precision));
    double x = value.asDouble() * scale;
    if (method == "common") // Python's round(): halves to even.
      x = roundHalfEven(x);
    else if (method == "ceil")
      x = std::ceil(x);
    else if (method == "floor")
      x = std::floor(x);
    else
      fail("filter 'round': method must be common, ceil or floor");
    return Value(x / scale);
  }
  if (name == "wordcount") {
    // Jinja counts the matches of \w+.
    bind(name, args, kwargs, {});
    int64_t words = 0;
    bool inWord = false;
    for (const std::string &c : characters(value.str())) {
      bool word = isWordCharacter(c);
      words += word && !inWord;
      inWord = word;
    }
    return Value(words);
  }
  if (name == "indent") {
    auto a = bind(name, args, kwargs, {"width", "first", "blank"});
    std::string pad =
        !a[0] ? std::string(4, ' ')
        : a[0]->isString()
            ? a[0]->asString()
            : std::string(size_t(std::max<int64_t>(0, a[0]->asInt())), ' ');
    std::string s = value.str(), out;
    bool lineStart = true, firstLine = true;
    for (size_t i = 0; i <= s.size(); ++i) {
      if (lineStart && i < s.size()) {
        size_t end = s.find('\n', i);
        bool blank = (end == std::string::npos ? s.size() : end) == i;
        if ((!firstLine || flag(a[1])) && (!blank || flag(a[2])))
          out += pad;
        lineStart = false;
      }
      if (i == s.size())
        break;
      out += s[i];
      if (s[i] == '\n') {
        lineStart = true;
        firstLine = false;
      }
    }
    return Value(out);
  }
  fail("unknown filter '" + name + "'");
}

std::string toJson(const Value &v, int indent, bool sortKeys) {
  std::string out;
  jsonValue(out, v, indent, sortKeys, 0);
  return out;
}

std::unordered_map<std::string, Value> globals() {
  std::unordered_map<std::string, Value> g;
  g["range"] = Value::function("range", [](const ValueList &args,
                                           const KeywordArgs &kwargs) {
    if (!kwargs.empty() || args.empty() || args.size() > 3)
      fail("range() takes 1 to 3 integer arguments");
    for (const Value &a : args)
      if (!a.isInt() && !a.isBool())
        fail(std::string("range() takes integers, got '") + a.typeName() + "'");
    int64_t start = args.size() > 1 ? args[0].asInt() : 0;
    int64_t stop = args.size() > 1 ? args[1].asInt() : args[0].asInt();
    int64_t step = args.size() > 2 ? args[2].asInt() : 1;
    if (step == 0)
      fail("range() step must not be zero");
    ValueList out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (out.size() >= 100000)
        fail("range() longer than 100000 items");
      out.emplace_back(i);
    }
    return Value::list(std::move(out));
  });
  auto makeDict = [](bool isNamespace) {
    return [isNamespace](const ValueList &args, const KeywordArgs &kwargs) {
      auto d = std::make_shared<Dict>();
      d->isNamespace = isNamespace;
      if (args.size() > 1)
        fail(std::string(isNamespace ? "namespace" : "dict") +
             "() takes at most one positional argument");
      if (!args.empty()) {
        if (!args[0].isDict())
          fail(std::string(isNamespace ? "namespace" : "dict") +
               "() takes a dict as its positional argument");
        d->items = args[0].asDict().items;
      }
      for (const auto &[key, value] : kwargs)
        d->set(Value(key), value);
      return Value::dict(d);
    };
  };
  g["namespace"] = Value::function("namespace", makeDict(true));
  g["dict"] = Value::function("dict", makeDict(false));
  g["raise_exception"] = Value::function(
      "raise_exception",
      [](const ValueList &args, const KeywordArgs &) -> Value {
        throw TemplateError(args.empty() ? std::string() : args[0].str(), 0, 0,
                            /*raised=*/true);
      });
  g["strftime_now"] = Value::function(
      "strftime_now", [](const ValueList &args, const KeywordArgs &) {
        if (args.size() != 1 || !args[0].isString())
          fail("strftime_now() takes one format string");
        std::time_t now = std::time(nullptr);
        std::tm local{};
        localtime_r(&now, &local);
        char buf[256];
        size_t n =
            std::strftime(buf, sizeof buf, args[0].asString().c_str(), &local);
        return Value(std::string(buf, n));
      });
  return g;
}

} // namespace folio::jinja::detail
