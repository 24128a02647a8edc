#pragma once
// Stafford's "Mix13" 64-bit finalizer, the one splitmix64 ends with: a bijection on
// 64-bit words in which every output bit depends on every input bit. What the project's
// hashes (prefix-cache block chains, grammar stacks and positions) mix their words with.

#include <cstdint>

namespace pagoda {

constexpr uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

}  // namespace pagoda
