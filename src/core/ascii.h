#pragma once
// ASCII case-insensitive text helpers for protocol tokens, names and units. Locale-free
// on purpose: HTTP field values, type names and config words compare the same whatever
// the process locale is. Also: Boost 1.81's beast::iequals reads one byte past both
// strings when they differ in case, so the server must not use it on request bytes.
#include <cstddef>
#include <string>
#include <string_view>

namespace pagoda {

constexpr char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + ('a' - 'A')) : c; }

constexpr bool ascii_iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

constexpr bool ascii_istarts_with(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && ascii_iequals(text.substr(0, prefix.size()), prefix);
}

inline std::string ascii_to_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = ascii_lower(c);
  return out;
}

}  // namespace pagoda
