//===- Parser.cpp - Chat-template source to a tree ------------------------===//
//
// A recursive-descent parser for the part of Jinja2 that chat templates
// use, over Lexer.h's tokens, with break/continue (loopcontrols) as Hugging
// Face enables them. Expression precedence is Jinja's: if-else < or < and
// < not < comparisons and `in` < + - < ~ < * / // % < ** < unary - + <
// postfix (. [] ()) < filters | and tests `is`.
//
//===----------------------------------------------------------------------===//

#include "runtime/Server/Jinja/Ast.h"
#include "runtime/Server/Jinja/Builtins.h"
#include "runtime/Server/Jinja/Lexer.h"

#include <algorithm>
#include <cstdlib>
#include <set>

namespace folio::jinja::detail {

namespace {

class Parser {
public:
  Parser(std::vector<Token> tokens, const Positions &positions)
      : tokens(std::move(tokens)), positions(positions) {}

  Body parseTemplate() {
    std::string stop;
    Body body = parseBody({}, stop);
    return body;
  }

private:
  using Kind = Token::Kind;

  const Token &peek(size_t ahead = 0) const {
    return tokens[std::min(index + ahead, tokens.size() - 1)];
  }
  const Token &next() {
    const Token &t = peek();
    if (index < tokens.size() - 1)
      ++index;
    return t;
  }
  bool atOp(const char *op) const {
    return peek().kind == Kind::Op && peek().text == op;
  }
  bool atName(const char *name) const {
    return peek().kind == Kind::Name && peek().text == name;
  }
  bool acceptOp(const char *op) {
    if (!atOp(op))
      return false;
    next();
    return true;
  }
  bool acceptName(const char *name) {
    if (!atName(name))
      return false;
    next();
    return true;
  }

  static std::string describe(const Token &t) {
    switch (t.kind) {
    case Kind::Text:
      return "text";
    case Kind::OutputBegin:
      return "'{{'";
    case Kind::OutputEnd:
      return "'}}'";
    case Kind::BlockBegin:
      return "'{%'";
    case Kind::BlockEnd:
      return "'%}'";
    case Kind::String:
      return "a string";
    case Kind::Int:
    case Kind::Float:
      return "number " + t.text;
    case Kind::End:
      return "the end of the template";
    default:
      return "'" + t.text + "'";
    }
  }

  [[noreturn]] void fail(const std::string &message, const Token &at) const {
    auto [line, column] = positions.at(at.offset);
    throw TemplateError(message, line, column);
  }

  void expectOp(const char *op) {
    if (!acceptOp(op))
      fail(std::string("expected '") + op + "', found " + describe(peek()),
           peek());
  }
  void expectKind(Kind kind, const char *what) {
    if (peek().kind != kind)
      fail(std::string("expected ") + what + ", found " + describe(peek()),
           peek());
    next();
  }
  std::string expectName(const char *what) {
    if (peek().kind != Kind::Name)
      fail(std::string("expected ") + what + ", found " + describe(peek()),
           peek());
    return next().text;
  }

  ExprPtr make(Expr::Kind kind, const Token &at) const {
    auto [line, column] = positions.at(at.offset);
    return std::make_unique<Expr>(kind, line, column);
  }
  NodePtr makeNode(Node::Kind kind, const Token &at) const {
    auto [line, column] = positions.at(at.offset);
    return std::make_unique<Node>(kind, line, column);
  }

  /// Nodes up to a block tag whose keyword is in `stops` (consumed; its
  /// name is returned in `stop`), or to the end when `stops` is empty.
  Body parseBody(const std::set<std::string> &stops, std::string &stop) {
    Body body;
    for (;;) {
      const Token &t = peek();
      switch (t.kind) {
      case Kind::End:
        if (!stops.empty()) {
          std::string expected;
          for (const std::string &s : stops)
            expected += (expected.empty() ? "" : " or ") + ("'" + s + "'");
          fail("missing " + expected + " before the end of the template", t);
        }
        return body;
      case Kind::Text: {
        NodePtr n = makeNode(Node::Kind::Text, t);
        n->text = next().text;
        body.push_back(std::move(n));
        break;
      }
      case Kind::OutputBegin: {
        NodePtr n = makeNode(Node::Kind::Output, next());
        n->expr = parseExpression();
        expectKind(Kind::OutputEnd, "'}}'");
        body.push_back(std::move(n));
        break;
      }
      case Kind::BlockBegin: {
        const Token &keyword = peek(1);
        if (keyword.kind == Kind::Name && stops.count(keyword.text)) {
          next();
          stop = next().text;
          return body;
        }
        next();
        body.push_back(parseStatement());
        break;
      }
      default:
        fail("unexpected " + describe(t), t);
      }
    }
  }

