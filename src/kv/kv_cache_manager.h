#pragma once
// Per-request block tables over one BlockPool, and the prefix cache (DESIGN.md
// invariant 5). The scheduler asks; the manager either gives or says no (then the
// scheduler preempts): allocate() changes nothing when it fails.
//
// A request's token p lives in block block_table(id)[p / block_size], row p % block_size.
// Full blocks are registered in the cache under a chained hash (parent hash, tokens,
// extra key); find_prefix() walks the chain of a new prompt and verifies each hit token
// by token. Blocks shared by several requests (a prefix hit, a fork) are copied on write:
// before a step writes into a block whose reference count is above one, the writer
// gets a fresh block and a BlockCopy tells the runner to copy the K/V first.
// Not thread-safe: the engine thread owns it.

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block_hash.h"
#include "kv/block_pool.h"

namespace pagoda::kv {

using RequestId = uint64_t;

// Result of a prefix lookup: cached blocks covering the first n_tokens tokens of a
// prompt. Valid until the next allocate() or free() (they may evict its blocks).
struct PrefixHit {
  std::vector<BlockId> blocks;
  std::vector<BlockHash> hashes;  // chain hash of each block
  int32_t n_tokens = 0;           // blocks.size() * block_size
};

// Copy every layer's K and V of block `src` into block `dst` before the step's writes.
struct BlockCopy {
  BlockId src = 0;
  BlockId dst = 0;
  friend bool operator==(const BlockCopy&, const BlockCopy&) = default;
};

struct PrefixCacheStats {
  int64_t queries = 0;         // find_prefix() calls
  int64_t queried_tokens = 0;  // prompt tokens looked up
  int64_t hit_tokens = 0;      // of which found cached
};

class KvCacheManager {
 public:
  KvCacheManager(int32_t n_blocks, int32_t block_size, bool enable_prefix_cache = true,
                 EvictionPolicy eviction = EvictionPolicy::kLru);

  int32_t block_size() const;
  int32_t n_blocks() const;
  int32_t n_free_blocks() const;
  double usage() const;  // share of blocks referenced by some request, in [0, 1]
  bool prefix_cache_enabled() const;
  const PrefixCacheStats& prefix_stats() const;
  const BlockPool& pool() const;

  // The longest run of cached full blocks at the start of `tokens`, never covering the
  // last token (its logits start the generation). Takes nothing. Empty when prefix
  // caching is off (and then not counted in prefix_stats()).
  PrefixHit find_prefix(std::span<const int32_t> tokens, uint64_t extra_key);

  // Makes room in request `id`'s table for tokens [0, n_computed + n_new): blocks are
  // added as needed, and every shared block that tokens [n_computed, n_computed + n_new)
  // will be written into is replaced by a fresh copy (queued for take_copies()). A
  // request with no table yet may start from `hit` (from find_prefix() just before, with
  // n_computed == hit->n_tokens). Returns false, changing nothing, when the free blocks
  // do not suffice. Should n_computed move back into full blocks (tokens rewritten), a
  // cached block written into is copied too, so that the cache keeps what its keys say.
  bool allocate(RequestId id, int32_t n_computed, int32_t n_new, const PrefixHit* hit = nullptr);

  // Registers in the prefix cache every block of `id` that is full within its first
  // n_computed tokens and not registered yet. tokens: the request's ids so far (at least
  // n_computed of them); extra_key: as given to find_prefix(). Unknown ids are ignored.
  void cache_full_blocks(RequestId id, std::span<const int32_t> tokens, int32_t n_computed,
                         uint64_t extra_key);

  // Request `child` starts with `parent`'s table, every block with one more reference
  // (n completions of one prompt share its blocks until they diverge). `parent` must
  // hold a table and `child` none (checked by assert).
  void fork(RequestId parent, RequestId child);

  // Keeps only the blocks of `id` that tokens [0, n_tokens) occupy, returning the rest to
  // the pool, last first: a speculative step wrote K/V for proposals past what was
  // accepted. The cut blocks were never registered in the prefix cache (registration
  // only covers computed tokens, and these were rolled back). Unknown ids are ignored.
  void truncate(RequestId id, int32_t n_tokens);

  // Returns every block of `id` to the pool, its last block first, and forgets `id`.
  // Unknown ids are ignored.
  void free(RequestId id);

  bool has(RequestId id) const;
  std::span<const BlockId> block_table(RequestId id) const;  // empty for unknown ids
  // The copies queued by allocate() since the last call, in order.
  std::vector<BlockCopy> take_copies();

 private:
  struct Table {
    std::vector<BlockId> blocks;
    // Chain hashes of the leading blocks registered so far (cut back to the first block a
    // step writes into). A block whose hash another block held already stays private
    // but keeps its entry here: the chain describes the tokens, not the block.
    std::vector<BlockHash> hashes;
  };

  // The blocks a step writing rows [n_computed, n_computed + n_new) touches, of a table
  // holding `held`: held blocks [first, end) are written into, n_copies of them must be
  // copied first, and n_append new ones go at the end.
  struct WriteRange {
    int32_t first = 0;
    int32_t end = 0;
    int32_t n_copies = 0;
    int32_t n_append = 0;
  };
  WriteRange written_blocks(std::span<const BlockId> held, int32_t n_computed,
                            int32_t n_new) const;
  // Starts an empty table from a prefix hit: one more reference to each hit block.
  void take_hit(Table& table, const PrefixHit& hit);
  // Returns the table's blocks from index `keep` on to the pool, the last first.
  void release_from(Table& table, size_t keep);
  // Blocks a step must not write in place: shared ones, and cached ones (whose content
  // later hits rely on).
  bool needs_copy_before_write(BlockId block) const;

  BlockPool pool_;
  bool prefix_cache_;
  PrefixCacheStats stats_;
  std::unordered_map<RequestId, Table> tables_;
  std::vector<BlockCopy> copies_;
  std::vector<BlockId> fresh_;  // allocate()'s scratch, kept to reuse its capacity
};

}  // namespace pagoda::kv
