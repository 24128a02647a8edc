// Errors and limits: bad templates and runaway renders give an error naming the line,
// never a crash. Python's messages where jinja2 raises the same error.
#include <gtest/gtest.h>

#include "jinja/test_util.h"

namespace pagoda::jinja {
namespace {

TEST(JinjaErrors, RuntimeErrorsMatchPythonAndNameTheLine) {
  EXPECT_EQ(render("{{ 1 + 'a' }}"),
            "ERROR: template error, line 1: unsupported operand type(s) for +: 'int' and 'str'");
  EXPECT_EQ(render("\n\n{{ 10 // 0 }}"),
            "ERROR: template error, line 3: integer division or modulo by zero");
  EXPECT_EQ(render("{{ x.y.z }}"), "ERROR: template error, line 1: 'x' is undefined");
  EXPECT_EQ(
      render("{{ [1].append(2) }}"),
      "ERROR: template error, line 1: access to attribute 'append' of 'list' object is unsafe.");
  EXPECT_EQ(render("{{ range(100001)|length }}"),
            "ERROR: template error, line 1: Range too big. The sandbox blocks ranges larger than "
            "MAX_RANGE (100000).");
  EXPECT_EQ(
      render("{{ 'a' < 1 }}"),
      "ERROR: template error, line 1: '<' not supported between instances of 'str' and 'int'");
  EXPECT_EQ(render("{{ undefined_name + 1 }}"),
            "ERROR: template error, line 1: 'undefined_name' is undefined");
  EXPECT_EQ(render("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}"),
            "ERROR: template error, line 1: macro 'm' takes not more than 1 argument(s)");
  EXPECT_EQ(render("{% for a, b in [1] %}{% endfor %}"),
            "ERROR: template error, line 1: cannot unpack non-iterable int object");
  EXPECT_EQ(render("{{ 'x' | tojson }}{{ y | tojson }}"),
            "ERROR: template error, line 1: Object of type Undefined is not JSON serializable");
}

TEST(JinjaErrors, GeneratorsAreLazyAndAlwaysTrue) {
  // map, select, unique, items, ... return Python generators in jinja2.
  EXPECT_EQ(render("{{ range(3) }} {{ range(1, 10, 2) }} {{ range(3) | list }}"),
            "range(0, 3) range(1, 10, 2) [0, 1, 2]");
  EXPECT_EQ(render("{{ 'yes' if [] | select else 'no' }} {{ (5 | unique) is defined }} "
                   "{{ [1, 2] | map('string') | join }} {{ [1, 2] | map('string') | first }}"),
            "yes True 12 1");
  EXPECT_EQ(render("{{ 5 | unique | list }}"),
            "ERROR: template error, line 1: 'int' object is not iterable");
  EXPECT_EQ(render("{{ [1, 2] | map('string') | length }}"),
            "ERROR: template error, line 1: object of type 'generator' has no len()");
}

TEST(JinjaErrors, RaiseExceptionGivesItsMessageAlone) {
  auto result = try_render(
      "line 1\n{% if true %}{{ raise_exception('Roles must alternate, got ' ~ 2) }}{% endif %}");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(result.status().message(), "Roles must alternate, got 2");
}

TEST(JinjaErrors, SyntaxErrors) {
  EXPECT_EQ(render("{% if x %}never closed"),
            "ERROR: template syntax error, line 1: unexpected end of template: expected 'elif' or "
            "'else' or 'endif'");
  EXPECT_EQ(render("a\n{% endfor %}"),
            "ERROR: template syntax error, line 2: unknown tag 'endfor'");
  EXPECT_EQ(render("{{ x | no_such_filter }}"),
            "ERROR: template syntax error, line 1: no filter named 'no_such_filter'");
  EXPECT_EQ(render("{{ x is no_such_test }}"),
            "ERROR: template syntax error, line 1: no test named 'no_such_test'");
  EXPECT_EQ(render("{% break %}"),
            "ERROR: template syntax error, line 1: 'break' outside of a loop");
  EXPECT_EQ(render("{% include 'other.jinja' %}"),
            "ERROR: template syntax error, line 1: 'include' is not supported: a chat template "
            "must be self-contained");
  EXPECT_EQ(render("{{ }}"),
            "ERROR: template syntax error, line 1: expected an expression, got '}}'");
  EXPECT_EQ(render("{% set = 1 %}"),
            "ERROR: template syntax error, line 1: expected a name, got '='");
  EXPECT_EQ(render("{{ f(a=1, 2) }}"),
            "ERROR: template syntax error, line 1: invalid syntax for function call expression");
  EXPECT_EQ(render("{% macro m(a=1, b) %}{% endmacro %}"),
            "ERROR: template syntax error, line 1: non-default parameter 'b' follows a default "
            "parameter");
}

TEST(JinjaLimits, DeepNestingIsASyntaxError) {
  const std::string kTooDeep =
      "ERROR: template syntax error, line 1: the template nests deeper than 128 levels of "
      "brackets, expressions or blocks";
  const std::string parens = std::string(500, '(') + "1" + std::string(500, ')');
  EXPECT_EQ(render("{{ " + parens + " }}"), kTooDeep);
  std::string chain = "{{ 1";
  for (int i = 0; i < 1000; ++i) chain += " + 1";
  EXPECT_EQ(render(chain + " }}"), kTooDeep);
  std::string nots = "{{ ";
  for (int i = 0; i < 10000; ++i) nots += "not ";
  EXPECT_EQ(render(nots + "1 }}"), kTooDeep);
  std::string ifs;
  for (int i = 0; i < 1000; ++i) ifs += "{% if true %}";
  EXPECT_EQ(render(ifs), kTooDeep);
}

TEST(JinjaLimits, RunawayRendersStopWithAnError) {
  RenderOptions options;
  options.limits.max_steps = 100'000;
  auto loops = try_render(
      "{% for i in range(100000) %}{% for j in range(100000) %}.{% endfor %}{% endfor %}", {},
      options);
  ASSERT_FALSE(loops.ok());
  EXPECT_EQ(loops.status().code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(loops.status().message(),
            "template error, line 1: template exceeded its work limit (100000 steps)");

  auto recursion = try_render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  ASSERT_FALSE(recursion.ok());
  EXPECT_EQ(recursion.status().message(),
            "template error, line 1: calls nest deeper than 64 levels");

  options = {};
  options.limits.max_output_bytes = 1 << 20;
  auto doubling = try_render(
      "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% "
      "endfor %}",
      {}, options);
  ASSERT_FALSE(doubling.ok());
  EXPECT_EQ(doubling.status().code(), ErrorCode::kResourceExhausted);
  auto repeat = try_render("{{ 'x' * 10000000000 }}", {}, options);
  ASSERT_FALSE(repeat.ok());
  EXPECT_EQ(repeat.status().code(), ErrorCode::kResourceExhausted);
  auto nesting = try_render(
      "{% set ns = namespace(v=[]) %}{% for i in range(1000) %}{% set ns.v = [ns.v] %}{% endfor "
      "%}");
  ASSERT_FALSE(nesting.ok());
  EXPECT_EQ(nesting.status().message(),
            "template error, line 1: values nest deeper than 256 levels");
}

TEST(JinjaLimits, ReferenceCyclesAreReleased) {
  // A namespace holding itself, and a loop object stored past its loop: freed at the
  // end of the render (the leak checker of the sanitizer builds would see a leak).
  EXPECT_EQ(render("{% set ns = namespace() %}{% set ns.self = ns %}{% for x in [ns] %}{% set "
                   "ns.loop = loop %}{% endfor %}"
                   "{{ ns.self.self.loop.length }}"),
            "1");
}

TEST(JinjaLimits, SelfReferenceAndSharingStayBounded) {
  EXPECT_EQ(render("{% set ns = namespace(a=1) %}{% set ns.self = ns %}{{ ns }}"),
            "<Namespace {'a': 1, 'self': <Namespace {...}>}>");
  // Each step doubles the items a walk over the value would visit.
  EXPECT_EQ(render("{% set ns = namespace(v=1) %}{% for i in range(100) %}{% set ns.v = [ns.v, "
                   "ns.v] %}{% endfor %}"),
            "ERROR: template error, line 1: a value holds more than 16777216 items in all");
  // A chain of 100000 namespaces prints (cut short) and is freed without recursion.
  const std::string chain =
      "{% set ns = namespace(next=none) %}{% for i in range(100000) %}{% set ns.next = "
      "namespace(next=ns.next) %}"
      "{% endfor %}{{ (ns | string)[:40] }}";
  EXPECT_EQ(render(chain), "<Namespace {'next': <Namespace {'next': ");
}

TEST(JinjaLimits, IntegerOverflowIsAnError) {
  EXPECT_EQ(render("{{ 9223372036854775807 + 1 }}"),
            "ERROR: template error, line 1: integer overflow: the result does not fit in 64 bits");
  EXPECT_EQ(render("{{ 2 ** 64 }}"),
            "ERROR: template error, line 1: integer overflow: the result does not fit in 64 bits");
}

}  // namespace
}  // namespace pagoda::jinja
