// The interpreter on small templates: every expected text was produced by Python's
// jinja2 3.1 in Hugging Face's chat template environment (trim_blocks, lstrip_blocks,
// ImmutableSandboxedEnvironment, loopcontrols, tojson with ensure_ascii=False), with
// the variables of Vars() and strftime_now fixed at 2024-07-26 10:00:00 UTC.
#include <gtest/gtest.h>

#include "jinja/test_util.h"

namespace pagoda::jinja {
namespace {

nlohmann::ordered_json Vars() {
  return nlohmann::ordered_json::parse(R"({"s": "Hello World", "l": [3, 1, 2],
      "d": {"b": 1, "a": [1, {"c": null}]}, "u": "h\u00e9llo \u00df \u03a3"})");
}

std::string render(std::string_view source, const nlohmann::ordered_json& variables) {
  RenderOptions options;
  options.now = 1721988000;  // 2024-07-26 10:00:00 UTC
  auto result = try_render(source, variables, options);
  return result.ok() ? *result : "ERROR: " + result.status().message();
}

TEST(JinjaRender, Literals) {
  EXPECT_EQ(
      render("{{ [1, 'a', None, True, {'k': 1.5}] }} {{ (1,) }} {{ (1, 2) }} {{ () }}", Vars()),
      "[1, 'a', None, True, {'k': 1.5}] (1,) (1, 2) ()");
  EXPECT_EQ(render("{{ \"it's\" }} {{ [\"it's\", 'a\"b', 'new\\nline'] }}", Vars()),
            "it's [\"it's\", 'a\"b', 'new\\nline']");
  EXPECT_EQ(
      render("{{ 1.0 }} {{ 1e16 }} {{ 1e15 }} {{ 0.00001 }} {{ 0.1 + 0.2 }} {{ 1 / 3 }} {{ -0.0 }}",
             Vars()),
      "1.0 1e+16 1000000000000000.0 1e-05 0.30000000000000004 0.3333333333333333 -0.0");
  EXPECT_EQ(render("{{ none }}{{ None }}{{ true }}{{ False }} {{ 1, 2 }}", Vars()),
            "NoneNoneTrueFalse (1, 2)");
}

TEST(JinjaRender, Arithmetic) {
  EXPECT_EQ(render("{{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % -3 }} {{ 7 / "
                   "2 }} {{ 4 / 2 }}",
                   Vars()),
            "64 4 3 -4 -2 3.5 2.0");
  EXPECT_EQ(render("{{ -7.5 // 2 }} {{ 7.5 % -2 }} {{ 2 ** -1 }} {{ True + 1 }} {{ 'x' * 3 }} {{ "
                   "[1] * 3 }} {{ 3 * 'ab' }}",
                   Vars()),
            "-4.0 -0.5 0.5 2 xxx [1, 1, 1] ababab");
  EXPECT_EQ(render("{{ [1, 2] + [3] }} {{ (1,) + (2,) }} {{ 'a' + 'b' }} {{ 'a' ~ 1 ~ none ~ [1] ~ "
                   "undefined_name }}",
                   Vars()),
            "[1, 2, 3] (1, 2) ab a1None[1]");
  EXPECT_EQ(render("{{ '%s-%d' % ('a', 3) }} {{ '%05.2f|%-4s|%x' % (3.14159, 'ab', 255) }} {{ "
                   "'%(a)s=%(b)d' % {'a': 'x', 'b': 2} }}",
                   Vars()),
            "a-3 03.14|ab  |ff x=2");
}

TEST(JinjaRender, Comparisons) {
  EXPECT_EQ(render("{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ True == 1 }} {{ 1 == 1.0 }} {{ 'a' < 'b' }} "
                   "{{ [1, 2] < [1, 3] }}",
                   Vars()),
            "True False True True True True");
  EXPECT_EQ(render("{{ {'a': 1} == {'a': 1} }} {{ (1, 2) == [1, 2] }} {{ 'ell' in s }} {{ 2 in l "
                   "}} {{ 'b' in d }} {{ 'z' not in d }}",
                   Vars()),
            "True False True True True True");
  EXPECT_EQ(render("{{ 'a' in undefined_name }} {{ 1 and 'x' }} {{ 0 or [] }} {{ not 0 }} {{ none "
                   "or 'fallback' }}",
                   Vars()),
            "False x [] True fallback");
}

TEST(JinjaRender, AttributesItemsAndSlices) {
  EXPECT_EQ(render("{{ d.b }}{{ d['b'] }}{{ d.a.1.c }}{{ d['a'][1]['c'] }}{{ l[-1] }}{{ l[10] "
                   "}}|{{ d.missing }}|{{ s[0] }}",
                   Vars()),
            "11NoneNone2||H");
  EXPECT_EQ(render("{{ 'abc'[::-1] }} {{ l[1:] }} {{ l[::2] }} {{ l[5:] }} {{ l[-10:2] }} {{ "
                   "u[1:3] }} {{ u[-3:] }} {{ l[::-2] }}",
                   Vars()),
            "cba [1, 2] [3, 2] [] [3, 1] \xc3\xa9"
            "l \xc3\x9f"
            " \xce\xa3"
            " [2, 3]");
  EXPECT_EQ(render("{{ d.items() }} {{ d.keys() }} {{ d.values() }} {{ d.get('b') }} {{ d.get('z', "
                   "'none') }}",
                   Vars()),
            "dict_items([('b', 1), ('a', [1, {'c': None}])]) dict_keys(['b', 'a']) dict_values([1, "
            "[1, {'c': None}]]) 1 none");
  EXPECT_EQ(
      render("{{ d.items is defined }} {{ [1].append }}|{{ d.pop }}|{{ d.__class__ }}", Vars()),
      "True ||");
}

TEST(JinjaRender, StringMethods) {
  EXPECT_EQ(render("{{ s.startswith('Hell') }} {{ s.endswith(('x', 'ld')) }} {{ s.find('o') }} {{ "
                   "s.rfind('o') }} {{ s.count('l') }} {{ s.replace('l', 'L') }}",
                   Vars()),
            "True True 4 7 3 HeLLo WorLd");
  EXPECT_EQ(render("{{ s.lower() }} {{ s.upper() }} {{ s.swapcase() }} {{ s.title() }} {{ "
                   "'hELLO'.capitalize() }} {{ '-'.join(['a', 'b']) }}",
                   Vars()),
            "hello world HELLO WORLD hELLO wORLD Hello World Hello a-b");
  EXPECT_EQ(render("{{ 'a b  c '.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a,b,c'.split(',', 1) }} "
                   "{{ 'a,b,c'.rsplit(',', 1) }} {{ ' a b c '.rsplit(None, 1) }}",
                   Vars()),
            "['a', 'b', 'c'] ['a', 'b', '', 'c'] ['a', 'b,c'] ['a,b', 'c'] [' a b', 'c']");
  EXPECT_EQ(render("[{{ '  x  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '  x'.lstrip() }}|{{ 'x  "
                   "'.rstrip() }}|{{ '\xe3\x80\x80"
                   "x\xc2\xa0"
                   "'.strip() }}]",
                   Vars()),
            "[x|a|x|x|x]");
  EXPECT_EQ(render("{{ s.ljust(13) }}|{{ s.rjust(13, '*') }}|{{ s.center(14) }}|{{ '42'.zfill(5) "
                   "}}|{{ '-42'.zfill(5) }}|{{ 'a\\nb'.splitlines() }}",
                   Vars()),
            "Hello World  |**Hello World| Hello World  |00042|-0042|['a', 'b']");
  EXPECT_EQ(render("{{ 'abc'.isalpha() }}{{ '12'.isdigit() }}{{ ' '.isspace() }}{{ 'abc'.islower() "
                   "}}{{ 'ABC'.isupper() }}{{ 'ab1'.isalnum() }}",
                   Vars()),
            "TrueTrueTrueTrueTrueTrue");
  EXPECT_EQ(render("{{ '\xc3\x89"
                   "'.lower() }}{{ '\xc3\x9f"
                   "'.upper() }} {{ u.upper() }} {{ '\xce\xa3"
                   "\xce\x91"
                   "\xce\xa3"
                   " \xce\xa3"
                   "\xce\x91"
                   "\xce\xa3"
                   "'.lower() }} {{ '\xc7\x86"
                   "emal'.title() }} {{ \"they're\".title() }}",
                   Vars()),
            "\xc3\xa9"
            "SS H\xc3\x89"
            "LLO SS \xce\xa3"
            " \xcf\x83"
            "\xce\xb1"
            "\xcf\x82"
            " \xcf\x83"
            "\xce\xb1"
            "\xcf\x82"
            " \xc7\x85"
            "emal They'Re");
  EXPECT_EQ(
      render(
          "{{ '{} {}'.format(1, 'a') }} {{ '{0}{x}'.format(1, x=2) }} {{ "
          "'{:>5}|{:<5}|{:^5}|{:05d}|{:.2f}|{:,}'.format('a', 'b', 'c', 42, 3.14159, 1234567) }}",
          Vars()),
      "1 a 12     a|b    |  c  |00042|3.14|1,234,567");
  EXPECT_EQ(render("{{ 'a=b=c'.partition('=') }} {{ 'prefix-x'.removeprefix('prefix-') }} {{ "
                   "'x.txt'.removesuffix('.txt') }}",
                   Vars()),
            "('a', '=', 'b=c') x x");
}

TEST(JinjaRender, Tests) {
  EXPECT_EQ(render("{{ x is defined }}{{ x is undefined }}{{ none is none }}{{ 1 is number }}{{ "
                   "true is boolean }}{{ 1 is integer }}{{ true is integer }}{{ 1.0 is float }}",
                   Vars()),
            "FalseTrueTrueTrueTrueTrueFalseTrue");
  EXPECT_EQ(render("{{ 'a' is string }}{{ {} is mapping }}{{ [] is iterable }}{{ 'a' is iterable "
                   "}}{{ [] is sequence }}{{ {} is sequence }}{{ 1 is iterable }}",
                   Vars()),
            "TrueTrueTrueTrueTrueTrueFalse");
  EXPECT_EQ(render("{{ range is callable }}{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ "
                   "9 is divisibleby(4) }}{{ 1 is eq 1 }}{{ 1 is equalto 1 }}",
                   Vars()),
            "TrueTrueTrueTrueFalseTrueTrue");
  EXPECT_EQ(render("{{ true is true }}{{ 1 is true }}{{ 'a' is lower }}{{ 'A' is upper }}{{ 1 is "
                   "in [1] }}{{ 1 is not in [1] }}{{ none is sameas none }}{{ 2 is gt 1 }}",
                   Vars()),
            "TrueFalseTrueTrueTrueFalseTrueTrue");
  EXPECT_EQ(render("{{ 'upper' is filter }}{{ 'odd' is test }}{{ 'nope' is filter }}{{ x is not "
                   "defined and true }}",
                   Vars()),
            "TrueTrueFalseTrue");
}

TEST(JinjaRender, Filters) {
  EXPECT_EQ(
      render(
          "[{{ '  a  '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ 'a\\nb'|indent(2) }}|{{ "
          "'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent }}|{{ 'a\\n\\nb'|indent(blank=true) }}]",
          Vars()),
      "[a|a|a\n  b|  a\n  b|a\n\n    b|a\n    \n    b]");
  EXPECT_EQ(render("{{ x|default('d') }}{{ none|default('d') }}{{ ''|default('d', true) }}{{ "
                   "x|d('e') }}{{ 0|default(5) }}",
                   Vars()),
            "dNonede0");
  EXPECT_EQ(
      render(
          "{{ '3'|int }}{{ 'x'|int }}{{ '3.5'|float }}{{ 3.7|int }}{{ -3|abs }}{{ "
          "'0x1A'|int(base=16) }}{{ ' 42 '|int }}{{ '4_2'|int }}{{ '42.9'|int }}{{ 'x'|int(7) }}",
          Vars()),
      "303.533264242427");
  EXPECT_EQ(render("{{ 3|round }} {{ 2.5|round }} {{ 2.675|round(2) }} {{ 3.5|round(0, 'floor') }} "
                   "{{ 3.14159|round(3, 'ceil') }} {{ -2.5|round }}",
                   Vars()),
            "3 2.0 2.67 3.0 3.142 -2.0");
  EXPECT_EQ(render("{{ [3, 1, 2]|sort }}{{ [3, 1, 2]|sort(reverse=true) }}{{ ['b', 'A', 'a']|sort "
                   "}}{{ ['b', 'A', 'a']|sort(case_sensitive=true) }}",
                   Vars()),
            "[1, 2, 3][3, 2, 1]['A', 'a', 'b']['A', 'a', 'b']");
  EXPECT_EQ(render("{{ [{'a': 2}, {'a': 1}]|sort(attribute='a') }}{{ [1, 2, 1]|unique|list }}{{ "
                   "['a', 'A']|unique|list }}",
                   Vars()),
            "[{'a': 1}, {'a': 2}][1, 2]['a']");
  EXPECT_EQ(render("{{ [1, 2, 3]|map('string')|join(',') }}{{ [{'a': 1}]|map(attribute='a')|list "
                   "}}{{ [1, 2, 3]|select('odd')|list }}{{ [1, 2, 3]|reject('odd')|list }}",
                   Vars()),
            "1,2,3[1][1, 3][2]");
  EXPECT_EQ(
      render(
          "{{ [{'a': 1}, {'a': 0}]|selectattr('a')|list }}{{ [{'a': 1}, {'b': 0}]|selectattr('a', "
          "'defined')|list }}{{ [{'a': 1}, {'a': 2}]|rejectattr('a', 'equalto', 2)|list }}",
          Vars()),
      "[{'a': 1}][{'a': 1}][{'a': 1}]");
  EXPECT_EQ(render("{{ 'abc'|first }}{{ [1, 2]|last }}{{ []|first }}{{ [1, 2]|reverse|list }}{{ "
                   "'abc'|reverse }}{{ [1, 2]|length }}{{ 'h\xc3\xa9"
                   "llo'|count }}{{ d|length }}",
                   Vars()),
            "a2[2, 1]cba252");
  EXPECT_EQ(render("{{ [1, 2, 3]|sum }}{{ [1, 2, 3]|min }}{{ [1, 2, 3]|max }}{{ [{'a': 1}, {'a': "
                   "4}]|sum(attribute='a') }}{{ ['a', 'B']|max }}{{ []|max }}",
                   Vars()),
            "6135B");
  EXPECT_EQ(render("{{ 'a b c'|wordcount }} {{ 'hello'|capitalize }} {{ 'HeLLo'|lower }} {{ 'a-b "
                   "c(d'|title }} {{ \"they're\"|title }} {{ 'abc'|replace('b', 'x') }} {{ "
                   "'aaa'|replace('a', 'b', 2) }}",
                   Vars()),
            "3 Hello hello A-B C(D They're axc bba");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2}|dictsort }}{{ {'b': 1, 'a': 2}|dictsort(by='value', "
                   "reverse=true) }}{{ d|items|list }}{{ [1, 2, 3, 4, 5]|batch(2)|list }}{{ [1, 2, "
                   "3, 4, 5]|slice(2)|list }}",
                   Vars()),
            "[('a', 2), ('b', 1)][('a', 2), ('b', 1)][('b', 1), ('a', [1, {'c': None}])][[1, 2], "
            "[3, 4], [5]][[1, 2, 3], [4, 5]]");
  EXPECT_EQ(render("{{ '<a href=\"x\">&\\''|e }} {{ '<a>'|safe }} {{ 'abcdefghij'|truncate(5) }} "
                   "{{ 'abc def ghi jkl mno'|truncate(9) }} {{ 'abcdefghijklmnop'|truncate(9, "
                   "true) }} [{{ 'ab'|center(6) }}]",
                   Vars()),
            "&lt;a href=&#34;x&#34;&gt;&amp;&#39; <a> abcdefghij abc... abcdef... [  ab  ]");
  EXPECT_EQ(render("{{ '%s and %s'|format(1, 2) }} {{ [1, 'a']|string }} {{ 1|string }} {{ "
                   "l|join(', ') }} {{ d|list }} {{ 'ab'|list }} {{ x|list }}",
                   Vars()),
            "1 and 2 [1, 'a'] 1 3, 1, 2 ['b', 'a'] ['a', 'b'] []");
  EXPECT_EQ(
      render("{{ 'a'|tojson }} {{ none|tojson }} {{ d|tojson }} {{ '\xc3\xa9"
             "\"\\n\xe2\x80\xa8"
             "<>&'|tojson }} {{ [1.0, 2, true, 1e100]|tojson }} {{ d|tojson(sort_keys=true) }}",
             Vars()),
      "\"a\" null {\"b\": 1, \"a\": [1, {\"c\": null}]} \"\xc3\xa9"
      "\\\"\\n\xe2\x80\xa8"
      "<>&\" [1.0, 2, true, 1e+100] {\"a\": [1, {\"c\": null}], \"b\": 1}");
  EXPECT_EQ(render("{{ d|tojson(indent=2) }}\n{{ d|tojson(indent='\\t', separators=(',', ' = ')) "
                   "}}\n{{ {}|tojson(indent=2) }}{{ {'a': []}|tojson(indent=2) }}{{ '\xc3\xa9"
                   "\xf0\x9f\x98\x80"
                   "'|tojson(ensure_ascii=true) }}",
                   Vars()),
            "{\n  \"b\": 1,\n  \"a\": [\n    1,\n    {\n      \"c\": null\n    }\n  "
            "]\n}\n{\n\t\"b\" = 1,\n\t\"a\" = [\n\t\t1,\n\t\t{\n\t\t\t\"c\" = "
            "null\n\t\t}\n\t]\n}\n{}{\n  \"a\": []\n}\"\\u00e9\\ud83d\\ude00\"");
  EXPECT_EQ(render("{{ [1, 2]|attr('count') is callable }}{{ {'a': 1}|attr('a') }}|{{ [{'a': {'b': "
                   "5}}]|map(attribute='a.b')|first }}",
                   Vars()),
            "True|5");
}