  NodePtr parseStatement() {
    Nesting guard(*this, peek());
    const Token &keyword = peek();
    if (keyword.kind != Kind::Name)
      fail("expected a tag name after '{%', found " + describe(keyword),
           keyword);
    std::string name = keyword.text;
    if (name == "if")
      return parseIf();
    if (name == "for")
      return parseFor();
    if (name == "set")
      return parseSet();
    if (name == "macro")
      return parseMacro();
    if (name == "break" || name == "continue") {
      if (loopDepth == 0)
        fail("'" + name + "' outside a for loop", keyword);
      NodePtr n = makeNode(
          name == "break" ? Node::Kind::Break : Node::Kind::Continue, next());
      expectKind(Kind::BlockEnd, "'%}'");
      return n;
    }
    if (name == "generation") {
      // Hugging Face's marker of assistant text (for training masks):
      // renders its body unchanged.
      NodePtr n = makeNode(Node::Kind::If, next());
      expectKind(Kind::BlockEnd, "'%}'");
      std::string stop;
      Body body = parseBody({"endgeneration"}, stop);
      expectKind(Kind::BlockEnd, "'%}'");
      ExprPtr yes = make(Expr::Kind::Literal, keyword);
      yes->literal = Value(true);
      n->branches.emplace_back(std::move(yes), std::move(body));
      return n;
    }
    static const std::set<std::string> closers = {
        "elif",   "else",   "endif",    "endfor",
        "endset", "endraw", "endmacro", "endgeneration"};
    if (closers.count(name))
      fail("'" + name + "' without a matching opening tag", keyword);
    fail("unsupported tag '" + name +
             "'; chat templates may use if, for, set, macro, break, "
             "continue, raw and generation",
         keyword);
  }

  NodePtr parseIf() {
    NodePtr n = makeNode(Node::Kind::If, next());
    ExprPtr condition = parseExpression();
    expectKind(Kind::BlockEnd, "'%}'");
    for (;;) {
      std::string stop;
      Body body = parseBody({"elif", "else", "endif"}, stop);
      n->branches.emplace_back(std::move(condition), std::move(body));
      if (stop == "endif")
        break;
      if (stop == "else") {
        expectKind(Kind::BlockEnd, "'%}'");
        Body elseBody = parseBody({"endif"}, stop);
        n->branches.emplace_back(nullptr, std::move(elseBody));
        break;
      }
      condition = parseExpression();
      expectKind(Kind::BlockEnd, "'%}'");
    }
    expectKind(Kind::BlockEnd, "'%}'");
    return n;
  }

  NodePtr parseFor() {
    NodePtr n = makeNode(Node::Kind::For, next());
    bool parens = acceptOp("(");
    do
      n->targets.push_back(expectName("a loop variable"));
    while (acceptOp(","));
    if (parens)
      expectOp(")");
    if (!acceptName("in"))
      fail("expected 'in' in the for tag, found " + describe(peek()), peek());
    n->expr = parseOr();
    if (acceptName("if"))
      n->filter = parseOr();
    if (atName("recursive"))
      fail("recursive for loops are not supported", peek());
    expectKind(Kind::BlockEnd, "'%}'");
    ++loopDepth;
    std::string stop;
    n->body = parseBody({"else", "endfor"}, stop);
    --loopDepth;
    if (stop == "else") {
      expectKind(Kind::BlockEnd, "'%}'");
      n->elseBody = parseBody({"endfor"}, stop);
    }
    expectKind(Kind::BlockEnd, "'%}'");
    return n;
  }

