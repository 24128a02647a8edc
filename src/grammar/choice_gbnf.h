#pragma once
// The choice front end: one of a list of literal strings (vLLM's guided_choice), and the
// literal quoting the other front ends share.

#include <span>
#include <string>
#include <string_view>

namespace pagoda::grammar {

// The grammar "<root_rule> ::= "a" | "b" | ..." of the choices, each matched byte for
// byte (UTF-8 as written, quotes, backslashes and controls escaped; an invalid UTF-8
// byte becomes U+FFFD). With no choices the rule matches nothing (a class that excludes
// every code point).
std::string choice_gbnf(std::span<const std::string> choices, std::string_view root_rule = "root");

// `text` (UTF-8) as one GBNF literal, "..." with GBNF's escapes.
std::string gbnf_literal(std::string_view text);

}  // namespace pagoda::grammar
