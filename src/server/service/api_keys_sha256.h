#pragma once
// SHA-256 (FIPS 180-4), for comparing API keys through fixed-length digests (api_keys.h).
// Written here because none of the project's libraries exposes one (Boost's hashes are
// in detail namespaces) and a 100-line function is lighter than linking OpenSSL for it.

#include <array>
#include <cstdint>
#include <string_view>

namespace pagoda::server {

using Sha256Digest = std::array<uint8_t, 32>;

Sha256Digest sha256(std::string_view data);

}  // namespace pagoda::server
