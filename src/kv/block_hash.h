#pragma once
// Identity of a full KV block for the prefix cache (DESIGN.md invariant 5): a chained
// hash of the parent block's hash, the block's token ids and the request's extra key
// (a cache salt, a LoRA or multimodal id: anything besides the tokens that changes
// the K/V). Equal prefixes give equal chains; a hash is only a hint, every hit is
// verified against the stored key token by token.

#include <cstdint>
#include <span>
#include <vector>

namespace pagoda::kv {

using BlockId = int32_t;
using BlockHash = uint64_t;

// The parent hash of a sequence's first block.
inline constexpr BlockHash kRootBlockHash = 0x9e3779b97f4a7c15ull;

// 64-bit hash of (parent, extra_key, tokens). Deterministic across runs and machines.
BlockHash hash_block(BlockHash parent, uint64_t extra_key, std::span<const int32_t> tokens);

// Everything a cached block's identity is made of, kept so that hits can be verified.
struct BlockKey {
  BlockHash parent = kRootBlockHash;
  uint64_t extra_key = 0;
  std::vector<int32_t> tokens;  // [block_size]

  friend bool operator==(const BlockKey&, const BlockKey&) = default;
};

}  // namespace pagoda::kv
