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
// Not thread-safe: the engine thread owns it.

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block_hash.h"

namespace pagoda::kv {

class BlockPool {
 public:
  // n_blocks > 0 blocks of block_size > 0 tokens, all free, in id order.
  BlockPool(int32_t n_blocks, int32_t block_size);

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
  // Ids of the free blocks from head (evicted first) to tail; for tests and debugging.
  std::vector<BlockId> free_queue() const;

 private:
  struct Block {
    int32_t ref_count = 0;
    BlockId prev = -1, next = -1;  // free-queue links; -1 at the ends
    bool in_free_queue = false;
    std::optional<BlockHash> hash;
    BlockKey key;  // valid when hash is set
  };

  void push_free_tail(BlockId block);
  void remove_free(BlockId block);
  void uncache(BlockId block);

  int32_t block_size_;
  std::vector<Block> blocks_;  // [n_blocks]
  BlockId free_head_ = -1, free_tail_ = -1;
  int32_t n_free_ = 0;
  int64_t n_evictions_ = 0;
  std::unordered_map<BlockHash, BlockId> cached_;  // hash -> block holding it
};

}  // namespace pagoda::kv
