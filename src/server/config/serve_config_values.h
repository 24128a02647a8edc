#pragma once
// Text to values for `pagoda serve` settings, shared by the flags, the PAGODA_*
// environment variables and the TOML file. Messages name the bad value, not the setting
// (the caller says which setting and where it came from).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace pagoda::server {

// A decimal integer in [min, max]: "'abc' is not an integer", "70000 is out of range 0..65535".
Expected<int64_t> parse_integer(std::string_view text, int64_t min, int64_t max);

// A decimal number such as 0.9 or 1e-3: "'x' is not a number".
Expected<double> parse_number(std::string_view text);

// A size in bytes: a number (a fraction allowed) and an optional unit, case-insensitive:
// B; KiB MiB GiB TiB and K M G T (powers of 1024); KB MB GB TB (powers of 1000).
// "8388608", "512MiB", "4GiB", "1.5G", "64 KB". The result is rounded down.
Expected<uint64_t> parse_byte_size(std::string_view text);

// true/false, 1/0, yes/no, on/off (case-insensitive).
Expected<bool> parse_bool(std::string_view text);

// One of `choices`, exactly: "'x' is not one of a, b, c".
Status check_choice(std::string_view text, const std::vector<std::string_view>& choices);

// Comma-separated items, each trimmed, empty ones dropped ("a, b,,c" -> a b c).
std::vector<std::string> split_list(std::string_view text);

// Leading and trailing spaces, tabs and line ends removed.
std::string_view trim_spaces(std::string_view text);

}  // namespace pagoda::server
