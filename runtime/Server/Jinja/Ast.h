//===- Ast.h - Parsed chat templates --------------------------*- C++ -*-===//
//
// Internal to runtime/Server/Jinja: the tree Parser.cpp builds and
// Render.cpp walks. One node struct per level (expression, statement) with
// the fields each kind uses, which keeps the evaluator a pair of switches.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SERVER_JINJA_AST_H
#define FOLIO_RUNTIME_SERVER_JINJA_AST_H

#include "runtime/Server/Jinja/Value.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace folio::jinja::detail {

/// A template error with its place in the source. Thrown inside the parser
/// and the evaluator (both recursive, so an error may come from any depth)
/// and caught at Template's API, which returns it as a Status.
struct TemplateError : std::runtime_error {
  int line;
  int column;
  /// raise_exception() from the template itself, as opposed to a template
  /// that is malformed or misused a value.
  bool raised;
  TemplateError(std::string message, int line, int column, bool raised = false)
      : std::runtime_error(std::move(message)), line(line), column(column),
        raised(raised) {}
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Literal,  // literal
    Name,     // name
    List,     // args
    Tuple,    // args
    DictLit,  // args: key, value, key, value, ...
    Attr,     // args[0] . name
    Item,     // args[0] [ args[1] ]
    Slice,    // args[0] [ args[1] : args[2] : args[3] ] (null = omitted)
    Call,     // args[0] ( args[1..] , kwargs )
    Filter,   // args[0] | name ( args[1..], kwargs )
    Test,     // args[0] is [not] name ( args[1..], kwargs )
    Unary,    // op args[0]: "-", "+"
    Binary,   // args[0] op args[1]: + - * / // % ** ~
    Compare,  // args[0] ops[0] args[1] ops[1] args[2] ...
    And,      // args[0] and args[1]
    Or,       // args[0] or args[1]
    Not,      // not args[0]
    Condition // args[0] if args[1] else args[2] (args[2] may be null)
  };
  Kind kind;
  int line = 0, column = 0;
  Value literal;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
  bool negated = false;

  Expr(Kind kind, int line, int column)
      : kind(kind), line(line), column(column) {}
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  enum class Kind {
    Text,     // text
    Output,   // {{ expr }}
    If,       // branches (a null condition is the else branch)
    For,      // for targets in expr [if filter]: body [else elseBody]
    Set,      // set targets = expr, or set targets[0].attribute = expr
    SetBlock, // set targets[0]: body endset
    Macro,    // macro name(params): body endmacro
    Break,
    Continue
  };
  Kind kind;
  int line = 0, column = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;
  std::vector<std::pair<ExprPtr, Body>> branches;
  std::vector<std::string> targets;
  std::string attribute;
  std::string name;
  /// Macro parameters with their defaults (null: required).
  std::vector<std::pair<std::string, ExprPtr>> params;
  Body body, elseBody;

  Node(Kind kind, int line, int column)
      : kind(kind), line(line), column(column) {}
};

/// Parses Jinja source with Hugging Face's settings (trim_blocks,
/// lstrip_blocks, loop controls); throws TemplateError.
Body parseTemplate(const std::string &source);

} // namespace folio::jinja::detail

#endif // FOLIO_RUNTIME_SERVER_JINJA_AST_H