TEST(JinjaRender, Statements) {
  EXPECT_EQ(
      render("{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}",
             Vars()),
      "12121");
  EXPECT_EQ(render("{% for i in [1, 2] %}{% if true %}{% set y = i %}{% endif %}{{ y }}{% endfor "
                   "%}[{{ y }}]",
                   Vars()),
            "12[]");
  EXPECT_EQ(render("{% set ns = namespace(a=1) %}{% for i in [1, 2] %}{% set ns.a = ns.a + i %}{% "
                   "endfor %}{{ ns.a }}{{ ns }}",
                   Vars()),
            "4<Namespace {'a': 4}>");
  EXPECT_EQ(render("{% for a, b in [(1, 2), (3, 4)] %}{{ a }}{{ b }}{% endfor %}{% for k, v in "
                   "d|items %}{{ k }}={{ v }};{% endfor %}",
                   Vars()),
            "1234b=1;a=[1, {'c': None}];");
  EXPECT_EQ(render("{% for x in [1, 2, 3] if x > 1 %}{{ loop.index }}/{{ loop.length }}{% else "
                   "%}none{% endfor %}{% for x in [] %}{% else %}empty{% endfor %}",
                   Vars()),
            "1/22/2empty");
  EXPECT_EQ(render("{% for x in [1, 2, 3] %}{{ loop.previtem }}-{{ loop.nextitem }}|{% endfor %}",
                   Vars()),
            "-2|1-3|2-|");
  EXPECT_EQ(render("{% for x in [1, 2, 3] %}{{ loop.cycle('a', 'b') }}{{ loop.revindex }}{{ "
                   "loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.depth }}{% endfor %}",
                   Vars()),
            "a32TrueFalse1b21FalseFalse1a10FalseTrue1");
  EXPECT_EQ(render("{% for x in [1, 2, 3, 4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == "
                   "4 %}{% break %}{% endif %}{{ x }}{% endfor %}",
                   Vars()),
            "13");
  EXPECT_EQ(
      render("{% for x in [1, 2, 3] %}{% if loop.changed(x > 1) %}C{% endif %}{{ x }}{% endfor %} "
             "{% for x in 'ab' %}{{ x }}{% endfor %} {% for k in d %}{{ k }}{% endfor %}",
             Vars()),
      "C1C23 ab ba");
  EXPECT_EQ(render("{% for item in [{'n': 'a', 'c': [{'n': 'b', 'c': []}]}] recursive %}<{{ item.n "
                   "}}{{ loop.depth }}{{ loop(item.c) }}>{% endfor %}",
                   Vars()),
            "<a1<b2>>");
  EXPECT_EQ(render("{% set x %}a{{ 1 }}b{% endset %}{{ x }}|{% set y | upper %}abc{% endset %}{{ y "
                   "}}|{% filter upper|replace('B', '-') %}abc{% endfilter %}",
                   Vars()),
            "a1b|ABC|A-C");
  EXPECT_EQ(render("{{ 'a' if false }}|{{ 1 if true else 2 }}|{{ 'no' if none else 'yes' if 1 else "
                   "'never' }}",
                   Vars()),
            "|1|yes");
  EXPECT_EQ(render("{% if 0 %}a{% elif [] %}b{% elif 'x' %}c{% else %}d{% endif %}{% with a = 1, b "
                   "= 2 %}{{ a + b }}{% endwith %}{{ a }}",
                   Vars()),
            "c3");
  EXPECT_EQ(render("{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = (1, 2) %}{{ t[0] }}{{ t|length "
                   "}}{{ t.count(1) }}{{ l.index(1) }}",
                   Vars()),
            "121211");
  EXPECT_EQ(render("{% generation %}kept{% endgeneration %}", Vars()), "kept");
}

