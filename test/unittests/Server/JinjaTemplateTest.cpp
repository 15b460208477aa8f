//===- JinjaTemplateTest.cpp - The chat-template language
//------------------===//
//
// Folio's Jinja renderer against transformers' own renders of the same
// templates (Inputs/chat-templates/fixtures.json, from make_fixtures.py),
// and the errors of what it refuses.
//
//===----------------------------------------------------------------------===//

#include "runtime/Server/ChatTemplate.h"
#include "runtime/Server/Jinja/Template.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

using namespace folio;
using folio::jinja::Template;
using folio::jinja::Value;
using ::testing::HasSubstr;
using Json = nlohmann::json;

namespace {

Json loadFixtures() {
  std::ifstream in(std::string(FOLIO_SOURCE_DIR) +
                   "/test/unittests/Server/Inputs/chat-templates/"
                   "fixtures.json");
  std::stringstream text;
  text << in.rdbuf();
  return Json::parse(text.str());
}

/// Renders `source` with `vars` (a JSON object of strings, numbers, bools,
/// lists and objects); the error message on failure.
std::string render(const std::string &source,
                   const Json &vars = Json::object());

Value toValue(const Json &j) {
  if (j.is_null())
    return Value::none();
  if (j.is_boolean())
    return Value(j.get<bool>());
  if (j.is_number_integer())
    return Value(j.get<int64_t>());
  if (j.is_number())
    return Value(j.get<double>());
  if (j.is_string())
    return Value(j.get<std::string>());
  if (j.is_array()) {
    jinja::ValueList items;
    for (const Json &item : j)
      items.push_back(toValue(item));
    return Value::list(std::move(items));
  }
  auto d = std::make_shared<jinja::Dict>();
  for (const auto &[key, value] : j.items())
    d->set(Value(key), toValue(value));
  return Value::dict(d);
}

std::string render(const std::string &source, const Json &vars) {
  Expected<Template> t = Template::parse(source);
  if (!t)
    return "error: " + t.status().message();
  Expected<std::string> out = t->render(toValue(vars));
  if (!out)
    return "error: " + out.status().message();
  return *out;
}

TEST(JinjaTemplateTest, MatchesTransformersOnEveryFixture) {
  Json fixtures = loadFixtures();
  ASSERT_TRUE(fixtures.contains("templates"));
  size_t renders = 0, errors = 0;
  for (const Json &fixture : fixtures["templates"]) {
    std::string name = fixture["name"];
    SCOPED_TRACE("template " + name);
    server::TokenizerConfig config;
    config.chatTemplate = fixture["template"];
    config.chatTemplatePath = name;
    for (const auto &[key, value] : fixtures["special_tokens"].items())
      config.specialTokens.emplace_back(key, value.get<std::string>());
    Expected<std::shared_ptr<const server::ChatTemplate>> chat =
        server::ChatTemplate::create(config);
    ASSERT_TRUE(chat) << chat.status().message();
    for (const Json &c : fixture["cases"]) {
      std::string conversation = c["conversation"];
      bool generation = c["add_generation_prompt"];
      SCOPED_TRACE(conversation +
                   (generation ? " +generation" : " -generation"));
      std::vector<server::ChatMessage> messages;
      for (const Json &m : fixtures["conversations"][conversation])
        messages.push_back({m["role"], m["content"]});
      Expected<std::string> out = (*chat)->render(messages, generation);
      if (c.contains("error")) {
        ASSERT_FALSE(out) << "rendered:\n" << *out;
        EXPECT_THAT(out.status().message(),
                    HasSubstr(c["error"].get<std::string>()));
        ++errors;
      } else {
        ASSERT_TRUE(out) << out.status().message();
        EXPECT_EQ(*out, c["expected"].get<std::string>());
        ++renders;
      }
    }
  }
  // The fixture file holds both kinds; an empty one would pass vacuously.
  EXPECT_GE(renders, 90u);
  EXPECT_GE(errors, 4u);
}

TEST(JinjaTemplateTest, SyntaxErrorsNameLineAndColumn) {
  EXPECT_EQ(render("ok\n{% if x %}\nno end"),
            "error: chat template line 3, column 7: missing 'elif' or "
            "'else' or 'endif' before the end of the template");
  EXPECT_EQ(render("{{ 'a' + }}"),
            "error: chat template line 1, column 10: expected a value, "
            "found '}}'");
  EXPECT_EQ(render("a\n  {% include 'x.j2' %}"),
            "error: chat template line 2, column 6: unsupported tag "
            "'include'; chat templates may use if, for, set, macro, break, "
            "continue, raw and generation");
  EXPECT_EQ(render("{% endfor %}"),
            "error: chat template line 1, column 4: 'endfor' without a "
            "matching opening tag");
  EXPECT_EQ(render("{% break %}"),
            "error: chat template line 1, column 4: 'break' outside a for "
            "loop");
  EXPECT_EQ(render("{{ 'unterminated }}"),
            "error: chat template line 1, column 4: unterminated string "
            "literal");
  EXPECT_EQ(render("{# open"),
            "error: chat template line 1, column 1: unterminated comment: "
            "'{#' without '#}'");
  EXPECT_EQ(render("{{ x ; }}"),
            "error: chat template line 1, column 6: unexpected character "
            "';' in a tag");
}

// Tests that what the renderer does not support and can see in the text
// refuses the template when it is parsed (a server reports it at start),
// not at its first render: an unknown filter anywhere, even in a branch
// never taken, and %-formatting of a string literal; and that a filter
// name is still checked at render where only a value names it (map).
TEST(JinjaTemplateTest, UnsupportedFiltersAndFormattingFailTheParse) {
  for (const char *source :
       {"{{ x | nosuch }}", "{% if false %}{{ x | wordwrap(5) }}{% endif %}"}) {
    Expected<Template> t = Template::parse(source);
    ASSERT_FALSE(t) << source;
    EXPECT_NE(t.status().message().find("unknown filter '"), std::string::npos)
        << t.status().message();
  }
  EXPECT_EQ(render("{{ x | nosuch }}", {{"x", 1}}),
            "error: chat template line 1, column 6: unknown filter 'nosuch'");
  Expected<Template> format = Template::parse("{{ '%s!' % x }}");
  ASSERT_FALSE(format);
  EXPECT_NE(format.status().message().find("column 10: string formatting"),
            std::string::npos)
      << format.status().message();
  // Numbers and values not known to be strings parse.
  EXPECT_EQ(render("{{ 7 % 3 }}"), "1");
  EXPECT_TRUE(Template::parse("{{ x % 2 }}"));
  // Every filter the renderer has parses.
  for (const char *f : {"default", "length", "tojson", "trim", "join", "map",
                        "selectattr", "dictsort", "indent", "wordcount"})
    EXPECT_TRUE(Template::parse(std::string("{{ x | ") + f + " }}")) << f;
  EXPECT_EQ(render("{{ [1] | map('nosuch') | list }}"),
            "error: chat template line 1, column 8: unknown filter 'nosuch'");
}

TEST(JinjaTemplateTest, RuntimeErrorsNameTheExpression) {
  EXPECT_EQ(render("{{ messages[0].content }}"),
            "error: chat template line 1, column 4: 'messages' is undefined");
  EXPECT_EQ(render("{{ m.a.b }}", {{"m", Json::object()}}),
            "error: chat template line 1, column 7: cannot read attribute "
            "'b' of an undefined value");
  EXPECT_EQ(render("{{ 'a' + 1 }}"),
            "error: chat template line 1, column 8: unsupported operand "
            "types for +: 'str' and 'int'");
  EXPECT_EQ(render("{{ x is nosuch }}", {{"x", 1}}),
            "error: chat template line 1, column 6: unknown test 'nosuch'");
  EXPECT_EQ(render("{{ 1 // 0 }}"),
            "error: chat template line 1, column 6: integer division by zero");
  EXPECT_EQ(render("{{ 'abc'.nosuch() }}"),
            "error: chat template line 1, column 9: 'str' has no method "
            "'nosuch'");
  EXPECT_EQ(render("{% for x in 5 %}{% endfor %}"),
            "error: chat template line 1, column 13: 'int' object is not "
            "iterable");
  EXPECT_EQ(render("{% set x = 1 %}{% set x.y = 2 %}"),
            "error: chat template line 1, column 19: cannot set attribute "
            "'y' of 'x' (a int); only a namespace() takes attribute "
            "assignments");
}

TEST(JinjaTemplateTest, RaiseExceptionIsTheTemplatesMessage) {
  EXPECT_EQ(render("line one\n{{ raise_exception('roles must alternate') }}"),
            "error: the chat template raised an error at line 2: roles must "
            "alternate");
}

TEST(JinjaTemplateTest, ListsAndDictsAreImmutableAsInTheSandbox) {
  std::string out = render("{% set l = [1] %}{{ l.append(2) }}");
  EXPECT_THAT(out, HasSubstr("list.append() would modify the list"));
  EXPECT_THAT(render("{% set d = {} %}{{ d.update({'a': 1}) }}"),
              HasSubstr("dict.update() would modify the dict"));
  // A namespace is the way to carry state, and it works inside loops.
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for i in range(4) %}"
                   "{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"),
            "6");
  // A plain set inside a loop does not leak out of it (Jinja's scoping).
  EXPECT_EQ(render("{% set n = 0 %}{% for i in range(4) %}{% set n = i %}"
                   "{% endfor %}{{ n }}"),
            "0");
}

