#pragma once
// How many KV blocks the engine allocates, once, at start (DESIGN.md invariant 1).
//
// The budget is either an exact number of bytes (`--kv-cache-memory`), or a share of the
// memory the kernel reports available (MemAvailable in /proc/meminfo). It buys whole
// blocks of KvCacheShape::block_bytes() bytes each (every layer's K and V of block_size
// tokens). An automatic budget is capped at the blocks max_running requests of
// max_model_len tokens can ever hold at once: more would only sit idle. An explicit one
// is taken as given: blocks beyond that cap keep freed prefixes cached for longer.
// Either way the cache must hold at least one request of max_model_len tokens, or some
// request could never run.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/memory_info.h"
#include "core/status.h"

namespace pagoda::engine {

struct KvMemoryBudget {
  std::optional<uint64_t> bytes;   // exact budget in bytes; nullopt: a share of free memory
  double free_memory_share = 0.5;  // of MemAvailable, in (0, 1], when `bytes` is unset
};

// What the cache must and may hold, in blocks.
struct KvBlockLimits {
  size_t block_bytes = 0;          // KvCacheShape::block_bytes(), > 0
  int32_t min_blocks = 1;          // one request of max_model_len tokens
  int32_t useful_blocks = 1;       // max_running requests of max_model_len tokens (>= min_blocks)
  int32_t max_blocks = INT32_MAX;  // what block ids and slot numbers can address
};

struct KvBlockPlan {
  int32_t n_blocks = 0;
  uint64_t bytes = 0;       // n_blocks * block_bytes
  std::string description;  // where the budget came from, for the start-up log line
};

// The block count for `budget`. available_bytes: MemAvailable, needed only when the
// budget is a share of it. Fails when the budget is out of range or buys fewer than
// limits.min_blocks blocks (the message says how much memory would be needed).
Expected<KvBlockPlan> plan_kv_blocks(const KvMemoryBudget& budget, const KvBlockLimits& limits,
                                     std::optional<uint64_t> available_bytes);

}  // namespace pagoda::engine
