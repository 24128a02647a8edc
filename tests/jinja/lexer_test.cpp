// Lexing: tokens, literals and jinja2's whitespace control as HF configures it.
#include "jinja/lexer.h"

#include <gtest/gtest.h>

#include "jinja/test_util.h"

namespace pagoda::jinja {
namespace {

TEST(JinjaLexer, TokenKindsAndLines) {
  auto tokens = tokenize("ab\n{{ x.y + 1.5 }}{% if 'q' %}\n{% endif %}");
  ASSERT_TRUE(tokens.ok()) << tokens.status().message();
  std::vector<TokenKind> kinds;
  for (const Token& t : *tokens) kinds.push_back(t.kind);
  const std::vector<TokenKind> expected = {
      TokenKind::kText,       TokenKind::kVariableBegin, TokenKind::kName,
      TokenKind::kOperator,   TokenKind::kName,          TokenKind::kOperator,
      TokenKind::kFloat,      TokenKind::kVariableEnd,   TokenKind::kBlockBegin,
      TokenKind::kName,       TokenKind::kString,        TokenKind::kBlockEnd,
      TokenKind::kBlockBegin, TokenKind::kName,          TokenKind::kBlockEnd,
      TokenKind::kEnd};
  EXPECT_EQ(kinds, expected);
  EXPECT_EQ((*tokens)[0].text, "ab\n");
  EXPECT_EQ((*tokens)[1].line, 2);
  EXPECT_DOUBLE_EQ((*tokens)[6].number, 1.5);
  EXPECT_EQ((*tokens)[10].text, "q");
  EXPECT_EQ((*tokens)[12].line, 3);  // trim_blocks ate the newline after %}, not the line count
}

TEST(JinjaLexer, NumberLiterals) {
  EXPECT_EQ(
      render("{{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1_000 }} {{ 1e3 }} {{ 2.5E-2 }} {{ 1_0.0_1 }}"),
      "31 15 5 1000 1000.0 0.025 10.01");
  EXPECT_EQ(render("{{ 99999999999999999999 }}"),
            "ERROR: template syntax error, line 1: integer literal 99999999999999999999 does not "
            "fit in 64 bits");
}

TEST(JinjaLexer, StringEscapesAreDecodedAsPython) {
  EXPECT_EQ(render(R"({{ 'a\tb\\n\x41\u00e9\U0001F600' }}|{{ "a\'b" }}|{{ '\d' }}|{{ "\101" }})"),
            "a\tb\\nA\xC3\xA9\xF0\x9F\x98\x80|a'b|\\d|A");
  EXPECT_EQ(render("{{ 'adjacent' \"strings\" }}"), "adjacentstrings");
}

TEST(JinjaLexer, TrimAndLstripBlocks) {
  EXPECT_EQ(
      render("a\n  {% if true %}\n    b\n  {% endif %}\nc {# note #}\n   {#- trimmed -#}   d"),
      "a\n    b\nc d");
  EXPECT_EQ(render("{% for i in [1, 2] -%}\n  [{{ i }}]\n{%- endfor %}"), "[1][2]");
}

TEST(JinjaLexer, ExplicitWhitespaceControl) {
  EXPECT_EQ(render("x {{- ' y ' -}} z {{+ 'w' }}"), "x y z w");
  EXPECT_EQ(render("  {%+ if true %}kept{% endif +%}\nnext"), "  kept\nnext");
}

TEST(JinjaLexer, RawBlocks) {
  EXPECT_EQ(render("line1\n{% raw %}  {{ raw }} {% endraw %}\nline2"), "line1\n  {{ raw }} line2");
  EXPECT_EQ(render("{%- raw -%}  {{ x }}  {%- endraw %}"), "{{ x }}");
}

TEST(JinjaLexer, NewlinesAreNormalizedAndOneTrailingNewlineDropped) {
  EXPECT_EQ(render("text with trailing newline\n"), "text with trailing newline");
  EXPECT_EQ(render("a\r\nb\r{{ \"c\r\nd\" }}\n"), "a\nb\nc\nd");
}

TEST(JinjaLexer, ErrorsNameTheLine) {
  EXPECT_EQ(render("a\nb\n{{ x ! y }}"),
            "ERROR: template syntax error, line 3: unexpected char '!'");
  EXPECT_EQ(render("{# never closed"),
            "ERROR: template syntax error, line 1: missing end of comment tag");
  EXPECT_EQ(render("\n{% raw %}never closed"),
            "ERROR: template syntax error, line 2: missing end of raw directive");
  EXPECT_EQ(render("{{ 'open }}"),
            "ERROR: template syntax error, line 1: unterminated string literal");
  EXPECT_EQ(render("{{ (1 }}"),
            "ERROR: template syntax error, line 1: unexpected '}', expected ')'");
  EXPECT_EQ(render("{{ x"),
            "ERROR: template syntax error, line 1: unexpected end of template: missing '}}'");
  EXPECT_EQ(render("{{ 1) }}"), "ERROR: template syntax error, line 1: unexpected ')'");
}

}  // namespace
}  // namespace pagoda::jinja
