#pragma once
// The regex front end: a regular expression to GBNF that matches the same strings.
//
// Supported: literals (UTF-8), escapes (\n \r \t \f \v \0 \xHH \uHHHH \u{H..}, an escaped
// punctuation mark), `.` (any code point but \n and \r), classes [...] and [^...] with
// ranges, \d \w \s \D \W \S (ASCII meanings) inside and outside classes, groups ( ),
// (?: ), named groups (?<name> ) and (?P<name> ) (matched like any group), alternation,
// the quantifiers * + ? {m} {m,} {m,n} {,n} (lazy forms match the same strings and are
// generated like greedy ones), `^` at the very start and `$` at the very end.
// Refused, with the construct and its byte offset: backreferences, lookahead and
// lookbehind, word boundaries, inline flags, Unicode properties, anchors elsewhere.
//
// Anchoring: a generated string always matches the whole pattern, with or without ^ and
// $. JSON Schema's `pattern` is a search (unanchored) in validation, but a generator
// that let the model write text around the match would not constrain it at all: we,
// like most generators, read it as anchored.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace pagoda::grammar {

struct RegexOptions {
  std::string root_rule = "root";  // regex_to_gbnf's one rule
  // Emit the characters as they are written inside a JSON string (for JSON Schema's
  // `pattern`): '"' as \", '\' as \\, controls as \n \t ... or \u00XX. The pattern
  // speaks of the decoded string; the grammar then matches its JSON text (without the
  // quotes). Only these canonical escapes are accepted.
  bool json_string_content = false;
};

// The grammar "<root_rule> ::= <expression>".
Expected<std::string> regex_to_gbnf(std::string_view pattern, const RegexOptions& options = {});

// Just the GBNF expression (one line, no rule name), to embed in a rule of a larger
// grammar: it uses no rule of its own.
Expected<std::string> regex_to_gbnf_expression(std::string_view pattern,
                                               const RegexOptions& options = {});

// `atom` (a GBNF literal, class, rule name or parenthesized group) repeated between
// min and max times (max empty: no limit), in the fewest characters: "x?", "x+",
// "x{2,5}", and the empty literal for max 0.
std::string gbnf_repeat(const std::string& atom, size_t min, std::optional<size_t> max);

}  // namespace pagoda::grammar
