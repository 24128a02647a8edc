#pragma once
// A fixed set of KV blocks and who uses them (pure bookkeeping: the K/V values live in
// the backend's KvStorage, indexed by the same block ids).
//
// Each block has a reference count (the requests whose block tables hold it) and, once
// full and registered, a cached identity (hash + key) under which later requests can
// find it. Blocks with no reference sit in one free queue in LRU order, O(1) removal
// from anywhere in it (an intrusive doubly linked list over the block array):
//  - allocate() takes blocks from the head and drops any cached identity they had
//    (eviction);
//  - release() appends blocks whose count drops to zero to the tail, in the order given
//    (callers pass a request's blocks last first, so the end of a chain is evicted
//    before its start), keeping their cached identity: they stay reusable until evicted;
//  - acquire() on a free cached block (a prefix hit) takes it out of the queue.
// That is the LRU policy (the default). The other eviction policies order the free
// blocks differently; with them, free blocks without a cached identity are always taken
// first (they hold nothing anyone can find), then the cached ones:
//  - kFifo: in the order they were cached (first cached, first evicted), reuse or not;
//  - kLfu: fewest prefix hits first (acquire() of a cached block counts one), ties by
//    LRU order; the count restarts when the block is evicted.
// Not thread-safe: the engine thread owns it.

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/status.h"

#include "kv/block_hash.h"

namespace pagoda::kv {

enum class EvictionPolicy { kLru, kLfu, kFifo };

// "lru", "lfu", "fifo" <-> the policy; an unknown name is kInvalidArgument naming it.
Expected<EvictionPolicy> parse_eviction_policy(std::string_view name);
std::string_view eviction_policy_name(EvictionPolicy policy);

class BlockPool {
 public:
  // n_blocks > 0 blocks of block_size > 0 tokens, all free, in id order.
  BlockPool(int32_t n_blocks, int32_t block_size, EvictionPolicy policy = EvictionPolicy::kLru);

  int32_t n_blocks() const;
  int32_t block_size() const;
  int32_t n_free() const;    // blocks with no reference (cached or not)
  int32_t n_cached() const;  // blocks with a cached identity (referenced or free)
  int64_t n_evictions() const;  // cached identities dropped by allocate() so far

  // Takes n blocks from the head of the free queue, each with a reference count of 1
  // and no cached identity, appending their ids to `out`. Returns false and changes
  // nothing when fewer than n are free.
  bool allocate(int32_t n, std::vector<BlockId>& out);
  // One more reference to a block (taking it out of the free queue if it was there).
  void acquire(BlockId block);
  // One reference fewer to each block, in order; blocks reaching zero go to the tail
  // of the free queue. Releasing a block with no reference is a programming error
  // (checked by assert).
  void release(std::span<const BlockId> blocks);

  // Gives a full, referenced block a cached identity. Does nothing when the block is
  // already cached or when another block already holds this hash (the first one stays
  // the cached copy; this one stays private).
  void cache(BlockId block, BlockHash hash, BlockKey key);
  // The cached block whose hash is `hash` and whose key equals `key` (a hash match with
  // another key is a collision: a miss).
  std::optional<BlockId> find(BlockHash hash, const BlockKey& key) const;

  int32_t ref_count(BlockId block) const;
  std::optional<BlockHash> cached_hash(BlockId block) const;
  // The key a cached block was registered with; nullptr when it has no cached identity.
  const BlockKey* cached_key(BlockId block) const;
  // Ids of the free blocks in the order allocate() takes them (for LRU: from the queue's
  // head to its tail); for tests and debugging.
  std::vector<BlockId> free_queue() const;
  EvictionPolicy policy() const { return policy_; }

 private:
  struct Block {
    int32_t ref_count = 0;
    BlockId prev = -1, next = -1;  // free-queue links; -1 at the ends
    bool in_free_queue = false;
    std::optional<BlockHash> hash;
    BlockKey key;  // valid when hash is set
    uint64_t released = 0;  // release order (kLfu's tie-break)
    uint64_t cached_at = 0;  // cache order (kFifo)
    uint64_t hits = 0;       // prefix hits since cached (kLfu)
  };
  // kLfu / kFifo: a free block's place in the eviction order, smallest first:
  // (cached, policy's key, release order, id).
  using EvictionKey = std::tuple<bool, uint64_t, uint64_t, BlockId>;
  EvictionKey eviction_key(BlockId block) const;

  void push_free_tail(BlockId block);
  void remove_free(BlockId block);
  void uncache(BlockId block);

  int32_t block_size_;
  EvictionPolicy policy_;
  std::vector<Block> blocks_;  // [n_blocks]
  // kLfu / kFifo: the free blocks in eviction order (the queue's links are kept too, and
  // give LRU order).
  std::set<EvictionKey> eviction_order_;
  uint64_t n_released_ = 0;
  uint64_t n_cached_ever_ = 0;
  BlockId free_head_ = -1, free_tail_ = -1;
  int32_t n_free_ = 0;
  int64_t n_evictions_ = 0;
  std::unordered_map<BlockHash, BlockId> cached_;  // hash -> block holding it
};

}  // namespace pagoda::kv
