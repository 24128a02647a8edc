#pragma once
// API keys: `Authorization: Bearer <key>` checked against the configured keys.
//
// Keys come from --api-key (repeatable) and/or a file of one key per line (surrounding
// whitespace trimmed; blank lines and lines starting with '#' ignored). No keys: auth is
// off (enabled() is false, and the server lets every request through).
//
// Timing: a naive `presented == key` returns as soon as a byte differs, so the time a
// failed attempt takes tells an attacker how many leading bytes were right, and lets
// them guess a key byte by byte. check() therefore
//  - keeps only the SHA-256 digest of each key and hashes the presented token the same
//    way, so every comparison is of 32 bytes whatever the lengths (the length of a key
//    does not show either), and a digest match means a key match (collision resistance);
//  - compares all 32 bytes of the presented digest with every key's, accumulating the
//    differences with OR, and picks the matching index with masks, without a branch or
//    an early exit on the contents: the work is the same for every wrong or right token.
// What does depend on the input is the cost of hashing it (its length, which the
// attacker already knows) and whether the header is shaped like "Bearer <token>".

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "server/service/api_keys_sha256.h"

namespace pagoda::server {

class ApiKeys {
 public:
  ApiKeys() = default;  // no keys: auth off

  // `keys` as given (each non-empty, without whitespace or control characters), plus
  // those of `key_file` when it is not empty. Duplicates count once. Errors name the
  // offending entry by position (never by content: keys are secrets).
  static Expected<ApiKeys> load(const std::vector<std::string>& keys, const std::string& key_file);
  // The keys of a key file's text (see above); `source` names it in errors.
  static Expected<std::vector<std::string>> parse_key_file(std::string_view text,
                                                           std::string_view source);

  bool enabled() const { return !digests_.empty(); }
  size_t size() const { return digests_.size(); }

  // The index (in load order, duplicates dropped) of the key that an Authorization
  // header value carries: "Bearer <key>" (scheme case-insensitive). Nothing when the
  // header is empty or of another shape, when the key is unknown, or when there are no
  // keys at all (callers skip the check when !enabled()).
  std::optional<size_t> check(std::string_view authorization_header) const;

 private:
  std::vector<Sha256Digest> digests_;
};

// The token of "Bearer <token>", trimmed; empty when the header has another shape.
std::string_view bearer_token(std::string_view authorization_header);

}  // namespace pagoda::server
