//===- Methods.cpp - Attributes and methods of str, dict and list --------===//
//
// Python methods templates call (`content.strip()`, `message.get('x')`,
// `d.items()`), bound to their object when the attribute is read.
//
//===----------------------------------------------------------------------===//

#include "runtime/Server/Jinja/Builtins.h"

#include <algorithm>
#include <cctype>

namespace folio::jinja::detail {

namespace {

bool isPySpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
         c == '\f';
}

void checkArgs(const char *method, const ValueList &args,
               const KeywordArgs &kwargs, size_t min, size_t max) {
  if (!kwargs.empty())
    fail(std::string(method) + "() takes no keyword argument '" +
         kwargs.front().first + "' here");
  if (args.size() < min || args.size() > max)
    fail(std::string(method) + "() takes " +
         (min == max ? std::to_string(min)
                     : std::to_string(min) + " to " + std::to_string(max)) +
         " arguments, got " + std::to_string(args.size()));
}

std::string stringArg(const char *method, const Value &v) {
  if (!v.isString())
    fail(std::string(method) + "() expects a string argument, got '" +
         v.typeName() + "'");
  return v.asString();
}

/// str.strip/lstrip/rstrip with Python's default (whitespace) or a set of
/// characters.
std::string stripChars(const std::string &s, const Value *chars, bool left,
                       bool right) {
  std::vector<std::string> cs = characters(s);
  std::vector<std::string> set;
  if (chars && !chars->isNone())
    set = characters(stringArg("strip", *chars));
  auto strip = [&](const std::string &c) {
    if (!chars || chars->isNone())
      return c.size() == 1 && isPySpace(c[0]);
    return std::find(set.begin(), set.end(), c) != set.end();
  };
  size_t b = 0, e = cs.size();
  while (left && b < e && strip(cs[b]))
    ++b;
  while (right && e > b && strip(cs[e - 1]))
    --e;
  std::string out;
  for (size_t i = b; i < e; ++i)
    out += cs[i];
  return out;
}

Value split(const std::string &s, const Value *sep, int64_t maxSplit) {
  ValueList parts;
  if (!sep || sep->isNone()) {
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && isPySpace(s[i]))
        ++i;
      if (i >= s.size())
        break;
      if (maxSplit >= 0 && int64_t(parts.size()) == maxSplit) {
        std::string rest = s.substr(i);
        while (!rest.empty() && isPySpace(rest.back()))
          rest.pop_back();
        parts.emplace_back(rest);
        break;
      }
      size_t j = i;
      while (j < s.size() && !isPySpace(s[j]))
        ++j;
      parts.emplace_back(s.substr(i, j - i));
      i = j;
    }
    return Value::list(std::move(parts));
  }
  std::string d = stringArg("split", *sep);
  if (d.empty())
    fail("split() separator is empty");
  size_t i = 0;
  for (;;) {
    size_t j = s.find(d, i);
    if (j == std::string::npos ||
        (maxSplit >= 0 && int64_t(parts.size()) == maxSplit)) {
      parts.emplace_back(s.substr(i));
      break;
    }
    parts.emplace_back(s.substr(i, j - i));
    i = j + d.size();
  }
  return Value::list(std::move(parts));
}

std::string replaceAll(const std::string &s, const std::string &from,
                       const std::string &to, int64_t count) {
  std::string out;
  if (from.empty()) { // Python inserts `to` around every character.
    std::vector<std::string> cs = characters(s);
    int64_t done = 0;
    for (const std::string &c : cs) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      out += c;
    }
    if (count < 0 || done < count)
      out += to;
    return out;
  }
  size_t i = 0;
  int64_t done = 0;
  for (;;) {
    size_t j = s.find(from, i);
    if (j == std::string::npos || (count >= 0 && done == count)) {
      out += s.substr(i);
      return out;
    }
    out += s.substr(i, j - i) + to;
    i = j + from.size();
    ++done;
  }
}

bool matchesAffix(const std::string &s, const Value &affix, bool prefix) {
  auto one = [&](const Value &v) {
    std::string a = stringArg(prefix ? "startswith" : "endswith", v);
    if (a.size() > s.size())
      return false;
    return prefix ? s.compare(0, a.size(), a) == 0
                  : s.compare(s.size() - a.size(), a.size(), a) == 0;
  };
  if (affix.isSequence()) {
    for (const Value &v : affix.asList())
      if (one(v))
        return true;
    return false;
  }
  return one(affix);
}

