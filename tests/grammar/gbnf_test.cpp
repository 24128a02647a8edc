#include "grammar/gbnf.h"

#include <gtest/gtest.h>

#include "grammar_test_util.h"

namespace pagoda::grammar {
namespace {

using testing::compile_gbnf;
using testing::matches;

Grammar parse_ok(std::string_view text, std::string_view root = "root") {
  auto g = parse_gbnf(text, root);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? std::move(g).value() : Grammar{};
}

std::string parse_error(std::string_view text, std::string_view root = "root") {
  auto g = parse_gbnf(text, root);
  EXPECT_FALSE(g.ok());
  return g.ok() ? std::string("(parsed)") : g.status().message();
}

CharRange cr(uint32_t a, uint32_t b) { return {a, b}; }

TEST(Gbnf, RulesAlternativesAndReferences) {
  Grammar g = parse_ok("root ::= a | b \"x\"\na ::= \"a\"\nb ::= [b]\n");
  ASSERT_EQ(g.n_rules(), 3);
  EXPECT_EQ(g.rule(g.root()).name, "root");
  const Rule& root = g.rule(g.root());
  ASSERT_EQ(root.alternatives.size(), 2u);
  ASSERT_EQ(root.alternatives[0].size(), 1u);
  EXPECT_EQ(root.alternatives[0][0], Element::rule_ref(g.find_rule("a")));
  ASSERT_EQ(root.alternatives[1].size(), 2u);
  EXPECT_EQ(root.alternatives[1][0], Element::rule_ref(g.find_rule("b")));
  EXPECT_EQ(root.alternatives[1][1], Element::literal('x'));
  EXPECT_EQ(g.rule(g.find_rule("b")).alternatives[0][0], Element::char_class({cr('b', 'b')}));
}

TEST(Gbnf, LiteralEscapes) {
  Grammar g = parse_ok(R"(root ::= "a\n\t\r\\\"\x41\u00e9\U0001F600\[\]é")");
  const Sequence& s = g.rule(g.root()).alternatives[0];
  const std::vector<uint32_t> want = {'a', '\n', '\t', '\r', '\\', '"', 'A', 0xE9, 0x1F600, '[', ']', 0xE9};
  ASSERT_EQ(s.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(s[i], Element::literal(want[i])) << i;
  // The empty literal is the empty sequence.
  Grammar e = parse_ok(R"(root ::= "" | "a")");
  EXPECT_TRUE(e.rule(e.root()).alternatives[0].empty());
}

TEST(Gbnf, CharacterClassesAndDot) {
  Grammar g = parse_ok(R"(root ::= [a-z0-9_] [^"\\] . [\x00-\x1F\]] [-a] [])");
  const Sequence& s = g.rule(g.root()).alternatives[0];
  ASSERT_EQ(s.size(), 6u);
  EXPECT_EQ(s[0], Element::char_class({cr('a', 'z'), cr('0', '9'), cr('_', '_')}));
  EXPECT_EQ(s[1], Element::char_class({cr('"', '"'), cr('\\', '\\')}, true));
  EXPECT_EQ(s[2], Element::any_char());
  EXPECT_EQ(s[3], Element::char_class({cr(0, 0x1F), cr(']', ']')}));
  EXPECT_EQ(s[4], Element::char_class({cr('-', '-'), cr('a', 'a')}));
  EXPECT_EQ(s[5], Element::char_class({}));
  auto c = compile_gbnf(R"(root ::= [^"\\] . [a-c]+)");
  EXPECT_TRUE(matches(c, "x\nabc"));
  EXPECT_TRUE(matches(c, "é😀a"));
  EXPECT_FALSE(matches(c, "\"xa"));
  EXPECT_FALSE(matches(c, "xxd"));
}

