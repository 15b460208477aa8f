//===- Builtins.h - Operators, filters, tests, methods, globals -*- C++ -*-===//
//
// Internal to runtime/Server/Jinja. Each function follows what Jinja2 on
// Python does for the same values; an error throws TemplateError without a
// place (line 0), which the renderer fills in with the expression's.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SERVER_JINJA_BUILTINS_H
#define FOLIO_RUNTIME_SERVER_JINJA_BUILTINS_H

#include "runtime/Server/Jinja/Ast.h"

#include <string>
#include <unordered_map>

namespace folio::jinja::detail {

/// Throws a TemplateError that the renderer places.
[[noreturn]] void fail(const std::string &message);

/// The UTF-8 characters (code points) of `s`, each as its bytes: Python
/// indexes, slices, counts and iterates strings by code point.
std::vector<std::string> characters(const std::string &s);
/// The code point of one character of characters().
uint32_t decodeUtf8(const std::string &character);
/// Appends the UTF-8 encoding of code point `cp`.
void appendUtf8(std::string &out, uint32_t cp);

/// + - * / // % ** ~ on two values.
Value binaryOp(const std::string &op, const Value &a, const Value &b);
/// == != < <= > >= in, not in.
bool compareOp(const std::string &op, const Value &a, const Value &b);
/// Python's len(); fails for values without one.
int64_t length(const Value &v);
/// The values `for` iterates: a sequence's items, a dict's keys, a string's
/// characters; undefined iterates as empty.
ValueList iterate(const Value &v);

/// obj.name: a method bound to obj (str, list, dict methods), else the
/// dict's item; undefined when there is neither.
Value getAttribute(const Value &obj, const std::string &name);
/// obj[key]: an item (negative indexes count from the end), else a method
/// of that name; undefined when there is neither.
Value getItem(const Value &obj, const Value &key);
/// obj[start:stop:step] (null parts omitted).
Value slice(const Value &obj, const Value *start, const Value *stop,
            const Value *step);

/// `value is name(args)`.
bool applyTest(const std::string &name, const Value &value,
               const ValueList &args);
/// `value | name(args, kwargs)`.
Value applyFilter(const std::string &name, const Value &value,
                  const ValueList &args, const KeywordArgs &kwargs);
/// Whether applyFilter knows filter `name`, so that a template using one
/// it does not is refused when it is parsed, not at its first render.
bool isFilter(const std::string &name);

/// Python's json.dumps(v, ensure_ascii=False, indent=indent, sort_keys=...)
/// with indent < 0 for None.
std::string toJson(const Value &v, int indent, bool sortKeys);

/// range, namespace, dict, raise_exception, strftime_now.
std::unordered_map<std::string, Value> globals();

} // namespace folio::jinja::detail

#endif // FOLIO_RUNTIME_SERVER_JINJA_BUILTINS_H