TEST(JinjaRender, Macros) {
  EXPECT_EQ(render("{% macro m() %}{{ x }}{% endmacro %}{% set x = 1 %}{{ m() }}", Vars()), "1");
  EXPECT_EQ(
      render("{% set x = 1 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 2 %}{{ m() }}", Vars()),
      "2");
  EXPECT_EQ(render("{% for i in [1, 2] %}{% macro m() %}{{ i }}{% endmacro %}{{ m() }}{% endfor %}",
                   Vars()),
            "12");
  EXPECT_EQ(render("{% macro m(a, b=2) %}{{ a }}{{ b }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ "
                   "m(1) }}|{{ m(1, 3, 4, k=5) }}|{{ m(b=0, a=9) }}",
                   Vars()),
            "12(){}|13(4,){'k': 5}|90(){}");
  EXPECT_EQ(render("{% macro m(a, b=a * 2) %}{{ a }},{{ b }}{% endmacro %}{{ m(3) }}|{% macro n(a) "
                   "%}[{{ a }}]{% endmacro %}{{ n() }}",
                   Vars()),
            "3,6|[]");
  EXPECT_EQ(
      render(
          "{% macro m(a) %}[{{ caller() }}]{% endmacro %}{% call m(1) %}inner{% endcall %}{% macro "
          "k(a) %}[{{ caller(a * 2) }}]{% endmacro %}{% call(v) k(21) %}got {{ v }}{% endcall %}",
          Vars()),
      "[inner][got 42]");
  EXPECT_EQ(render("{{ m }}{% macro m() %}x{% endmacro %}{{ m }} {{ m.name }} {{ m is callable }}",
                   Vars()),
            "<Macro 'm'> m True");
}

TEST(JinjaRender, Globals) {
  EXPECT_EQ(render("{{ range(5)|list }}{{ range(1, 10, 3)|list }}{{ range(10, 0, -3)|list }}{{ "
                   "range(0)|list }}",
                   Vars()),
            "[0, 1, 2, 3, 4][1, 4, 7][10, 7, 4, 1][]");
  EXPECT_EQ(render("{{ dict(a=1, b=2) }}{{ dict([('x', 1)]) }}{{ namespace(a=1).a }}{% set c = "
                   "cycler('x', 'y') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}{{ c.current }}{% "
                   "set j = joiner('|') %}{{ j() }}a{{ j() }}b",
                   Vars()),
            "{'a': 1, 'b': 2}{'x': 1}1xyxya|b");
  // Local time: the date part is the same in every time zone from UTC-10 to UTC+13.
  EXPECT_EQ(render("{{ strftime_now('%Y-%m-%d %a %b') }}", Vars()), "2024-07-26 Fri Jul");
}

}  // namespace
}  // namespace pagoda::jinja