TEST(Gbnf, RepetitionOperators) {
  auto g = compile_gbnf(R"(
root ::= "a"* "b"+ "c"? ("d" | "e"){2} "f"{1,} ("g" "h"){0,2} "i"{0}
)");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(matches(g, "bdef"));
  EXPECT_TRUE(matches(g, "aabbbcedffghgh"));
  EXPECT_FALSE(matches(g, "def"));          // b+ needs one
  EXPECT_FALSE(matches(g, "bdf"));          // {2}
  EXPECT_FALSE(matches(g, "bdddf"));        // {2}
  EXPECT_FALSE(matches(g, "bde"));          // f{1,}
  EXPECT_FALSE(matches(g, "bdefghghgh"));   // {0,2}
  EXPECT_FALSE(matches(g, "bdefi"));        // {0}
  auto r = compile_gbnf("root ::= [0-9]{2,4}");
  EXPECT_FALSE(matches(r, "1"));
  EXPECT_TRUE(matches(r, "12"));
  EXPECT_TRUE(matches(r, "1234"));
  EXPECT_FALSE(matches(r, "12345"));
  auto s = compile_gbnf("root ::= \"ab\"+ { 1 , 2 }");  // stacked: (ab)+ one or two times
  EXPECT_TRUE(matches(s, "ababab"));
  EXPECT_FALSE(matches(s, "aba"));
}

TEST(Gbnf, CommentsAndMultiLineRules) {
  auto g = compile_gbnf(R"(# a comment line
root ::= ( # inside a group newlines continue
    "a"
  | "b"   # comment after an alternative
  ) tail |
  "c"
  | "d" other
tail ::= "t"   # trailing comment
other::="o"
)");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(matches(g, "at"));
  EXPECT_TRUE(matches(g, "bt"));
  EXPECT_TRUE(matches(g, "c"));
  EXPECT_TRUE(matches(g, "do"));
  EXPECT_FALSE(matches(g, "a"));
  EXPECT_EQ(g->grammar().n_rules(), 4);  // root, tail, other and the group's helper
}

TEST(Gbnf, RuleNamesWithDigitsAndDashes) {
  auto g = compile_gbnf("root ::= my-rule-2\nmy-rule-2 ::= \"x\" R9\nR9 ::= \"9\"\n");
  EXPECT_TRUE(matches(g, "x9"));
  // A user rule named like a helper that was made first keeps its name.
  Grammar p = parse_ok("root ::= (\"a\" | \"b\")* root-1\nroot-1 ::= \"z\"\n");
  const int32_t r1 = p.find_rule("root-1");
  ASSERT_GE(r1, 0);
  EXPECT_EQ(p.rule(r1).alternatives[0][0], Element::literal('z'));
}

TEST(Gbnf, WindowsLineEndings) {
  auto g = compile_gbnf("root ::= a\r\n  | \"b\" # note\r\na ::= \"a\"\r\n");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(matches(g, "a"));
  EXPECT_TRUE(matches(g, "b"));
  EXPECT_EQ(parse_error(""), "line 1, column 1: no root rule 'root' (define it with 'root ::= ...')");
}

TEST(Gbnf, OtherRootName) {
  auto g = parse_gbnf("start ::= \"s\"\n", "start");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->rule(g->root()).name, "start");
}

