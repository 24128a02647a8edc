#include "kv/block_hash.h"

#include "core/mix64.h"

namespace pagoda::kv {
namespace {

// Absorbs one 64-bit word into the running state. The added constant keeps a zero
// state from staying zero on a zero word (mix64(0) == 0).
constexpr uint64_t absorb(uint64_t state, uint64_t word) {
  return mix64((state ^ word) + 0x9e3779b97f4a7c15ull);
}

constexpr uint64_t kSeed = 0x5061676f64614b56ull;  // "PagodaKV"

}  // namespace

// A sponge over 64-bit words: the seed, then the parent hash, the extra key, the token
// count and the tokens two at a time (the first in the low half, the second in the high
// half; an odd last token pairs with zero, made unambiguous by the count), each word
// folded in by XOR and then mixed by absorb(). Only fixed-width integer arithmetic, so
// the value is the same on every run and machine. Not cryptographic: a hash only
// points at a candidate block and every hit is verified against the stored key.
// Cost: one mix per two tokens, 8 for a 16-token block, and no allocation.
BlockHash hash_block(BlockHash parent, uint64_t extra_key, std::span<const int32_t> tokens) {
  uint64_t state = absorb(kSeed, parent);
  state = absorb(state, extra_key);
  state = absorb(state, static_cast<uint64_t>(tokens.size()));
  size_t i = 0;
  for (; i + 1 < tokens.size(); i += 2) {
    const uint64_t low = static_cast<uint32_t>(tokens[i]);
    const uint64_t high = static_cast<uint32_t>(tokens[i + 1]);
    state = absorb(state, low | (high << 32));
  }
  if (i < tokens.size()) state = absorb(state, static_cast<uint32_t>(tokens[i]));
  return state;
}

}  // namespace pagoda::kv
