#pragma once
// Python's str semantics over UTF-8 text, for the template interpreter: characters are
// code points, whitespace is str.isspace()'s, case mapping is str.upper()/lower()'s
// (full Unicode mappings, "ß".upper() == "SS"), and numbers and strings print as
// Python's repr() prints them. Invalid UTF-8 bytes (which Python strings cannot hold)
// count as one character each and are kept as they are.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::jinja {

// Byte offset where each code point starts, plus text.size() at the end: for a text of
// n characters, n + 1 offsets.
std::vector<size_t> codepoint_offsets(std::string_view text);
size_t codepoint_count(std::string_view text);
// Code point at `offset` (advanced past it); an invalid byte reads as U+FFFD.
uint32_t next_codepoint(std::string_view text, size_t& offset);
void append_codepoint(std::string& out, uint32_t cpt);

// str.isspace() of one character (Unicode White_Space plus the ASCII separators
// \x1c..\x1f, as Python defines it).
bool is_space(uint32_t cpt);
bool is_alpha(uint32_t cpt);  // general category L*
bool is_digit(uint32_t cpt);  // general category N* (Python's isdigit is close enough)
bool is_cased_lower(uint32_t cpt);
bool is_cased_upper(uint32_t cpt);

// str.strip(chars) / lstrip / rstrip: without `chars`, Unicode whitespace.
std::string_view strip(std::string_view text, std::optional<std::string_view> chars, bool left,
                       bool right);
// str.split(sep, maxsplit) and str.rsplit: without `sep`, runs of whitespace and no
// empty pieces. `sep` must not be empty (the caller reports Python's ValueError).
std::vector<std::string> split(std::string_view text, std::optional<std::string_view> sep,
                               int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view text, std::optional<std::string_view> sep,
                                int64_t maxsplit);
// str.splitlines(keepends): \n, \r, \r\n and Python's other line boundaries.
std::vector<std::string> splitlines(std::string_view text, bool keepends);
// str.replace(old, new, count); count < 0 means all. An empty `old` inserts `new`
// between characters, as Python does.
std::string replace(std::string_view text, std::string_view old, std::string_view with,
                    int64_t count);
// str.count(sub): non-overlapping occurrences (an empty sub counts len + 1).
int64_t count_occurrences(std::string_view text, std::string_view sub);
// str.find / rfind: the index in code points, or -1.
int64_t find(std::string_view text, std::string_view sub, bool reverse);

std::string to_upper(std::string_view text);
std::string to_lower(std::string_view text);
std::string swap_case(std::string_view text);
std::string capitalize(std::string_view text);  // str.capitalize()
std::string title(std::string_view text);       // str.title()

// repr(str): single quotes unless the text holds ' and no ", escapes as Python's.
std::string repr_string(std::string_view text);
// repr(float): the shortest text that reads back as the same double, in Python's
// layout ("1.0", "1e+16", "1e-05", "inf", "nan").
std::string repr_float(double value);

}  // namespace pagoda::jinja
