#include "kv/block_pool.h"

#include <cassert>
#include <string>
#include <utility>

namespace pagoda::kv {

Expected<EvictionPolicy> parse_eviction_policy(std::string_view name) {
  if (name == "lru") return EvictionPolicy::kLru;
  if (name == "lfu") return EvictionPolicy::kLfu;
  if (name == "fifo") return EvictionPolicy::kFifo;
  return invalid_argument("unknown prefix-cache eviction policy '" + std::string(name) +
                          "' (expected lru, lfu or fifo)");
}

std::string_view eviction_policy_name(EvictionPolicy policy) {
  switch (policy) {
    case EvictionPolicy::kLru: return "lru";
    case EvictionPolicy::kLfu: return "lfu";
    case EvictionPolicy::kFifo: return "fifo";
  }
  return "lru";
}

BlockPool::BlockPool(int32_t n_blocks, int32_t block_size, EvictionPolicy policy)
    : block_size_(block_size), policy_(policy), blocks_(static_cast<size_t>(n_blocks)) {
  assert(n_blocks > 0 && block_size > 0);
  cached_.reserve(blocks_.size());
  for (BlockId id = 0; id < n_blocks; ++id) push_free_tail(id);
}

int32_t BlockPool::n_blocks() const { return static_cast<int32_t>(blocks_.size()); }
int32_t BlockPool::block_size() const { return block_size_; }
int32_t BlockPool::n_free() const { return n_free_; }
int32_t BlockPool::n_cached() const { return static_cast<int32_t>(cached_.size()); }
int64_t BlockPool::n_evictions() const { return n_evictions_; }

bool BlockPool::allocate(int32_t n, std::vector<BlockId>& out) {
  assert(n >= 0);
  if (n > n_free_) return false;
  for (int32_t i = 0; i < n; ++i) {
    const BlockId id = policy_ == EvictionPolicy::kLru ? free_head_
                                                         : std::get<3>(*eviction_order_.begin());
    remove_free(id);
    if (blocks_[id].hash) {
      uncache(id);
      ++n_evictions_;
    }
    blocks_[id].ref_count = 1;
    out.push_back(id);
  }
  return true;
}

void BlockPool::acquire(BlockId block) {
  assert(block >= 0 && block < n_blocks());
  Block& b = blocks_[block];
  if (b.ref_count == 0) remove_free(block);
  if (b.hash) ++b.hits;
  ++b.ref_count;
}

void BlockPool::release(std::span<const BlockId> blocks) {
  for (const BlockId id : blocks) {
    assert(id >= 0 && id < n_blocks());
    Block& b = blocks_[id];
    assert(b.ref_count > 0 && "releasing a block nobody holds");
    if (b.ref_count == 0) continue;  // (with asserts off) never let a count go negative
    if (--b.ref_count == 0) push_free_tail(id);
  }
}

void BlockPool::cache(BlockId block, BlockHash hash, BlockKey key) {
  assert(block >= 0 && block < n_blocks());
  assert(static_cast<int32_t>(key.tokens.size()) == block_size_);
  Block& b = blocks_[block];
  assert(b.ref_count > 0 && "only a referenced block can be registered");
  if (b.hash) return;
  // try_emplace leaves the map as it was when another block holds the hash already.
  if (!cached_.try_emplace(hash, block).second) return;
  b.hash = hash;
  b.key = std::move(key);
  b.cached_at = n_cached_ever_++;
  b.hits = 0;
}

std::optional<BlockId> BlockPool::find(BlockHash hash, const BlockKey& key) const {
  const auto it = cached_.find(hash);
  if (it == cached_.end() || blocks_[it->second].key != key) return std::nullopt;
  return it->second;
}

int32_t BlockPool::ref_count(BlockId block) const {
  assert(block >= 0 && block < n_blocks());
  return blocks_[block].ref_count;
}

std::optional<BlockHash> BlockPool::cached_hash(BlockId block) const {
  assert(block >= 0 && block < n_blocks());
  return blocks_[block].hash;
}

const BlockKey* BlockPool::cached_key(BlockId block) const {
  assert(block >= 0 && block < n_blocks());
  return blocks_[block].hash ? &blocks_[block].key : nullptr;
}

std::vector<BlockId> BlockPool::free_queue() const {
  std::vector<BlockId> ids;
  ids.reserve(static_cast<size_t>(n_free_));
  if (policy_ == EvictionPolicy::kLru) {
    for (BlockId id = free_head_; id != -1; id = blocks_[id].next) ids.push_back(id);
  } else {
    for (const EvictionKey& key : eviction_order_) ids.push_back(std::get<3>(key));
  }
  return ids;
}

BlockPool::EvictionKey BlockPool::eviction_key(BlockId block) const {
  const Block& b = blocks_[block];
  const uint64_t primary = policy_ == EvictionPolicy::kFifo ? b.cached_at : b.hits;
  return {b.hash.has_value(), b.hash ? primary : 0, b.released, block};
}

void BlockPool::push_free_tail(BlockId block) {
  Block& b = blocks_[block];
  assert(!b.in_free_queue && b.ref_count == 0);
  b.prev = free_tail_;
  b.next = -1;
  if (free_tail_ == -1) {
    free_head_ = block;
  } else {
    blocks_[free_tail_].next = block;
  }
  free_tail_ = block;
  b.in_free_queue = true;
  b.released = n_released_++;
  ++n_free_;
  if (policy_ != EvictionPolicy::kLru) eviction_order_.insert(eviction_key(block));
}

void BlockPool::remove_free(BlockId block) {
  Block& b = blocks_[block];
  assert(b.in_free_queue);
  if (policy_ != EvictionPolicy::kLru) eviction_order_.erase(eviction_key(block));
  if (b.prev == -1) {
    free_head_ = b.next;
  } else {
    blocks_[b.prev].next = b.next;
  }
  if (b.next == -1) {
    free_tail_ = b.prev;
  } else {
    blocks_[b.next].prev = b.prev;
  }
  b.prev = b.next = -1;
  b.in_free_queue = false;
  --n_free_;
}

void BlockPool::uncache(BlockId block) {
  Block& b = blocks_[block];
  assert(b.hash);
  const auto it = cached_.find(*b.hash);
  assert(it != cached_.end() && it->second == block);
  cached_.erase(it);
  b.hash.reset();
  b.key = BlockKey{};
  b.hits = 0;
}

}  // namespace pagoda::kv
