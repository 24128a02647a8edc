// The regex front end: exact accept/reject lists through the matcher, the GBNF it
// writes, and errors naming the construct and its offset.
#include "grammar/regex_to_gbnf.h"

#include <gtest/gtest.h>

#include "grammar/compiled_grammar.h"
#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "grammar/vocab_index.h"

namespace pagoda::grammar {
namespace {

struct RegexCase {
  const char* pattern;
  std::vector<std::string> accepted;
  std::vector<std::string> rejected;
};

const std::vector<RegexCase> kCases = {
    {"abc", {"abc"}, {"", "ab", "abcd", "abd", "ABC"}},
    {"^abc$", {"abc"}, {"ab", "abcc"}},
    {"a|bc|", {"a", "bc", ""}, {"b", "abc"}},
    {"a.c", {"abc", "a c", "a\xC3\xA9" "c", "a\"c"}, {"ac", "a\nc", "a\rc", "abbc"}},
    {"[a-c]+", {"a", "abcabc", "cc"}, {"", "d", "abd", "A"}},
    {"[^a-c]", {"d", "Z", "\xE6\x97\xA5", "\n"}, {"a", "c", "", "dd"}},
    {"[-a]", {"-", "a"}, {"b"}},
    {"[a-]", {"-", "a"}, {"b"}},
    {"[]a]", {"]", "a"}, {"b"}},
    {"[\\]\\\\]", {"]", "\\"}, {"a"}},
    {"\\d{3}", {"123", "000"}, {"12", "1234", "12a"}},
    {"\\D\\W\\S", {"a!b", "x-y"}, {"1!b", "aab", "a! "}},
    {"\\w+@\\s?", {"a_1@", "Z@ ", "x@\t"}, {"@", "a-b@", "a@  "}},
    {"[\\d\\s_]*", {"", "1 _\t9"}, {"a", "1-"}},
    {"[^\\d]x", {"ax", " x"}, {"1x", "x"}},
    {"(ab)*c", {"c", "abc", "ababc"}, {"ac", "abab", "abac"}},
    {"(?:ab|cd){2}", {"abab", "abcd", "cdcd"}, {"ab", "ababab", "ac"}},
    {"(?<year>\\d{4})-(?P<month>\\d\\d)", {"2024-05"}, {"2024-5", "24-05"}},
    {"x{2,}", {"xx", "xxxxx"}, {"x", ""}},
    {"x{,2}y", {"y", "xy", "xxy"}, {"xxxy"}},
    {"x{1,3}?y+?z*?", {"xy", "xxxyyzz"}, {"y", "xxxxy"}},
    {"a?b+c*", {"b", "abbb", "abcc", "bc"}, {"a", "ac", "abab"}},
    {"colou?r", {"color", "colour"}, {"colouur", "colr"}},
    {"a{3}", {"aaa"}, {"aa", "aaaa"}},
    {"a{0}b", {"b"}, {"ab"}},
    {"a{x", {"a{x"}, {"ax"}},
    {"\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\/", {".*+?()[]{}|^$/"}, {""}},
    {"\\x41\\u00e9\\u{1F600}\\t\\n", {"A\xC3\xA9\xF0\x9F\x98\x80\t\n"}, {"A\xC3\xA9"}},
    {"[\\x00-\\x1f]", {std::string(1, '\0'), "\x1f"}, {" "}},
    {"\xE6\x97\xA5[\xCE\xB1-\xCF\x89]", {"\xE6\x97\xA5\xCE\xB2"}, {"\xE6\x97\xA5" "a"}},
    {"\"quoted\"", {"\"quoted\""}, {"quoted"}},
    {"(a|b)(c|d)?", {"a", "bd", "ac"}, {"ab", "cd"}},
    {"((a|b)+c)?d", {"d", "abcd", "bacd"}, {"cd", "abd"}},
    // Repetitions of what can match the empty string (written without it in the grammar).
    {"x()+", {"x"}, {"xx", ""}},
    {"(a*)*b", {"b", "ab", "aaab"}, {"a", "ba"}},
    {"(a?b?){2,3}", {"", "a", "ab", "abab", "aaa", "bab", "ababab"}, {"abababa", "aaaa", "c"}},
    {"(|a)+", {"", "a", "aaa"}, {"b"}},
    {"(a{0})*x", {"x"}, {"ax"}},
    {"(?:a|b?c?)+d", {"d", "ad", "bcbd", "ccd"}, {"", "abd d"}},
};

std::shared_ptr<const CompiledGrammar> compile_pattern(const std::string& pattern) {
  auto text = regex_to_gbnf(pattern);
  EXPECT_TRUE(text.ok()) << pattern << ": " << text.status().message();
  if (!text.ok()) return nullptr;
  auto grammar = parse_gbnf(*text);
  EXPECT_TRUE(grammar.ok()) << grammar.status().message() << "\n" << *text;
  if (!grammar.ok()) return nullptr;
  auto compiled = compile_grammar(*grammar, VocabIndex::create({}, {}));
  EXPECT_TRUE(compiled.ok()) << compiled.status().message();
  return compiled.ok() ? *compiled : nullptr;
}

bool matches(const std::shared_ptr<const CompiledGrammar>& grammar, std::string_view text) {
  GrammarMatcher matcher(grammar);
  return matcher.accept_bytes(text) && matcher.can_terminate();
}

TEST(RegexToGbnf, AcceptsExactlyTheMatches) {
  for (const RegexCase& c : kCases) {
    auto grammar = compile_pattern(c.pattern);
    ASSERT_NE(grammar, nullptr) << c.pattern;
    for (const std::string& text : c.accepted) EXPECT_TRUE(matches(grammar, text)) << c.pattern << " rejects " << text;
    for (const std::string& text : c.rejected) EXPECT_FALSE(matches(grammar, text)) << c.pattern << " accepts " << text;
  }
}

TEST(RegexToGbnf, WritesCompactGbnf) {
  EXPECT_EQ(*regex_to_gbnf("^ab+(c|d)?$"), "root ::= \"a\" \"b\"+ (\"c\" | \"d\")?\n");
  EXPECT_EQ(*regex_to_gbnf("[a-z_]{2,5}"), "root ::= [_a-z]{2,5}\n");
  EXPECT_EQ(*regex_to_gbnf("[^\"]*"), "root ::= [^\"]*\n");
  EXPECT_EQ(*regex_to_gbnf("(ab)*", {.root_rule = "pat"}), "pat ::= (\"ab\")*\n");
  EXPECT_EQ(*regex_to_gbnf_expression("a\\]\\-[\\-\\]^]"), "\"a]-\" [\\-\\]\\^]");
}

TEST(RegexToGbnf, JsonStringContentEscapes) {
  const RegexOptions json{.json_string_content = true};
  EXPECT_EQ(*regex_to_gbnf_expression("a\"b\\\\", json), "\"a\\\\\\\"b\\\\\\\\\"");
  EXPECT_EQ(*regex_to_gbnf_expression("\\n", json), "\"\\\\n\"");
  // A class with a quote, a backslash and controls: the plain part, then the escapes.
  EXPECT_EQ(*regex_to_gbnf_expression("[\"\\\\\\x01a]", json),
            "([a] | \"\\\\\\\"\" | \"\\\\\\\\\" | \"\\\\u000\" [1])");
  auto grammar = parse_gbnf("root ::= \"\\\"\" " + *regex_to_gbnf_expression("[^a]+", json) + " \"\\\"\"\n");
  ASSERT_TRUE(grammar.ok()) << grammar.status().message();
  auto compiled = compile_grammar(*grammar, VocabIndex::create({}, {}));
  ASSERT_TRUE(compiled.ok());
  EXPECT_TRUE(matches(*compiled, R"("b\"\\\n\t\u0001\u001F\u001f")"));
  EXPECT_FALSE(matches(*compiled, "\"\n\""));      // a raw control character
  EXPECT_FALSE(matches(*compiled, R"("\u0061")"));  // 'a', though escaped
  EXPECT_FALSE(matches(*compiled, R"("a")"));
}

TEST(RegexToGbnf, ErrorsNameTheConstructAndOffset) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"(a)\\1", "regex: backreference '\\1' (unsupported) at offset 3 in '(a)\\1'"},
      {"(?<n>a)\\k<n>", "regex: backreference '\\k' (unsupported) at offset 7 in '(?<n>a)\\k<n>'"},
      {"a(?=b)", "regex: lookahead '(?=' (unsupported) at offset 1 in 'a(?=b)'"},
      {"a(?!b)", "regex: lookahead '(?!' (unsupported) at offset 1 in 'a(?!b)'"},
      {"(?<=a)b", "regex: lookbehind '(?<=' (unsupported) at offset 0 in '(?<=a)b'"},
      {"(?<!a)b", "regex: lookbehind '(?<!' (unsupported) at offset 0 in '(?<!a)b'"},
      {"\\bword", "regex: word boundary '\\b' (unsupported) at offset 0 in '\\bword'"},
      {"(?i)abc", "regex: group flag '(?i' (unsupported) at offset 0 in '(?i)abc'"},
      {"\\p{L}", "regex: Unicode property '\\p' (unsupported) at offset 0 in '\\p{L}'"},
      {"a^b", "regex: anchor '^' after the start of the pattern (unsupported) at offset 1 in 'a^b'"},
      {"a$b", "regex: anchor '$' before the end of the pattern (unsupported) at offset 1 in 'a$b'"},
      {"(a$)", "regex: anchor '$' inside a group or alternative (unsupported) at offset 2 in '(a$)'"},
      {"(ab", "regex: unmatched '(' at offset 0 in '(ab'"},
      {"ab)", "regex: unmatched ')' at offset 2 in 'ab)'"},
      {"[ab", "regex: unterminated character class '[' at offset 0 in '[ab'"},
      {"[z-a]", "regex: range out of order in class at offset 1 in '[z-a]'"},
      {"[\\d-z]", "regex: class escape as a range end at offset 1 in '[\\d-z]'"},
      {"*a", "regex: nothing to repeat before '*' at offset 0 in '*a'"},
      {"a**", "regex: nothing to repeat before '*' at offset 2 in 'a**'"},
      {"a{3,2}", "regex: repetition {m,n} with n < m at offset 1 in 'a{3,2}'"},
      {"a{20000}", "regex: repetition count above 10000 at offset 1 in 'a{20000}'"},
      {"\\", "regex: trailing backslash at offset 0 in '\\'"},
      {"\\xZZ", "regex: bad hexadecimal escape at offset 0 in '\\xZZ'"},
      {"\\q", "regex: escape '\\q' (unsupported) at offset 0 in '\\q'"},
      {"[[:alpha:]]", "regex: POSIX class '[:' (unsupported) at offset 1 in '[[:alpha:]]'"},
      {"(a{1000}){1000}",
       "regex: pattern larger than 100000 characters once its repetitions are written out at offset 0 in "
       "'(a{1000}){1000}'"},
      {std::string(300, '(') + std::string(300, ')'),
       "regex: groups nested deeper than 200 at offset 200 in '" + std::string(300, '(') + std::string(300, ')') + "'"},
  };
  for (const auto& [pattern, message] : cases) {
    auto text = regex_to_gbnf(pattern);
    ASSERT_FALSE(text.ok()) << pattern;
    EXPECT_EQ(text.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(text.status().message(), message);
  }
}

}  // namespace
}  // namespace pagoda::grammar
