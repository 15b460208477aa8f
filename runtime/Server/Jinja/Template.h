//===- Template.h - Chat templates (a Jinja2 subset) ----------*- C++ -*-===//
//
// Hugging Face models ship their chat format as a Jinja2 template in
// tokenizer_config.json ("chat_template"). Rendering it exactly as
// transformers' apply_chat_template does is what makes a chat request
// produce the prompt the model was trained on, so this is an interpreter
// of the Jinja2 that such templates use, with Hugging Face's environment:
// trim_blocks, lstrip_blocks, break/continue, immutable lists and dicts,
// `raise_exception(msg)`, `strftime_now(fmt)`, and a `tojson` filter that
// is Python's json.dumps (ensure_ascii off). Supported: if/elif/else, for
// (with `loop`, else, an `if` filter, tuple unpacking), set (also of a
// namespace attribute, and the block form), macro, raw, break, continue,
// generation; the common filters, tests and str/dict/list methods. What is
// missing is refused with an error naming the line, the column and the
// construct, never rendered differently.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SERVER_JINJA_TEMPLATE_H
#define FOLIO_RUNTIME_SERVER_JINJA_TEMPLATE_H

#include "runtime/Server/Jinja/Value.h"
#include "runtime/Support/Status.h"

#include <memory>
#include <string>

namespace folio::jinja {

namespace detail {
struct Node;
} // namespace detail

class Template {
public:
  /// Parses `source`; a syntax error or an unsupported tag fails with
  /// "line L, column C: ...".
  static Expected<Template> parse(const std::string &source);

  /// Renders with the variables of `context` (a dict with string keys).
  /// An error fails with its line and column; a template's own
  /// raise_exception(msg) fails with StatusCode::InvalidArgument and
  /// "the template raised: msg".
  Expected<std::string> render(const Value &context) const;

private:
  std::shared_ptr<const std::vector<std::unique_ptr<detail::Node>>> body_;
};

} // namespace folio::jinja

#endif // FOLIO_RUNTIME_SERVER_JINJA_TEMPLATE_H
