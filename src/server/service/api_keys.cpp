#include "server/service/api_keys.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace pagoda::server {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// A key must fit in an HTTP header as a Bearer token: visible ASCII, no spaces.
Status check_key(std::string_view key, const std::string& where) {
  if (key.empty()) return invalid_argument(where + " is empty");
  for (char c : key) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x21 || byte > 0x7e) {
      return invalid_argument(where + " contains a space, control or non-ASCII character");
    }
  }
  return Status::ok_status();
}

// Keeps the optimizer from reasoning about `v` (and so from turning the accumulation
// below back into an early exit).
inline uint32_t opaque(uint32_t v) {
  asm volatile("" : "+r"(v));
  return v;
}

}  // namespace

std::string_view bearer_token(std::string_view header) {
  header = trim(header);
  constexpr std::string_view kScheme = "bearer";
  if (header.size() <= kScheme.size() || !is_space(header[kScheme.size()])) return {};
  for (size_t i = 0; i < kScheme.size(); ++i) {
    const char c = header[i];
    if ((c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c) != kScheme[i]) return {};
  }
  return trim(header.substr(kScheme.size()));
}

Expected<std::vector<std::string>> ApiKeys::parse_key_file(std::string_view text,
                                                           std::string_view source) {
  std::vector<std::string> keys;
  size_t line_number = 0;
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    const std::string_view line = trim(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
    ++line_number;
    if (line.empty() || line.front() == '#') continue;
    PAGODA_TRY(check_key(line, std::string(source) + ", line " + std::to_string(line_number) +
                                   ": the key"));
    keys.emplace_back(line);
  }
  return keys;
}

Expected<ApiKeys> ApiKeys::load(const std::vector<std::string>& keys, const std::string& key_file) {
  std::vector<std::string> all;
  for (size_t i = 0; i < keys.size(); ++i) {
    PAGODA_TRY(check_key(keys[i], "api key " + std::to_string(i + 1)));
    all.push_back(keys[i]);
  }
  if (!key_file.empty()) {
    std::ifstream file(key_file, std::ios::binary);
    if (!file) {
      return io_error("api key file '" + key_file + "': cannot open: " + std::strerror(errno));
    }
    const std::string text{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
    if (file.bad()) return io_error("api key file '" + key_file + "': cannot read");
    PAGODA_ASSIGN_OR_RETURN(std::vector<std::string> from_file,
                            parse_key_file(text, "api key file '" + key_file + "'"));
    all.insert(all.end(), from_file.begin(), from_file.end());
  }
  ApiKeys result;
  for (const std::string& key : all) {
    const Sha256Digest digest = sha256(key);
    if (std::find(result.digests_.begin(), result.digests_.end(), digest) == result.digests_.end()) {
      result.digests_.push_back(digest);
    }
  }
  return result;
}

std::optional<size_t> ApiKeys::check(std::string_view authorization_header) const {
  const std::string_view token = bearer_token(authorization_header);
  if (token.empty() || digests_.empty()) return std::nullopt;
  const Sha256Digest presented = sha256(token);
  // Every key is compared in full; the index is picked with masks. Keys are distinct,
  // so at most one matches.
  uint64_t found = 0;
  uint64_t index = 0;
  for (size_t k = 0; k < digests_.size(); ++k) {
    uint32_t difference = 0;
    for (size_t i = 0; i < presented.size(); ++i) difference |= presented[i] ^ digests_[k][i];
    // difference is in [0, 255]: minus one wraps to all ones exactly when it is 0.
    const uint64_t equal = (static_cast<uint64_t>(opaque(difference)) - 1) >> 63;
    index |= (0 - equal) & k;
    found |= equal;
  }
  if (found == 0) return std::nullopt;
  return static_cast<size_t>(index);
}

}  // namespace pagoda::server