  NodePtr parseSet() {
    NodePtr n = makeNode(Node::Kind::Set, next());
    n->targets.push_back(expectName("a variable name"));
    if (acceptOp(".")) {
      n->attribute = expectName("an attribute name");
    } else {
      while (acceptOp(","))
        n->targets.push_back(expectName("a variable name"));
    }
    if (acceptOp("=")) {
      const Token &at = peek();
      ExprPtr value = parseExpression();
      if (atOp(",")) {
        ExprPtr tuple = make(Expr::Kind::Tuple, at);
        tuple->args.push_back(std::move(value));
        while (acceptOp(",") && peek().kind != Kind::BlockEnd)
          tuple->args.push_back(parseExpression());
        value = std::move(tuple);
      }
      n->expr = std::move(value);
      expectKind(Kind::BlockEnd, "'%}'");
      return n;
    }
    if (!n->attribute.empty() || n->targets.size() != 1)
      fail("expected '=' in the set tag", peek());
    expectKind(Kind::BlockEnd, "'%}'");
    n->kind = Node::Kind::SetBlock;
    std::string stop;
    n->body = parseBody({"endset"}, stop);
    expectKind(Kind::BlockEnd, "'%}'");
    return n;
  }

  NodePtr parseMacro() {
    NodePtr n = makeNode(Node::Kind::Macro, next());
    n->name = expectName("a macro name");
    expectOp("(");
    while (!atOp(")")) {
      std::string param = expectName("a parameter name");
      ExprPtr defaultValue;
      if (acceptOp("="))
        defaultValue = parseExpression();
      n->params.emplace_back(param, std::move(defaultValue));
      if (!acceptOp(","))
        break;
    }
    expectOp(")");
    expectKind(Kind::BlockEnd, "'%}'");
    int savedDepth = loopDepth;
    loopDepth = 0;
    std::string stop;
    n->body = parseBody({"endmacro"}, stop);
    loopDepth = savedDepth;
    expectKind(Kind::BlockEnd, "'%}'");
    return n;
  }

  // Expressions, from the loosest binding to the tightest.

  ExprPtr parseExpression() {
    Nesting guard(*this, peek());
    ExprPtr value = parseOr();
    while (atName("if")) {
      ExprPtr n = make(Expr::Kind::Condition, next());
      n->args.push_back(std::move(value));
      n->args.push_back(parseOr());
      n->args.push_back(acceptName("else") ? parseExpression() : nullptr);
      value = std::move(n);
    }
    return value;
  }

  ExprPtr parseOr() {
    ExprPtr left = parseAnd();
    while (atName("or")) {
      ExprPtr n = make(Expr::Kind::Or, next());
      n->args.push_back(std::move(left));
      n->args.push_back(parseAnd());
      left = std::move(n);
    }
    return left;
  }

  ExprPtr parseAnd() {
    ExprPtr left = parseNot();
    while (atName("and")) {
      ExprPtr n = make(Expr::Kind::And, next());
      n->args.push_back(std::move(left));
      n->args.push_back(parseNot());
      left = std::move(n);
    }
    return left;
  }

  ExprPtr parseNot() {
    if (atName("not")) {
      ExprPtr n = make(Expr::Kind::Not, next());
      n->args.push_back(parseNot());
      return n;
    }
    return parseCompare();
  }

  ExprPtr parseCompare() {
    const Token &at = peek();
    ExprPtr first = parseMath1();
    ExprPtr n;
    for (;;) {
      std::string op;
      if (peek().kind == Kind::Op &&
          (peek().text == "==" || peek().text == "!=" || peek().text == "<" ||
           peek().text == "<=" || peek().text == ">" || peek().text == ">="))
        op = next().text;
      else if (atName("in"))
        op = next().text;
      else if (atName("not") && peek(1).kind == Kind::Name &&
               peek(1).text == "in") {
        next();
        next();
        op = "not in";
      } else
        break;
      if (!n) {
        n = make(Expr::Kind::Compare, at);
        n->args.push_back(std::move(first));
      }
      n->ops.push_back(op);
      n->args.push_back(parseMath1());
    }
    return n ? std::move(n) : std::move(first);
  }

  ExprPtr binary(const Token &op, ExprPtr left, ExprPtr right) {
    ExprPtr n = make(Expr::Kind::Binary, op);
    n->name = op.text;
    n->args.push_back(std::move(left));
    n->args.push_back(std::move(right));
    return n;
  }

  ExprPtr parseMath1() {
    ExprPtr left = parseConcat();
    while (atOp("+") || atOp("-")) {
      const Token &op = next();
      left = binary(op, std::move(left), parseConcat());
    }
    return left;
  }

  ExprPtr parseConcat() {
    ExprPtr left = parseMath2();
    while (atOp("~")) {
      const Token &op = next();
      left = binary(op, std::move(left), parseMath2());
    }
    return left;
  }