/// Simple case mapping of ASCII, Latin-1, Greek and Cyrillic letters;
/// other characters are kept as they are.
uint32_t caseMap(uint32_t cp, bool upper) {
  if (upper) {
    if ((cp >= 'a' && cp <= 'z') || (cp >= 0xE0 && cp <= 0xFE && cp != 0xF7) ||
        (cp >= 0x3B1 && cp <= 0x3C9 && cp != 0x3C2) ||
        (cp >= 0x430 && cp <= 0x44F))
      return cp - 0x20;
    if (cp == 0x3C2)
      return 0x3A3;
    if (cp >= 0x450 && cp <= 0x45F)
      return cp - 0x50;
    return cp;
  }
  if ((cp >= 'A' && cp <= 'Z') || (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) ||
      (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) ||
      (cp >= 0x410 && cp <= 0x42F))
    return cp + 0x20;
  if (cp >= 0x400 && cp <= 0x40F)
    return cp + 0x50;
  return cp;
}

bool isCased(uint32_t cp) {
  return caseMap(cp, true) != cp || caseMap(cp, false) != cp;
}

std::string mapCase(const std::string &s, bool upper) {
  std::string out;
  for (const std::string &c : characters(s)) {
    uint32_t cp = decodeUtf8(c);
    uint32_t mapped = caseMap(cp, upper);
    if (mapped == cp)
      out += c;
    else
      appendUtf8(out, mapped);
  }
  return out;
}

/// str.title() and str.capitalize(): `eachWord` upper-cases the first
/// letter of every run of letters, else only the string's first character.
std::string titleCase(const std::string &s, bool eachWord) {
  std::string out;
  bool inWord = false, first = true;
  for (const std::string &c : characters(s)) {
    uint32_t cp = decodeUtf8(c);
    bool letter = isCased(cp);
    bool up = eachWord ? letter && !inWord : first;
    uint32_t mapped = caseMap(cp, up);
    if (mapped == cp)
      out += c;
    else
      appendUtf8(out, mapped);
    inWord = letter;
    first = false;
  }
  return out;
}

Value stringMethod(const std::string &s, const std::string &name,
                   const ValueList &args, const KeywordArgs &kwargs) {
  const char *m = name.c_str();
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    checkArgs(m, args, kwargs, 0, 1);
    return Value(stripChars(s, args.empty() ? nullptr : &args[0],
                            name != "rstrip", name != "lstrip"));
  }
  if (name == "split") {
    ValueList a = args;
    for (const auto &[k, v] : kwargs) {
      if (k == "sep" && a.empty())
        a.push_back(v);
      else if (k == "maxsplit" && a.size() == 1)
        a.push_back(v);
      else
        fail("split() got an unexpected keyword argument '" + k + "'");
    }
    checkArgs(m, a, {}, 0, 2);
    int64_t maxSplit = a.size() > 1 ? a[1].asInt() : -1;
    return split(s, a.empty() ? nullptr : &a[0], maxSplit);
  }
  if (name == "startswith" || name == "endswith") {
    checkArgs(m, args, kwargs, 1, 1);
    return Value(matchesAffix(s, args[0], name == "startswith"));
  }
  if (name == "upper" || name == "lower" || name == "title" ||
      name == "capitalize") {
    checkArgs(m, args, kwargs, 0, 0);
    if (name == "upper" || name == "lower")
      return Value(mapCase(s, name == "upper"));
    return Value(titleCase(s, name == "title"));
  }
  if (name == "replace") {
    checkArgs(m, args, kwargs, 2, 3);
    return Value(replaceAll(s, stringArg(m, args[0]), stringArg(m, args[1]),
                            args.size() > 2 ? args[2].asInt() : -1));
  }
  if (name == "find" || name == "count") {
    checkArgs(m, args, kwargs, 1, 1);
    std::string needle = stringArg(m, args[0]);
    if (name == "find") {
      size_t at = s.find(needle);
      return Value(at == std::string::npos
                       ? int64_t(-1)
                       : int64_t(characters(s.substr(0, at)).size()));
    }
    if (needle.empty())
      return Value(int64_t(characters(s).size()) + 1);
    int64_t n = 0;
    for (size_t at = s.find(needle); at != std::string::npos;
         at = s.find(needle, at + needle.size()))
      ++n;
    return Value(n);
  }
  if (name == "join") {
    checkArgs(m, args, kwargs, 1, 1);
    std::string out;
    ValueList items = iterate(args[0]);
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].isString())
        fail("join() expects strings, item " + std::to_string(i) + " is '" +
             items[i].typeName() + "'");
      out += (i ? s : "") + items[i].asString();
    }
    return Value(out);
  }
  if (name == "splitlines") {
    checkArgs(m, args, kwargs, 0, 0);
    ValueList lines;
    size_t i = 0;
    while (i < s.size()) {
      size_t j = s.find_first_of("\r\n", i);
      if (j == std::string::npos) {
        lines.emplace_back(s.substr(i));
        break;
      }
      lines.emplace_back(s.substr(i, j - i));
      i = j + (s[j] == '\r' && j + 1 < s.size() && s[j + 1] == '\n' ? 2 : 1);
    }
    return Value::list(std::move(lines));
  }
  if (name == "isdigit" || name == "isalpha" || name == "isspace" ||
      name == "isupper" || name == "islower") {
    checkArgs(m, args, kwargs, 0, 0);
    if (s.empty())
      return Value(false);
    bool cased = false, all = true;
    for (unsigned char c : s) {
      if (name == "isdigit")
        all = all && std::isdigit(c);
      else if (name == "isalpha")
        all = all && std::isalpha(c);
      else if (name == "isspace")
        all = all && isPySpace(char(c));
      else if (std::isalpha(c)) {
        cased = true;
        all = all && (name == "isupper" ? std::isupper(c) : std::islower(c));
      }
    }
    return Value(all && (name == "isdigit" || name == "isalpha" ||
                         name == "isspace" || cased));
  }
  fail("str has no method '" + name + "'");
}