TEST(JinjaTemplateTest, RendersAreBounded) {
  EXPECT_THAT(render("{% for i in range(100000) %}{% for j in range(100000) "
                     "%}{% endfor %}{% endfor %}"),
              HasSubstr("more than 1000000 loop iterations"));
  EXPECT_THAT(render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"),
              HasSubstr("macro calls nested deeper than 64"));
  EXPECT_THAT(render("{% for i in range(100000) %}{{ 'x' * 1000 }}"
                     "{% endfor %}"),
              HasSubstr("the rendered prompt exceeds 64 MiB"));
  EXPECT_THAT(render("{{ range(1000000) | length }}"),
              HasSubstr("range() longer than 100000 items"));
  EXPECT_THAT(render("{{ 9223372036854775807 + 1 }}"),
              HasSubstr("integer overflow"));
  EXPECT_THAT(render("{{ " + std::string(1000, '(') + "1" +
                     std::string(1000, ')') + " }}"),
              HasSubstr("nests tags or expressions deeper than 200 levels"));
  std::string deepIfs;
  for (int i = 0; i < 5000; ++i)
    deepIfs += "{% if true %}";
  EXPECT_THAT(render(deepIfs),
              HasSubstr("nests tags or expressions deeper than 200 levels"));
  EXPECT_THAT(render("{{ " + std::string(1000, '-') + "1 }}"),
              HasSubstr("nests tags or expressions deeper than 200 levels"));
  std::string longChain = "{{ 1";
  for (int i = 0; i < 5000; ++i)
    longChain += " + 1";
  EXPECT_THAT(render(longChain + " }}"),
              HasSubstr("a tag holds more than 4000 tokens"));
}

