#include "kv/kv_cache_manager.h"

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <utility>

namespace pagoda::kv {
namespace {

int32_t ceil_div(int32_t a, int32_t b) { return (a + b - 1) / b; }

}  // namespace

KvCacheManager::KvCacheManager(int32_t n_blocks, int32_t block_size, bool enable_prefix_cache,
                               EvictionPolicy eviction)
    : pool_(n_blocks, block_size, eviction), prefix_cache_(enable_prefix_cache) {}

int32_t KvCacheManager::block_size() const { return pool_.block_size(); }
int32_t KvCacheManager::n_blocks() const { return pool_.n_blocks(); }
int32_t KvCacheManager::n_free_blocks() const { return pool_.n_free(); }

double KvCacheManager::usage() const {
  return static_cast<double>(pool_.n_blocks() - pool_.n_free()) / pool_.n_blocks();
}

bool KvCacheManager::prefix_cache_enabled() const { return prefix_cache_; }
const PrefixCacheStats& KvCacheManager::prefix_stats() const { return stats_; }
const BlockPool& KvCacheManager::pool() const { return pool_; }

// With caching off nothing is looked up, so nothing is counted either: the stats say
// how the cache did, not how often it was skipped.
PrefixHit KvCacheManager::find_prefix(std::span<const int32_t> tokens, uint64_t extra_key) {
  PrefixHit hit;
  if (!prefix_cache_) return hit;
  const size_t block_size = static_cast<size_t>(pool_.block_size());
  // (size - 1) / block_size: the last token is always left to compute.
  const size_t max_blocks = tokens.empty() ? 0 : (tokens.size() - 1) / block_size;
  BlockKey key{.parent = kRootBlockHash, .extra_key = extra_key, .tokens = {}};
  key.tokens.reserve(block_size);
  for (size_t i = 0; i < max_blocks; ++i) {
    const std::span<const int32_t> block_tokens = tokens.subspan(i * block_size, block_size);
    const BlockHash hash = hash_block(key.parent, extra_key, block_tokens);
    key.tokens.assign(block_tokens.begin(), block_tokens.end());
    const std::optional<BlockId> block = pool_.find(hash, key);  // verifies the tokens
    if (!block) break;
    hit.blocks.push_back(*block);
    hit.hashes.push_back(hash);
    key.parent = hash;
  }
  hit.n_tokens = static_cast<int32_t>(hit.blocks.size() * block_size);
  ++stats_.queries;
  stats_.queried_tokens += static_cast<int64_t>(tokens.size());
  stats_.hit_tokens += hit.n_tokens;
  return hit;
}

bool KvCacheManager::needs_copy_before_write(BlockId block) const {
  return pool_.ref_count(block) > 1 || pool_.cached_hash(block).has_value();
}

// Rows [n_computed, n_computed + n_new) are written by the step. Blocks it needs:
//  - one per block beyond the table's end up to ceil((n_computed + n_new) / block_size);
//  - one per held block the rows fall into that must not be written in place: a shared
//    block (ref count > 1, after a hit or a fork) or, when n_computed has been moved back
//    into full blocks, a cached one. Only the first write into a shared block copies it:
//    the writer leaves with a fresh block and the others keep the original.
// Hit blocks that sit in the free queue are taken out of it by acquire(), so they are
// not available for the fresh ones. Everything is counted before anything changes, so
// a refusal changes nothing; the work that follows cannot fail.
bool KvCacheManager::allocate(RequestId id, int32_t n_computed, int32_t n_new,
                              const PrefixHit* hit) {
  assert(n_computed >= 0 && n_new >= 0);
  const auto found = tables_.find(id);
  const bool has_blocks = found != tables_.end() && !found->second.blocks.empty();
  assert(!(hit != nullptr && !hit->blocks.empty() && has_blocks) && "a hit for a running request");
  const bool from_hit = hit != nullptr && !hit->blocks.empty() && !has_blocks;
  assert(!from_hit || (n_computed == hit->n_tokens && hit->hashes.size() == hit->blocks.size()));
  std::span<const BlockId> held;
  if (from_hit) {
    held = hit->blocks;
  } else if (found != tables_.end()) {
    held = found->second.blocks;
  }
  const WriteRange written = written_blocks(held, n_computed, n_new);
  int32_t n_available = pool_.n_free();
  if (from_hit) {
    for (const BlockId block : hit->blocks) n_available -= pool_.ref_count(block) == 0;
  }
  if (written.n_append + written.n_copies > n_available) return false;

  Table& table = found != tables_.end() ? found->second : tables_[id];
  if (from_hit) take_hit(table, *hit);
  // Chain hashes stop before the first block this step writes: its tokens may change.
  if (n_new > 0 && static_cast<int32_t>(table.hashes.size()) > written.first) {
    table.hashes.resize(static_cast<size_t>(written.first));
  }
  fresh_.clear();
  [[maybe_unused]] const bool allocated =
      pool_.allocate(written.n_append + written.n_copies, fresh_);
  assert(allocated);
  auto next_fresh = fresh_.begin();
  for (int32_t j = written.first; j < written.end; ++j) {
    const BlockId old_block = table.blocks[j];
    if (!needs_copy_before_write(old_block)) continue;
    table.blocks[j] = *next_fresh++;
    copies_.push_back({.src = old_block, .dst = table.blocks[j]});
    pool_.release(std::span(&old_block, 1));
  }
  table.blocks.insert(table.blocks.end(), next_fresh, fresh_.end());
  return true;
}

KvCacheManager::WriteRange KvCacheManager::written_blocks(std::span<const BlockId> held,
                                                          int32_t n_computed,
                                                          int32_t n_new) const {
  const int32_t block_size = pool_.block_size();
  const int32_t n_held = static_cast<int32_t>(held.size());
  assert(n_computed <= n_held * block_size && "tokens computed beyond the table");
  const int32_t n_blocks_after = ceil_div(n_computed + n_new, block_size);
  WriteRange range;
  range.first = n_computed / block_size;
  range.end = n_new > 0 ? std::max(range.first, std::min(n_held, n_blocks_after)) : range.first;
  range.n_append = std::max(0, n_blocks_after - n_held);
  for (int32_t j = range.first; j < range.end; ++j) {
    range.n_copies += needs_copy_before_write(held[j]) ? 1 : 0;
  }
  return range;
}

void KvCacheManager::take_hit(Table& table, const PrefixHit& hit) {
  for (size_t i = 0; i < hit.blocks.size(); ++i) {
    assert(pool_.cached_hash(hit.blocks[i]) == hit.hashes[i] && "stale PrefixHit");
    pool_.acquire(hit.blocks[i]);
  }
  table.blocks = hit.blocks;
  table.hashes = hit.hashes;
}

// Blocks past the chain's end (table.hashes) that are full within n_computed get the
// next chain hash and are offered to the pool. A block whose hash another block holds
// already (two requests computed the same prefix side by side) stays private, but its
// hash still extends the chain: the chain describes the tokens, not the block.
void KvCacheManager::cache_full_blocks(RequestId id, std::span<const int32_t> tokens,
                                       int32_t n_computed, uint64_t extra_key) {
  if (!prefix_cache_) return;
  const auto found = tables_.find(id);
  if (found == tables_.end()) return;
  Table& table = found->second;
  assert(n_computed >= 0 && static_cast<size_t>(n_computed) <= tokens.size());
  const size_t block_size = static_cast<size_t>(pool_.block_size());
  // Only blocks whose tokens were given can be identified (with asserts off, too).
  const size_t n_known = std::min(static_cast<size_t>(std::max(n_computed, 0)), tokens.size());
  const size_t n_full = std::min(n_known / block_size, table.blocks.size());
  BlockHash parent = table.hashes.empty() ? kRootBlockHash : table.hashes.back();
  for (size_t j = table.hashes.size(); j < n_full; ++j) {
    const std::span<const int32_t> block_tokens = tokens.subspan(j * block_size, block_size);
    const BlockHash hash = hash_block(parent, extra_key, block_tokens);
    if (!pool_.cached_hash(table.blocks[j])) {
      pool_.cache(table.blocks[j], hash,
                  BlockKey{.parent = parent,
                           .extra_key = extra_key,
                           .tokens = {block_tokens.begin(), block_tokens.end()}});
    }
    table.hashes.push_back(hash);
    parent = hash;
  }
}

void KvCacheManager::fork(RequestId parent, RequestId child) {
  assert(parent != child);
  const auto found = tables_.find(parent);
  assert(found != tables_.end() && "fork of an unknown request");
  assert(!tables_.contains(child) && "fork into a request that holds blocks");
  if (found == tables_.end() || tables_.contains(child)) return;
  Table table = found->second;
  for (const BlockId block : table.blocks) pool_.acquire(block);
  tables_.emplace(child, std::move(table));
}

// Last block first: release() appends to the free queue's tail in the order given, so
// the end of the chain lands nearer the head and is evicted before its start (a later
// prompt can only hit a chain's start). Copies queued for blocks that nobody holds now
// are dropped, unless the block is cached (its content must then be right).
void KvCacheManager::free(RequestId id) {
  const auto found = tables_.find(id);
  if (found == tables_.end()) return;
  release_from(found->second, 0);
  tables_.erase(found);
}

void KvCacheManager::release_from(Table& table, size_t keep) {
  const auto first = table.blocks.begin() + static_cast<std::ptrdiff_t>(keep);
  std::reverse(first, table.blocks.end());  // the last block first
  pool_.release(std::span<const BlockId>(table.blocks).subspan(keep));
  table.blocks.resize(keep);
  if (table.hashes.size() > keep) table.hashes.resize(keep);
  // Copies queued into blocks now free (and holding no prefix) have nothing to keep.
  std::erase_if(copies_, [this](const BlockCopy& copy) {
    return pool_.ref_count(copy.dst) == 0 && !pool_.cached_hash(copy.dst);
  });
}

void KvCacheManager::truncate(RequestId id, int32_t n_tokens) {
  const auto found = tables_.find(id);
  if (found == tables_.end()) return;
  Table& table = found->second;
  const size_t block_size = static_cast<size_t>(pool_.block_size());
  const size_t keep = (static_cast<size_t>(std::max(n_tokens, 0)) + block_size - 1) / block_size;
  if (table.blocks.size() > keep) release_from(table, keep);
}

bool KvCacheManager::has(RequestId id) const { return tables_.contains(id); }

std::span<const BlockId> KvCacheManager::block_table(RequestId id) const {
  const auto found = tables_.find(id);
  if (found == tables_.end()) return {};
  return found->second.blocks;
}

std::vector<BlockCopy> KvCacheManager::take_copies() { return std::exchange(copies_, {}); }

}  // namespace pagoda::kv
