//===- Render.cpp - Evaluating a parsed chat template ---------------------===//
//
// Scoping follows Jinja2: a for loop's body has its own scope (a `set`
// inside it is gone after the loop, which is why templates carry state in
// a namespace()), `if` has none, and a macro sees the template's top-level
// variables and its parameters.
//
//===----------------------------------------------------------------------===//

#include "runtime/Server/Jinja/Builtins.h"
#include "runtime/Server/Jinja/Template.h"

#include <algorithm>
#include <unordered_map>

namespace folio::jinja {

using namespace detail;

namespace {

/// Bounds on what one render may do, so that a template cannot hang or
/// exhaust the server (a template is data from the model's files).
constexpr size_t kMaxOutputBytes = size_t(64) << 20;
constexpr int kMaxCallDepth = 64;
constexpr int64_t kMaxLoopIterations = 1'000'000;

class Renderer {
public:
  explicit Renderer(const Value &context) {
    scopes.emplace_back();
    for (auto &[name, value] : globals())
      scopes.back()[name] = value;
    for (const auto &[key, value] : context.asDict().items)
      if (key.isString())
        scopes.back()[key.asString()] = value;
  }

  void renderBody(const Body &body, std::string &out) {
    for (const NodePtr &node : body) {
      renderNode(*node, out);
      if (flow != Flow::Normal)
        return;
    }
  }

private:
  enum class Flow { Normal, Break, Continue };
  using Scope = std::unordered_map<std::string, Value>;

  [[noreturn]] static void failAt(const std::string &message, int line,
                                  int column) {
    throw TemplateError(message, line, column);
  }

  /// Gives errors thrown by builtins (line 0) the place of `e`.
  template <typename F> auto placed(int line, int column, F &&f) {
    try {
      return f();
    } catch (TemplateError &err) {
      if (err.line == 0) {
        err.line = line;
        err.column = column;
      }
      throw;
    }
  }

  Value lookup(const std::string &name) const {
    for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end())
        return found->second;
    }
    return Value();
  }

  void append(std::string &out, const std::string &text, int line, int column) {
    if (out.size() + text.size() > kMaxOutputBytes)
      failAt("the rendered prompt exceeds " +
                 std::to_string(kMaxOutputBytes >> 20) + " MiB",
             line, column);
    out += text;
  }

  void assign(const std::vector<std::string> &targets, const Value &value,
              int line, int column) {
    if (targets.size() == 1) {
      scopes.back()[targets[0]] = value;
      return;
    }
    ValueList items = placed(line, column, [&] { return iterate(value); });
    if (items.size() != targets.size())
      failAt("cannot unpack " + std::to_string(items.size()) + " values into " +
                 std::to_string(targets.size()) + " variables",
             line, column);
    for (size_t i = 0; i < targets.size(); ++i)
      scopes.back()[targets[i]] = items[i];
  }

  void renderNode(const Node &n, std::string &out) {
    switch (n.kind) {
    case Node::Kind::Text:
      append(out, n.text, n.line, n.column);
      return;
    case Node::Kind::Output:
      append(out, eval(*n.expr).str(), n.line, n.column);
      return;
    case Node::Kind::If:
      for (const auto &[condition, body] : n.branches)
        if (!condition || eval(*condition).truthy()) {
          renderBody(body, out);
          return;
        }
      return;
    case Node::Kind::For:
      renderFor(n, out);
      return;
    case Node::Kind::Set: {
      Value value = eval(*n.expr);
      if (n.attribute.empty()) {
        assign(n.targets, value, n.line, n.column);
        return;
      }
      Value target = lookup(n.targets[0]);
      if (!target.isDict() || !target.asDict().isNamespace)
        failAt("cannot set attribute '" + n.attribute + "' of '" +
                   n.targets[0] + "' (a " + target.typeName() +
                   "); only a namespace() takes attribute assignments",
               n.line, n.column);
      target.mutableDict().set(Value(n.attribute), value);
      return;
    }
    case Node::Kind::SetBlock: {
      std::string captured;
      renderBody(n.body, captured);
      scopes.back()[n.targets[0]] = Value(captured);
      return;
    }
    case Node::Kind::Macro:
      scopes.back()[n.name] = makeMacro(n);
      return;
    case Node::Kind::Break:
      flow = Flow::Break;
      return;
    case Node::Kind::Continue:
      flow = Flow::Continue;
      return;
    }
  }

