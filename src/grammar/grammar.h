#pragma once
// The grammar IR of constrained decoding: named rules, each a list of alternatives,
// each alternative a sequence of elements. An element is a character class (ranges of
// Unicode code points, possibly negated; a literal character is a one-code-point
// class) or a reference to a rule. Repetition (`*`, `+`, `?`, `{m,n}`) is expanded into
// helper rules when the grammar is built (Grammar::append_repetition), so the matcher
// (compiled_grammar.h, matcher.h) sees only classes and references: a top-down
// pushdown automaton whose positions are the elements of the alternatives.
//
// Writing grammars that match fast. The compiled grammar precomputes, for every
// character-class position, which tokens are accepted or rejected without looking
// below the rule instance that holds the position; only tokens whose bytes run past
// the end of that rule are checked at run time. So keep a run of characters inside one
// rule: `string ::= "\"" ( [^"\\] | "\\" escape )* "\""` is good (the repetition
// becomes one right-recursive helper rule holding both alternatives), while a
// separate `char ::= [^"\\] | ...` rule referenced as `char*` ends a rule after every
// character and leaves many more tokens to the run-time check.
//
// The matcher cannot handle left recursion (a rule that can reach itself before
// consuming a character); validate() rejects it.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace pagoda::grammar {

constexpr uint32_t kMaxCodepoint = 0x10FFFF;

// An inclusive range of code points.
struct CharRange {
  uint32_t first = 0;
  uint32_t last = 0;
  friend bool operator==(const CharRange&, const CharRange&) = default;
};

struct Element {
  enum class Kind : uint8_t { kCharClass, kRuleRef };

  Kind kind = Kind::kCharClass;
  // kCharClass: the code points in `ranges`, or, when negated, every code point not in
  // them (`.` is a negated class with no ranges). Ranges may overlap and come in any
  // order; first <= last <= kMaxCodepoint.
  bool negated = false;
  std::vector<CharRange> ranges;
  // kRuleRef: the index of the rule in Grammar::rules().
  int32_t rule = -1;

  static Element literal(uint32_t codepoint);
  static Element char_class(std::vector<CharRange> ranges, bool negated = false);
  static Element any_char();  // `.`
  static Element rule_ref(int32_t rule);

  bool is_char_class() const { return kind == Kind::kCharClass; }
  bool is_rule_ref() const { return kind == Kind::kRuleRef; }
  // One code point, not negated (printed inside a "..." literal by to_gbnf).
  bool is_literal() const;
  bool is_any_char() const { return is_char_class() && negated && ranges.empty(); }
  // kCharClass only.
  bool matches(uint32_t codepoint) const;

  friend bool operator==(const Element&, const Element&) = default;
};

// One alternative: its elements in order. Empty: the empty string.
using Sequence = std::vector<Element>;

struct Rule {
  std::string name;
  std::vector<Sequence> alternatives;  // at least one in a valid grammar
};

// `max` of Grammar::append_repetition: no upper bound.
constexpr int32_t kUnbounded = -1;

class Grammar {
 public:
  // Rule names are GBNF names: ASCII letters, digits and '-', not empty.
  static bool is_valid_rule_name(std::string_view name);
  // `name` with every other character replaced by '-' ("rule" when empty).
  static std::string sanitize_rule_name(std::string_view name);

  // A new rule without alternatives; -1 when the name is invalid or already taken.
  int32_t add_rule(std::string name);
  // A new rule named `base` (sanitized), or base-1, base-2, ... whichever is free.
  int32_t add_helper_rule(std::string_view base);
  std::string unique_rule_name(std::string_view base) const;
  int32_t find_rule(std::string_view name) const;  // -1 when there is none
  // false when the name is invalid or taken by another rule.
  bool rename_rule(int32_t rule, std::string name);
  void add_alternative(int32_t rule, Sequence sequence);

  // Appends to `out` the elements that match `body` (a choice among the sequences)
  // repeated between min and max times (max == kUnbounded: no bound), adding helper
  // rules named after `base_name` as needed:
  //   X* -> h where h ::= X h | (empty)           (right recursive: no left recursion)
  //   X+ -> X h   with h as for X*                (X inline when it is one sequence)
  //   X? -> h where h ::= X |
  //   X{m,n} -> X ... X (m times) then h(n-m) where h(k) ::= X h(k-1) | ; h(1) ::= X |
  // A body with several sequences becomes its own helper rule unless the helper can
  // hold its alternatives directly (X*, X?). Errors: min < 0, max < min, or more than
  // kMaxRepetition.
  static constexpr int32_t kMaxRepetition = 10000;
  Status append_repetition(Sequence& out, std::string_view base_name, std::vector<Sequence> body, int32_t min,
                           int32_t max);

  // The elements matching exactly `text` (UTF-8; an invalid byte becomes U+FFFD).
  static Sequence literal_sequence(std::string_view text);

  int32_t n_rules() const { return static_cast<int32_t>(rules_.size()); }
  const std::vector<Rule>& rules() const { return rules_; }
  Rule& rule(int32_t id) { return rules_[id]; }
  const Rule& rule(int32_t id) const { return rules_[id]; }

  int32_t root() const { return root_; }
  void set_root(int32_t rule) { root_ = rule; }

  // Checks that the root is set, every reference names a rule, every rule has an
  // alternative, every class range is in order and at most kMaxCodepoint, no rule is
  // left recursive (directly, through other rules, or after rules that can match the
  // empty string), and the root can match some string. The message names the rules.
  Status validate() const;

 private:
  std::vector<Rule> rules_;
  std::map<std::string, int32_t, std::less<>> by_name_;
  // unique_rule_name: per base name, the suffix to try first (the ones below are taken).
  mutable std::map<std::string, int64_t, std::less<>> next_suffix_;
  int32_t root_ = -1;
};

}  // namespace pagoda::grammar