TEST(JinjaTemplateTest, PrintsValuesAsPython) {
  EXPECT_EQ(render("{{ 1.0 }} {{ 0.1 }} {{ 1e16 }} {{ 1e15 }} {{ 1.5e-7 }} "
                   "{{ 123456789.125 }} {{ -0.0 }}"),
            "1.0 0.1 1e+16 1000000000000000.0 1.5e-07 123456789.125 -0.0");
  EXPECT_EQ(render("{{ [\"it's\", 'a\\nb', none, true, {'k': (1,)}] }}"),
            "[\"it's\", 'a\\nb', None, True, {'k': (1,)}]");
  EXPECT_EQ(render("{{ undefined_name }}|{{ none }}"), "|None");
}

TEST(JinjaTemplateTest, WhitespaceControlFollowsHuggingFacesSettings) {
  // trim_blocks: the newline after a block tag goes; lstrip_blocks: the
  // indentation before it; `-` strips every whitespace on its side; one
  // trailing newline of the source goes.
  EXPECT_EQ(render("a\n  {% if true %}\n  b\n  {% endif %}\nc\n"), "a\n  b\nc");
  EXPECT_EQ(render("a  {{- 'b' -}}  \n c"), "abc");
  EXPECT_EQ(render("a\n  {%+ if true %}b{% endif %}"), "a\n  b");
  EXPECT_EQ(render("{% raw %}{{ x }}{% endraw %}"), "{{ x }}");
  EXPECT_EQ(render("x\r\ny\r\n"), "x\ny");
}

} // namespace
