#pragma once
// GBNF, the grammar text format of llama.cpp:
//
//   root   ::= object                      # a comment
//   object ::= "{" ws ( member ( "," ws member )* )? "}"
//   member ::= string ws ":" ws value
//   string ::= "\"" ( [^"\\] | "\\" ["\\/bfnrt] )* "\""
//   digits ::= [0-9]{1,3} | "x"+ | . ?
//
// Rules `name ::= alternatives` (names: letters, digits, '-'), alternatives separated
// by `|`, string literals "..." with the escapes \n \t \r \\ \" \[ \] \- \^ \xHH \uHHHH
// \UHHHHHHHH, character classes [a-z0-9_] and negated ones [^"\\], `.` (any character),
// groups ( ), and the repetitions * + ? {m} {m,} {m,n}. A newline ends a rule except
// inside parentheses, after `|`, or when the next line starts with `|`.
//
// Errors say "line L, column C: what was wrong" (1-based, columns count bytes): an
// undefined rule (at its first use), a missing root, an unterminated literal or class
// (at its opening character), a bad escape, a bad repetition range, a rule defined
// twice, left recursion (at the rule's definition).

#include <string>
#include <string_view>

#include "core/status.h"
#include "grammar/grammar.h"

namespace pagoda::grammar {

Expected<Grammar> parse_gbnf(std::string_view text, std::string_view root_rule = "root");

// GBNF text for `grammar`, one rule a line in rule order (helper rules included);
// parse_gbnf of it gives back the same rules and alternatives (the root rule by the
// name it has in `grammar`).
std::string to_gbnf(const Grammar& grammar);

}  // namespace pagoda::grammar
