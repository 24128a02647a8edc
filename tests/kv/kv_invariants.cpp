#include "kv/kv_invariants.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace pagoda::kv {
namespace {

void check_references(const KvCacheManager& kv, std::span<const RequestId> requests) {
  const BlockPool& pool = kv.pool();
  std::vector<int32_t> holders(static_cast<size_t>(pool.n_blocks()), 0);
  int64_t table_references = 0;
  for (const RequestId id : requests) {
    const std::span<const BlockId> blocks = kv.block_table(id);
    std::vector<BlockId> sorted(blocks.begin(), blocks.end());
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end())
        << "request " << id << " holds a block twice";
    for (const BlockId block : blocks) {
      ASSERT_TRUE(block >= 0 && block < pool.n_blocks()) << block;
      ++holders[block];
    }
    table_references += static_cast<int64_t>(blocks.size());
  }
  int64_t ref_sum = 0;
  for (BlockId b = 0; b < pool.n_blocks(); ++b) {
    ASSERT_EQ(holders[b], pool.ref_count(b)) << "block " << b;
    ref_sum += pool.ref_count(b);
  }
  ASSERT_EQ(table_references, ref_sum);
}

void check_free_queue(const BlockPool& pool) {
  std::vector<int> in_queue(static_cast<size_t>(pool.n_blocks()), 0);
  for (const BlockId block : pool.free_queue()) ++in_queue[block];
  int32_t n_unreferenced = 0;
  for (BlockId b = 0; b < pool.n_blocks(); ++b) {
    const bool unreferenced = pool.ref_count(b) == 0;
    n_unreferenced += unreferenced ? 1 : 0;
    ASSERT_EQ(in_queue[b], unreferenced ? 1 : 0) << "block " << b;
  }
  ASSERT_EQ(pool.n_free(), n_unreferenced);
}

void check_cache(const KvCacheManager& kv) {
  const BlockPool& pool = kv.pool();
  int32_t n_cached = 0;
  for (BlockId b = 0; b < pool.n_blocks(); ++b) {
    const BlockKey* key = pool.cached_key(b);
    ASSERT_EQ(key != nullptr, pool.cached_hash(b).has_value()) << "block " << b;
    if (key == nullptr) continue;
    ++n_cached;
    ASSERT_TRUE(kv.prefix_cache_enabled()) << "a block cached with caching off";
    ASSERT_EQ(static_cast<int32_t>(key->tokens.size()), pool.block_size());
    ASSERT_EQ(hash_block(key->parent, key->extra_key, key->tokens), *pool.cached_hash(b));
    ASSERT_EQ(pool.find(*pool.cached_hash(b), *key), b);
  }
  ASSERT_EQ(pool.n_cached(), n_cached);
}

}  // namespace

void check_kv_invariants(const KvCacheManager& kv, std::span<const RequestId> requests) {
  ASSERT_NO_FATAL_FAILURE(check_references(kv, requests));
  ASSERT_NO_FATAL_FAILURE(check_free_queue(kv.pool()));
  ASSERT_NO_FATAL_FAILURE(check_cache(kv));
  const BlockPool& pool = kv.pool();
  ASSERT_DOUBLE_EQ(kv.usage(),
                   static_cast<double>(pool.n_blocks() - pool.n_free()) / pool.n_blocks());
}

}  // namespace pagoda::kv