const char *const kStringMethods[] = {
    "strip",    "lstrip",  "rstrip",  "split",   "startswith",
    "endswith", "upper",   "lower",   "title",   "capitalize",
    "replace",  "find",    "count",   "join",    "splitlines",
    "isdigit",  "isalpha", "isspace", "isupper", "islower"};

const char *const kMutators[] = {"append", "extend",     "insert", "pop",
                                 "remove", "clear",      "sort",   "reverse",
                                 "update", "setdefault", "popitem"};

bool contains(const char *const *begin, const char *const *end,
              const std::string &name) {
  return std::any_of(begin, end, [&](const char *m) { return name == m; });
}

} // namespace

Value getAttribute(const Value &obj, const std::string &name) {
  if (obj.isString()) {
    if (!contains(std::begin(kStringMethods), std::end(kStringMethods), name))
      return Value();
    std::string s = obj.asString();
    return Value::function(
        "str." + name, [s, name](const ValueList &args, const KeywordArgs &kw) {
          return stringMethod(s, name, args, kw);
        });
  }
  if (obj.isDict() && obj.asDict().isNamespace) {
    const Value *found = obj.asDict().find(Value(name));
    return found ? *found : Value();
  }
  if ((obj.isDict() || obj.isSequence()) &&
      contains(std::begin(kMutators), std::end(kMutators), name)) {
    std::string type = obj.typeName();
    return Value::function(
        type + "." + name,
        [type, name](const ValueList &, const KeywordArgs &) -> Value {
          fail(type + "." + name + "() would modify the " + type +
               ", and chat templates render in Jinja's immutable sandbox; "
               "use a namespace() to carry state");
        });
  }
  if (obj.isDict()) {
    if (name == "items" || name == "keys" || name == "values") {
      Value d = obj;
      return Value::function("dict." + name, [d, name](const ValueList &args,
                                                       const KeywordArgs &kw) {
        checkArgs(name.c_str(), args, kw, 0, 0);
        ValueList out;
        for (const auto &[k, v] : d.asDict().items)
          out.push_back(name == "items"  ? Value::tuple({k, v})
                        : name == "keys" ? k
                                         : v);
        return Value::list(std::move(out));
      });
    }
    if (name == "get") {
      Value d = obj;
      return Value::function(
          "dict.get", [d](const ValueList &args, const KeywordArgs &kw) {
            checkArgs("get", args, kw, 1, 2);
            const Value *found = d.asDict().find(args[0]);
            return found ? *found : args.size() > 1 ? args[1] : Value::none();
          });
    }
    const Value *found = obj.asDict().find(Value(name));
    return found ? *found : Value();
  }
  if (obj.isSequence() && (name == "index" || name == "count")) {
    Value l = obj;
    return Value::function(
        std::string(obj.typeName()) + "." + name,
        [l, name](const ValueList &args, const KeywordArgs &kw) {
          checkArgs(name.c_str(), args, kw, 1, 1);
          int64_t n = 0, i = 0;
          for (const Value &v : l.asList()) {
            if (v.equals(args[0])) {
              if (name == "index")
                return Value(i);
              ++n;
            }
            ++i;
          }
          if (name == "index")
            fail(args[0].repr() + " is not in list");
          return Value(n);
        });
  }
  return Value();
}

} // namespace folio::jinja::detail