  void renderFor(const Node &n, std::string &out) {
    Value iterable = eval(*n.expr);
    if (iterable.isNone() || iterable.isNumber() || iterable.isFunction())
      failAt(std::string("'") + iterable.typeName() +
                 "' object is not iterable",
             n.expr->line, n.expr->column);
    ValueList items =
        placed(n.line, n.column, [&] { return iterate(iterable); });
    if (n.filter) {
      ValueList kept;
      for (const Value &item : items) {
        scopes.emplace_back();
        assign(n.targets, item, n.line, n.column);
        bool keep = eval(*n.filter).truthy();
        scopes.pop_back();
        if (keep)
          kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      renderBody(n.elseBody, out);
      return;
    }
    int64_t count = int64_t(items.size());
    for (int64_t i = 0; i < count; ++i) {
      if (++iterations > kMaxLoopIterations)
        failAt("more than " + std::to_string(kMaxLoopIterations) +
                   " loop iterations",
               n.line, n.column);
      scopes.emplace_back();
      assign(n.targets, items[size_t(i)], n.line, n.column);
      scopes.back()["loop"] = loopVariable(items, i);
      renderBody(n.body, out);
      scopes.pop_back();
      Flow ended = flow;
      flow = Flow::Normal;
      if (ended == Flow::Break)
        break;
    }
  }

  static Value loopVariable(const ValueList &items, int64_t i) {
    int64_t count = int64_t(items.size());
    // Built item by item (no lookups): one per iteration of every loop.
    auto d = std::make_shared<Dict>();
    auto add = [&](const char *key, Value value) {
      d->items.emplace_back(Value(key), std::move(value));
    };
    d->items.reserve(10);
    add("index", Value(i + 1));
    add("index0", Value(i));
    add("revindex", Value(count - i));
    add("revindex0", Value(count - i - 1));
    add("first", Value(i == 0));
    add("last", Value(i == count - 1));
    add("length", Value(count));
    add("previtem", i > 0 ? items[size_t(i - 1)] : Value());
    add("nextitem", i + 1 < count ? items[size_t(i + 1)] : Value());
    add("cycle", Value::function("loop.cycle", [i](const ValueList &args,
                                                   const KeywordArgs &) {
          if (args.empty())
            fail("loop.cycle() needs at least one value");
          return args[size_t(i) % args.size()];
        }));
    return Value::dict(d);
  }

  Value makeMacro(const Node &n) {
    const Node *macro = &n;
    return Value::function(n.name, [this, macro](const ValueList &args,
                                                 const KeywordArgs &kw) {
      if (args.size() > macro->params.size())
        fail("macro '" + macro->name + "' takes " +
             std::to_string(macro->params.size()) + " arguments, got " +
             std::to_string(args.size()));
      if (++depth > kMaxCallDepth)
        fail("macro calls nested deeper than " + std::to_string(kMaxCallDepth));
      // The macro's frame: the template's top level, then its
      // parameters.
      std::vector<Scope> saved;
      saved.swap(scopes);
      scopes.push_back(saved.front());
      scopes.emplace_back();
      struct Restore {
        Renderer &r;
        std::vector<Scope> &saved;
        ~Restore() {
          r.scopes.swap(saved);
          --r.depth;
        }
      } restore{*this, saved};
      for (size_t i = 0; i < macro->params.size(); ++i) {
        const auto &[param, defaultValue] = macro->params[i];
        const Value *given = i < args.size() ? &args[i] : nullptr;
        for (const auto &[key, value] : kw)
          if (key == param)
            given = &value;
        scopes.back()[param] = given          ? *given
                               : defaultValue ? eval(*defaultValue)
                                              : Value();
      }
      for (const auto &[key, value] : kw)
        if (std::none_of(macro->params.begin(), macro->params.end(),
                         [&](const auto &p) { return p.first == key; }))
          fail("macro '" + macro->name + "' has no parameter '" + key + "'");
      std::string out;
      renderBody(macro->body, out);
      return Value(out);
    });
  }

  [[noreturn]] void undefinedError(const Expr &object, const Expr &at,
                                   const std::string &what) {
    if (object.kind == Expr::Kind::Name)
      failAt("'" + object.name + "' is undefined", object.line, object.column);
    failAt("cannot " + what + " of an undefined value", at.line, at.column);
  }

  Value eval(const Expr &e) {
    switch (e.kind) {
    case Expr::Kind::Literal:
      return e.literal;
    case Expr::Kind::Name:
      return lookup(e.name);
    case Expr::Kind::List:
    case Expr::Kind::Tuple: {
      ValueList items;
      for (const ExprPtr &a : e.args)
        items.push_back(eval(*a));
      return e.kind == Expr::Kind::List ? Value::list(std::move(items))
                                        : Value::tuple(std::move(items));
    }
    case Expr::Kind::DictLit: {
      auto d = std::make_shared<Dict>();
      for (size_t i = 0; i + 1 < e.args.size(); i += 2)
        d->set(eval(*e.args[i]), eval(*e.args[i + 1]));
      return Value::dict(d);
    }
    case Expr::Kind::Attr: {
      Value object = eval(*e.args[0]);
      if (object.isUndefined())
        undefinedError(*e.args[0], e, "read attribute '" + e.name + "'");
      return placed(e.line, e.column,
                    [&] { return getAttribute(object, e.name); });
    }
    case Expr::Kind::Item: {
      Value object = eval(*e.args[0]);
      if (object.isUndefined())
        undefinedError(*e.args[0], e, "index");
      Value key = eval(*e.args[1]);
      return placed(e.line, e.column, [&] { return getItem(object, key); });
    }
    case Expr::Kind::Slice: {
      Value object = eval(*e.args[0]);
      if (object.isUndefined())
        undefinedError(*e.args[0], e, "slice");
      Value parts[3];
      for (int i = 0; i < 3; ++i)
        if (e.args[size_t(i) + 1])
          parts[i] = eval(*e.args[size_t(i) + 1]);
      return placed(e.line, e.column, [&] {
        return slice(object, e.args[1] ? &parts[0] : nullptr,
                     e.args[2] ? &parts[1] : nullptr,
                     e.args[3] ? &parts[2] : nullptr);
      });
    }
    case Expr::Kind::Call: {
      const Expr &callee = *e.args[0];
      Value function = eval(callee);
      if (function.isUndefined()) {
        if (callee.kind == Expr::Kind::Attr)
          failAt(std::string("'") + eval(*callee.args[0]).typeName() +
                     std::string("' has no method '") + callee.name + "'",
                 callee.line, callee.column);
        undefinedError(callee, e, "call");
      }
      if (!function.isFunction())
        failAt(std::string("'") + function.typeName() +
                   "' object is not callable",
               e.line, e.column);
      ValueList args;
      for (size_t i = 1; i < e.args.size(); ++i)
        args.push_back(eval(*e.args[i]));
      KeywordArgs kwargs;
      for (const auto &[key, value] : e.kwargs)
        kwargs.emplace_back(key, eval(*value));
      try {
        return placed(e.line, e.column,
                      [&] { return function.asFunction()(args, kwargs); });
      } catch (TemplateError &err) {
        if (err.raised) // raise_exception: the template's own message.
          throw TemplateError(err.what(), e.line, e.column, true);
        throw;
      }
    }
    case Expr::Kind::Filter:
    case Expr::Kind::Test: {
      Value value = eval(*e.args[0]);
      ValueList args;
      for (size_t i = 1; i < e.args.size(); ++i)
        args.push_back(eval(*e.args[i]));
      KeywordArgs kwargs;
      for (const auto &[key, v] : e.kwargs)
        kwargs.emplace_back(key, eval(*v));
      if (e.kind == Expr::Kind::Filter)
        return placed(e.line, e.column,
                      [&] { return applyFilter(e.name, value, args, kwargs); });
      if (!kwargs.empty())
        failAt("tests take no keyword arguments", e.line, e.column);
      bool result = placed(e.line, e.column,
                           [&] { return applyTest(e.name, value, args); });
      return Value(result != e.negated);
    }
    case Expr::Kind::Unary: {
      Value v = eval(*e.args[0]);
      if (!v.isNumber())
        failAt("bad operand type for unary " + e.name + ": '" + v.typeName() +
                   "'",
               e.line, e.column);
      if (e.name == "+")
        return v.isFloat() ? v : Value(v.asInt());
      if (v.isFloat())
        return Value(-v.asDouble()); // -0.0 stays negative, as in Python.
      if (v.asInt() == INT64_MIN)
        failAt("integer overflow", e.line, e.column);
      return Value(-v.asInt());
    }
    case Expr::Kind::Binary: {
      Value a = eval(*e.args[0]);
      Value b = eval(*e.args[1]);
      return placed(e.line, e.column, [&] { return binaryOp(e.name, a, b); });
    }
    case Expr::Kind::Compare: {
      Value left = eval(*e.args[0]);
      for (size_t i = 0; i < e.ops.size(); ++i) {
        Value right = eval(*e.args[i + 1]);
        bool holds = placed(e.line, e.column,
                            [&] { return compareOp(e.ops[i], left, right); });
        if (!holds)
          return Value(false);
        left = std::move(right);
      }
      return Value(true);
    }
    case Expr::Kind::And: {
      Value a = eval(*e.args[0]);
      return a.truthy() ? eval(*e.args[1]) : a;
    }
    case Expr::Kind::Or: {
      Value a = eval(*e.args[0]);
      return a.truthy() ? a : eval(*e.args[1]);
    }
    case Expr::Kind::Not:
      return Value(!eval(*e.args[0]).truthy());
    case Expr::Kind::Condition:
      if (eval(*e.args[1]).truthy())
        return eval(*e.args[0]);
      return e.args[2] ? eval(*e.args[2]) : Value();
    }
    return Value();
  }

  std::vector<Scope> scopes;
  Flow flow = Flow::Normal;
  int depth = 0;
  int64_t iterations = 0;
};

Status templateStatus(const TemplateError &err) {
  if (err.raised)
    return Status::invalidArgument(
        "the chat template raised an error at line " +
        std::to_string(err.line) + ": " + err.what());
  return Status::invalidArgument(
      "chat template line " + std::to_string(err.line) + ", column " +
      std::to_string(err.column) + ": " + err.what());
}

} // namespace

Expected<Template> Template::parse(const std::string &source) {
  try {
    Template t;
    t.body_ = std::make_shared<const Body>(parseTemplate(source));
    return t;
  } catch (const TemplateError &err) {
    return templateStatus(err);
  }
}

Expected<std::string> Template::render(const Value &context) const {
  if (!context.isDict())
    return Status::invalidArgument(
        "a chat template renders with a dict of variables");
  try {
    Renderer renderer(context);
    std::string out;
    renderer.renderBody(*body_, out);
    return out;
  } catch (const TemplateError &err) {
    return templateStatus(err);
  }
}

} // namespace folio::jinja