  ExprPtr parseMath2() {
    ExprPtr left = parsePow();
    while (atOp("*") || atOp("/") || atOp("//") || atOp("%")) {
      const Token &op = next();
      // Python's %-formatting of a string: refused when the template is
      // parsed where the string is written out, as at render elsewhere.
      if (op.text == "%" && left->kind == Expr::Kind::Literal &&
          left->literal.isString())
        fail("string formatting with '%' is not supported; use '~' or the "
             "format-free filters",
             op);
      left = binary(op, std::move(left), parsePow());
    }
    return left;
  }

  ExprPtr parsePow() {
    ExprPtr left = parseUnary(true);
    while (atOp("**")) {
      const Token &op = next();
      left = binary(op, std::move(left), parseUnary(true));
    }
    return left;
  }

  ExprPtr parseUnary(bool withFilters) {
    Nesting guard(*this, peek());
    ExprPtr value;
    if (atOp("-") || atOp("+")) {
      value = make(Expr::Kind::Unary, peek());
      value->name = next().text;
      value->args.push_back(parseUnary(false));
    } else {
      value = parsePrimary();
    }
    value = parsePostfix(std::move(value));
    if (withFilters)
      value = parseFiltersAndTests(std::move(value));
    return value;
  }

  ExprPtr parsePrimary() {
    const Token &t = peek();
    switch (t.kind) {
    case Kind::Name: {
      next();
      ExprPtr n = make(Expr::Kind::Literal, t);
      if (t.text == "true" || t.text == "True")
        n->literal = Value(true);
      else if (t.text == "false" || t.text == "False")
        n->literal = Value(false);
      else if (t.text == "none" || t.text == "None")
        n->literal = Value::none();
      else {
        n->kind = Expr::Kind::Name;
        n->name = t.text;
      }
      return n;
    }
    case Kind::String: {
      ExprPtr n = make(Expr::Kind::Literal, t);
      std::string text;
      while (peek().kind == Kind::String) // Adjacent literals join.
        text += next().text;
      n->literal = Value(std::move(text));
      return n;
    }
    case Kind::Int: {
      ExprPtr n = make(Expr::Kind::Literal, next());
      n->literal = Value(t.intValue);
      return n;
    }
    case Kind::Float: {
      ExprPtr n = make(Expr::Kind::Literal, next());
      n->literal = Value(t.floatValue);
      return n;
    }
    case Kind::Op:
      if (t.text == "(") {
        next();
        if (acceptOp(")"))
          return make(Expr::Kind::Tuple, t);
        ExprPtr first = parseExpression();
        if (acceptOp(")"))
          return first;
        ExprPtr tuple = make(Expr::Kind::Tuple, t);
        tuple->args.push_back(std::move(first));
        while (acceptOp(",") && !atOp(")"))
          tuple->args.push_back(parseExpression());
        expectOp(")");
        return tuple;
      }
      if (t.text == "[") {
        ExprPtr list = make(Expr::Kind::List, next());
        while (!atOp("]")) {
          list->args.push_back(parseExpression());
          if (!acceptOp(","))
            break;
        }
        expectOp("]");
        return list;
      }
      if (t.text == "{") {
        ExprPtr dict = make(Expr::Kind::DictLit, next());
        while (!atOp("}")) {
          dict->args.push_back(parseExpression());
          expectOp(":");
          dict->args.push_back(parseExpression());
          if (!acceptOp(","))
            break;
        }
        expectOp("}");
        return dict;
      }
      break;
    default:
      break;
    }
    fail("expected a value, found " + describe(t), t);
  }

  ExprPtr parsePostfix(ExprPtr value) {
    for (;;) {
      if (atOp(".")) {
        const Token &dot = next();
        if (peek().kind == Kind::Int) { // x.0 is x[0].
          ExprPtr n = make(Expr::Kind::Item, dot);
          ExprPtr index = make(Expr::Kind::Literal, peek());
          index->literal = Value(next().intValue);
          n->args.push_back(std::move(value));
          n->args.push_back(std::move(index));
          value = std::move(n);
          continue;
        }
        ExprPtr n = make(Expr::Kind::Attr, dot);
        n->name = expectName("an attribute name after '.'");
        n->args.push_back(std::move(value));
        value = std::move(n);
      } else if (atOp("[")) {
        value = parseSubscript(std::move(value));
      } else if (atOp("(")) {
        value = parseCall(std::move(value));
      } else {
        return value;
      }
    }
  }

