#pragma once
// JSON Schema string formats as GBNF: the content between the quotes.

#include <optional>
#include <string>
#include <string_view>

namespace pagoda::grammar {

// date (RFC 3339 full-date), time (full-time: HH:MM:SS, optional fraction, then 'Z' or an
// offset), date-time (date 'T' time), uuid (8-4-4-4-12 hex digits, either case), email
// (a dot-atom local part '@' a domain of two or more labels). None for other formats.
std::optional<std::string> string_format_gbnf(std::string_view format);

}  // namespace pagoda::grammar