TEST(Gbnf, Errors) {
  EXPECT_EQ(parse_error("root ::= a\n"), "line 1, column 10: undefined rule 'a'");
  EXPECT_EQ(parse_error("foo ::= \"x\"\n"), "line 2, column 1: no root rule 'root' (define it with 'root ::= ...')");
  EXPECT_EQ(parse_error("root ::= \"x\" | \"abc\n"), "line 1, column 16: unterminated string literal (no closing '\"')");
  EXPECT_EQ(parse_error("root ::= [a-z\n"), "line 1, column 10: unterminated character class (no closing ']')");
  EXPECT_EQ(parse_error("root ::= \"a\"{3,2}"),
            "line 1, column 13: bad repetition range {3,2}: the maximum is less than the minimum");
  EXPECT_EQ(parse_error("root ::= \"a\"{x}"), "line 1, column 14: expected a number after '{'");
  EXPECT_EQ(parse_error("root ::= \"a\"{2"), "line 1, column 15: expected '}' to close the repetition");
  EXPECT_EQ(parse_error("root ::= \"a\"{99999}"),
            "line 1, column 13: bad repetition range {99999}: counts above 10000 are not supported");
  EXPECT_EQ(parse_error("root ::= * \"a\""), "line 1, column 10: '*' repeats nothing (no element before it)");
  EXPECT_EQ(parse_error("root ::= \"\\q\""), "line 1, column 11: unknown escape '\\q'");
  EXPECT_EQ(parse_error("root ::= \"\\x4\""), "line 1, column 11: expected 2 hex digits after '\\x'");
  EXPECT_EQ(parse_error("root ::= [z-a]"), "line 1, column 11: bad character range (its end comes before its start)");
  EXPECT_EQ(parse_error("root ::= \"a\"\nroot ::= \"b\"\n"),
            "line 2, column 1: rule 'root' is defined twice (first at line 1, column 1)");
  EXPECT_EQ(parse_error("root = \"a\""), "line 1, column 6: expected '::=' after rule name 'root'");
  EXPECT_EQ(parse_error("::= \"a\""), "line 1, column 1: expected a rule name, found ':'");
  EXPECT_EQ(parse_error("root ::= (\"a\" | \"b\""), "line 1, column 10: unclosed '('");
  EXPECT_EQ(parse_error("root ::= \"a\" )"), "line 1, column 14: unexpected ')' in rule 'root'");
  EXPECT_EQ(parse_error("root ::= x\nx ::= x \"a\" | \"b\"\n"),
            "line 2, column 1: left recursion: 'x' -> 'x' (a rule reaches itself before matching a character; "
            "rewrite it right recursive, e.g. x ::= y x | y)");
  EXPECT_EQ(parse_error("root ::= a \"x\"\na ::= b\nb ::= \"\" | c a\nc ::= \"\"?\n"),
            "line 2, column 1: left recursion: 'a' -> 'b' -> 'a' (a rule reaches itself before matching a "
            "character; rewrite it right recursive, e.g. x ::= y x | y)");
  EXPECT_EQ(parse_error("root ::= x\n\nx ::= \"b\" | (\"a\"?)*"),
            "line 3, column 19: left recursion: 'x-2' -> 'x-2' (a rule reaches itself before matching a "
            "character; rewrite it right recursive, e.g. x ::= y x | y); here a repetition repeats something that "
            "can match the empty string");
  EXPECT_EQ(parse_error("root ::= \"a\" root\n"),
            "line 1, column 1: root rule 'root' matches no finite string (its recursion never ends)");
}

TEST(Gbnf, ToGbnfRoundTrip) {
  const char* text = R"(
root ::= ws ( obj | "lit\"\\\n\t" | [^a-z\]\-] | . )* end? [\x00-\x1F]{2,3} "é😀" [α-ω]
obj ::= "{" ws "}" | "o"
ws ::= [ \t\n]*
end ::= "^" | "[x]"
)";
  Grammar a = parse_ok(text);
  const std::string printed = to_gbnf(a);
  Grammar b = parse_ok(printed);
  ASSERT_EQ(a.n_rules(), b.n_rules()) << printed;
  for (int32_t r = 0; r < a.n_rules(); ++r) {
    const Rule& ra = a.rule(r);
    const int32_t rb = b.find_rule(ra.name);
    ASSERT_GE(rb, 0) << ra.name << "\n" << printed;
    ASSERT_EQ(ra.alternatives.size(), b.rule(rb).alternatives.size()) << ra.name;
    for (size_t i = 0; i < ra.alternatives.size(); ++i) {
      const Sequence& sa = ra.alternatives[i];
      const Sequence& sb = b.rule(rb).alternatives[i];
      ASSERT_EQ(sa.size(), sb.size()) << ra.name << " alternative " << i << "\n" << printed;
      for (size_t k = 0; k < sa.size(); ++k) {
        if (sa[k].is_rule_ref()) {
          ASSERT_TRUE(sb[k].is_rule_ref());
          EXPECT_EQ(a.rule(sa[k].rule).name, b.rule(sb[k].rule).name);
        } else {
          EXPECT_EQ(sa[k], sb[k]) << ra.name << " alternative " << i << " element " << k << "\n" << printed;
        }
      }
    }
  }
  EXPECT_EQ(to_gbnf(b), printed);
  EXPECT_EQ(to_gbnf(parse_ok("root ::= \"ab\" [^x] | \"\" | .\n")), "root ::= \"ab\" [^x] | \"\" | .\n");
}

}  // namespace
}  // namespace pagoda::grammar