  ExprPtr parseSubscript(ExprPtr value) {
    const Token &bracket = next();
    ExprPtr parts[3];
    int part = 0;
    bool slice = false;
    for (;;) {
      if (atOp(":")) {
        next();
        slice = true;
        if (++part > 2)
          fail("a slice has at most three parts", peek());
        continue;
      }
      if (atOp("]"))
        break;
      if (parts[part])
        fail("expected ':' or ']', found " + describe(peek()), peek());
      parts[part] = parseExpression();
    }
    expectOp("]");
    ExprPtr n = make(slice ? Expr::Kind::Slice : Expr::Kind::Item, bracket);
    n->args.push_back(std::move(value));
    if (!slice) {
      if (!parts[0])
        fail("empty subscript '[]'", bracket);
      n->args.push_back(std::move(parts[0]));
    } else {
      for (ExprPtr &p : parts)
        n->args.push_back(std::move(p));
    }
    return n;
  }

  /// Arguments of a call, a filter or a test, after the '(' .
  void parseArguments(Expr &n) {
    while (!atOp(")")) {
      if (peek().kind == Kind::Name && peek(1).kind == Kind::Op &&
          peek(1).text == "=") {
        std::string key = next().text;
        next();
        n.kwargs.emplace_back(key, parseExpression());
      } else {
        if (!n.kwargs.empty())
          fail("a positional argument after a keyword argument", peek());
        n.args.push_back(parseExpression());
      }
      if (!acceptOp(","))
        break;
    }
    expectOp(")");
  }

  ExprPtr parseCall(ExprPtr callee) {
    ExprPtr n = make(Expr::Kind::Call, next());
    n->args.push_back(std::move(callee));
    parseArguments(*n);
    return n;
  }

  ExprPtr parseFiltersAndTests(ExprPtr value) {
    for (;;) {
      if (atOp("|")) {
        const Token &bar = next();
        ExprPtr n = make(Expr::Kind::Filter, bar);
        n->name = expectName("a filter name after '|'");
        if (!detail::isFilter(n->name))
          fail("unknown filter '" + n->name + "'", bar);
        n->args.push_back(std::move(value));
        if (acceptOp("("))
          parseArguments(*n);
        value = std::move(n);
      } else if (atName("is")) {
        ExprPtr n = make(Expr::Kind::Test, next());
        n->negated = acceptName("not");
        n->name = expectName("a test name after 'is'");
        n->args.push_back(std::move(value));
        if (acceptOp("(")) {
          parseArguments(*n);
        } else if (startsBareTestArgument()) {
          // `x is divisibleby 3`, `x is sameas none`.
          n->args.push_back(parsePostfix(parsePrimary()));
        }
        value = std::move(n);
      } else if (atOp("(")) {
        value = parseCall(std::move(value));
      } else {
        return value;
      }
    }
  }

  bool startsBareTestArgument() const {
    const Token &t = peek();
    switch (t.kind) {
    case Kind::String:
    case Kind::Int:
    case Kind::Float:
      return true;
    case Kind::Name:
      return t.text != "else" && t.text != "or" && t.text != "and" &&
             t.text != "if" && t.text != "in" && t.text != "is" &&
             t.text != "not";
    case Kind::Op:
      return t.text == "[" || t.text == "{";
    default:
      return false;
    }
  }

  std::vector<Token> tokens;
  const Positions &positions;
  size_t index = 0;
  int loopDepth = 0;
  /// Open statements and expressions: the parser and the renderer recurse
  /// once per level, so a template nested absurdly deep is refused rather
  /// than allowed to exhaust the stack.
  int nesting = 0;
  static constexpr int kMaxNesting = 200;
  struct Nesting {
    Parser &p;
    Nesting(Parser &p, const Token &at) : p(p) {
      if (++p.nesting > kMaxNesting)
        p.fail("the template nests tags or expressions deeper than " +
                   std::to_string(kMaxNesting) + " levels",
               at);
    }
    ~Nesting() { --p.nesting; }
  };
};

} // namespace

Body parseTemplate(const std::string &source) {
  std::string text = normalizeNewlines(source);
  Positions positions(text);
  Parser parser(lexTemplate(text, positions), positions);
  return parser.parseTemplate();
}

} // namespace folio::jinja::detail
