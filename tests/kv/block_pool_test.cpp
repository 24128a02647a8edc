// BlockPool: reference counts, the LRU free queue and the hash -> block map.

#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <vector>

namespace pagoda::kv {
namespace {

using Ids = std::vector<BlockId>;

BlockKey key_of(std::vector<int32_t> tokens, BlockHash parent = kRootBlockHash,
                uint64_t extra_key = 0) {
  return BlockKey{.parent = parent, .extra_key = extra_key, .tokens = std::move(tokens)};
}

TEST(BlockPool, StartsAllFreeInIdOrder) {
  const BlockPool pool(5, 16);
  EXPECT_EQ(pool.n_blocks(), 5);
  EXPECT_EQ(pool.block_size(), 16);
  EXPECT_EQ(pool.n_free(), 5);
  EXPECT_EQ(pool.n_cached(), 0);
  EXPECT_EQ(pool.n_evictions(), 0);
  EXPECT_EQ(pool.free_queue(), (Ids{0, 1, 2, 3, 4}));
  for (BlockId id = 0; id < 5; ++id) {
    EXPECT_EQ(pool.ref_count(id), 0);
    EXPECT_FALSE(pool.cached_hash(id));
    EXPECT_EQ(pool.cached_key(id), nullptr);
  }
}

TEST(BlockPool, AllocateTakesFromTheHeadWithOneReference) {
  BlockPool pool(4, 2);
  Ids out = {99};  // allocate() appends
  ASSERT_TRUE(pool.allocate(3, out));
  EXPECT_EQ(out, (Ids{99, 0, 1, 2}));
  EXPECT_EQ(pool.ref_count(0), 1);
  EXPECT_EQ(pool.ref_count(2), 1);
  EXPECT_EQ(pool.ref_count(3), 0);
  EXPECT_EQ(pool.n_free(), 1);
  EXPECT_EQ(pool.free_queue(), (Ids{3}));
  Ids none;
  ASSERT_TRUE(pool.allocate(0, none));
  EXPECT_TRUE(none.empty());
}

TEST(BlockPool, AllocateRefusesWithoutChangingAnything) {
  BlockPool pool(3, 2);
  Ids out;
  ASSERT_TRUE(pool.allocate(1, out));
  out.clear();
  EXPECT_FALSE(pool.allocate(3, out));
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(pool.n_free(), 2);
  EXPECT_EQ(pool.free_queue(), (Ids{1, 2}));
  EXPECT_EQ(pool.ref_count(1), 0);
}

TEST(BlockPool, ReferenceCountsRiseAndFall) {
  BlockPool pool(3, 2);
  Ids out;
  ASSERT_TRUE(pool.allocate(1, out));
  pool.acquire(0);
  pool.acquire(0);
  EXPECT_EQ(pool.ref_count(0), 3);
  const Ids zero = {0};
  pool.release(zero);
  pool.release(zero);
  EXPECT_EQ(pool.ref_count(0), 1);
  EXPECT_EQ(pool.n_free(), 2);
  pool.release(zero);
  EXPECT_EQ(pool.ref_count(0), 0);
  EXPECT_EQ(pool.n_free(), 3);
  EXPECT_EQ(pool.free_queue(), (Ids{1, 2, 0}));  // back at the tail
}

TEST(BlockPool, ReleaseAppendsToTheTailInTheOrderGiven) {
  BlockPool pool(5, 1);
  Ids out;
  ASSERT_TRUE(pool.allocate(4, out));
  pool.release(Ids{2, 0, 3});
  EXPECT_EQ(pool.free_queue(), (Ids{4, 2, 0, 3}));
  // A block still referenced elsewhere does not enter the queue.
  pool.acquire(1);
  pool.release(Ids{1});
  EXPECT_EQ(pool.free_queue(), (Ids{4, 2, 0, 3}));
  pool.release(Ids{1});
  EXPECT_EQ(pool.free_queue(), (Ids{4, 2, 0, 3, 1}));
}

TEST(BlockPool, AcquireTakesAFreeBlockOutOfTheMiddleOfTheQueue) {
  BlockPool pool(5, 1);
  pool.acquire(2);
  EXPECT_EQ(pool.ref_count(2), 1);
  EXPECT_EQ(pool.free_queue(), (Ids{0, 1, 3, 4}));
  pool.acquire(0);  // head
  pool.acquire(4);  // tail
  EXPECT_EQ(pool.free_queue(), (Ids{1, 3}));
  EXPECT_EQ(pool.n_free(), 2);
  Ids out;
  ASSERT_TRUE(pool.allocate(2, out));
  EXPECT_EQ(out, (Ids{1, 3}));
  EXPECT_TRUE(pool.free_queue().empty());
  EXPECT_FALSE(pool.allocate(1, out));
}

TEST(BlockPool, CachedBlockIsFoundByHashAndKey) {
  BlockPool pool(4, 2);
  Ids out;
  ASSERT_TRUE(pool.allocate(2, out));
  pool.cache(1, 1234, key_of({7, 8}));
  EXPECT_EQ(pool.n_cached(), 1);
  EXPECT_EQ(pool.cached_hash(1), BlockHash{1234});
  ASSERT_NE(pool.cached_key(1), nullptr);
  EXPECT_EQ(*pool.cached_key(1), key_of({7, 8}));
  EXPECT_EQ(pool.find(1234, key_of({7, 8})), BlockId{1});
  EXPECT_FALSE(pool.find(1235, key_of({7, 8})));  // hash miss
  EXPECT_FALSE(pool.cached_hash(0));
}

// Two keys forced onto one hash: the second key must miss, never get the first's K/V,
// and cannot take the hash over.
TEST(BlockPool, HashCollisionIsAMissAndTheFirstBlockStaysCached) {
  BlockPool pool(4, 2);
  Ids out;
  ASSERT_TRUE(pool.allocate(2, out));
  const BlockHash shared_hash = 42;
  pool.cache(0, shared_hash, key_of({1, 2}));
  EXPECT_FALSE(pool.find(shared_hash, key_of({1, 3})));                   // other tokens
  EXPECT_FALSE(pool.find(shared_hash, key_of({1, 2}, kRootBlockHash + 1)));  // other parent
  EXPECT_FALSE(pool.find(shared_hash, key_of({1, 2}, kRootBlockHash, 5)));   // other extra key
  pool.cache(1, shared_hash, key_of({1, 3}));
  EXPECT_FALSE(pool.cached_hash(1));
  EXPECT_EQ(pool.n_cached(), 1);
  EXPECT_FALSE(pool.find(shared_hash, key_of({1, 3})));
  EXPECT_EQ(pool.find(shared_hash, key_of({1, 2})), BlockId{0});
}

TEST(BlockPool, CacheKeepsTheFirstIdentityOfABlock) {
  BlockPool pool(2, 2);
  Ids out;
  ASSERT_TRUE(pool.allocate(1, out));
  pool.cache(0, 10, key_of({1, 2}));
  pool.cache(0, 11, key_of({3, 4}));
  EXPECT_EQ(pool.cached_hash(0), BlockHash{10});
  EXPECT_FALSE(pool.find(11, key_of({3, 4})));
  EXPECT_EQ(pool.n_cached(), 1);
}

TEST(BlockPool, FreedCachedBlockStaysFindableUntilEvicted) {
  BlockPool pool(3, 2);
  Ids out;
  ASSERT_TRUE(pool.allocate(3, out));
  pool.cache(0, 100, key_of({1, 2}));
  pool.cache(1, 101, key_of({3, 4}));
  pool.release(Ids{1, 0, 2});
  EXPECT_EQ(pool.free_queue(), (Ids{1, 0, 2}));
  EXPECT_EQ(pool.find(100, key_of({1, 2})), BlockId{0});
  EXPECT_EQ(pool.find(101, key_of({3, 4})), BlockId{1});

  // A hit on a free block revives it without touching its identity.
  pool.acquire(0);
  EXPECT_EQ(pool.free_queue(), (Ids{1, 2}));
  EXPECT_EQ(pool.cached_hash(0), BlockHash{100});

  // Allocation evicts from the head: block 1 loses its identity first.
  out.clear();
  ASSERT_TRUE(pool.allocate(1, out));
  EXPECT_EQ(out, (Ids{1}));
  EXPECT_EQ(pool.n_evictions(), 1);
  EXPECT_FALSE(pool.cached_hash(1));
  EXPECT_EQ(pool.cached_key(1), nullptr);
  EXPECT_FALSE(pool.find(101, key_of({3, 4})));
  EXPECT_EQ(pool.n_cached(), 1);
  // Block 2 had no identity: taking it is no eviction.
  out.clear();
  ASSERT_TRUE(pool.allocate(1, out));
  EXPECT_EQ(out, (Ids{2}));
  EXPECT_EQ(pool.n_evictions(), 1);

  // An evicted hash can be taken by another block.
  pool.cache(2, 101, key_of({3, 4}));
  EXPECT_EQ(pool.find(101, key_of({3, 4})), BlockId{2});
}

// Blocks are evicted in the order they were freed, whatever order they were cached in.
TEST(BlockPool, EvictionFollowsLeastRecentlyFreedOrder) {
  BlockPool pool(4, 1);
  Ids out;
  ASSERT_TRUE(pool.allocate(4, out));
  for (BlockId id = 0; id < 4; ++id) pool.cache(id, 500 + id, key_of({id}));
  pool.release(Ids{3});
  pool.release(Ids{1});
  pool.release(Ids{0, 2});
  for (const BlockId expected : {3, 1, 0, 2}) {
    out.clear();
    ASSERT_TRUE(pool.allocate(1, out));
    EXPECT_EQ(out, (Ids{expected}));
    EXPECT_FALSE(pool.find(500 + expected, key_of({expected})));
  }
  EXPECT_EQ(pool.n_evictions(), 4);
  EXPECT_EQ(pool.n_cached(), 0);
}

// Blocks 0..n-1 of a pool of block size 1, each allocated, cached under its own token
// (cached in id order), then released in `release_order`.
BlockPool cached_pool(EvictionPolicy policy, int32_t n, const Ids& release_order) {
  BlockPool pool(n, 1, policy);
  Ids out;
  EXPECT_TRUE(pool.allocate(n, out));
  for (BlockId id = 0; id < n; ++id) pool.cache(id, BlockHash{1000u + static_cast<uint64_t>(id)}, key_of({id}));
  for (BlockId id : release_order) pool.release(Ids{id});
  return pool;
}

// Blocks hit by prefix lookups: acquired and released again `hits` times each.
void hit(BlockPool& pool, BlockId block, int hits) {
  for (int i = 0; i < hits; ++i) {
    pool.acquire(block);
    pool.release(Ids{block});
  }
}

TEST(BlockPoolEviction, LruEvictsTheLeastRecentlyReleased) {
  BlockPool pool = cached_pool(EvictionPolicy::kLru, 4, {2, 0, 3, 1});
  hit(pool, 2, 3);  // used again: now the most recent
  EXPECT_EQ(pool.free_queue(), (Ids{0, 3, 1, 2}));
  Ids out;
  ASSERT_TRUE(pool.allocate(2, out));
  EXPECT_EQ(out, (Ids{0, 3}));
  EXPECT_EQ(pool.n_evictions(), 2);
  EXPECT_FALSE(pool.find(BlockHash{1000}, key_of({0})));
  EXPECT_TRUE(pool.find(BlockHash{1002}, key_of({2})));
}

TEST(BlockPoolEviction, FifoEvictsInTheOrderBlocksWereCachedWhateverTheirUse) {
  BlockPool pool = cached_pool(EvictionPolicy::kFifo, 4, {2, 0, 3, 1});
  hit(pool, 0, 5);  // reuse does not matter
  EXPECT_EQ(pool.free_queue(), (Ids{0, 1, 2, 3}));
  Ids out;
  ASSERT_TRUE(pool.allocate(3, out));
  EXPECT_EQ(out, (Ids{0, 1, 2}));
  EXPECT_EQ(pool.n_evictions(), 3);
  // Block 0 cached again now: the newest, evicted last.
  pool.cache(0, BlockHash{2000}, key_of({7}));
  pool.release(Ids{1, 0, 2});
  EXPECT_EQ(pool.free_queue(), (Ids{1, 2, 3, 0}));  // uncached first (release order), then by caching
}

TEST(BlockPoolEviction, LfuEvictsTheLeastHitThenTheLeastRecent) {
  BlockPool pool = cached_pool(EvictionPolicy::kLfu, 5, {0, 1, 2, 3, 4});
  hit(pool, 0, 3);
  hit(pool, 1, 1);
  hit(pool, 3, 1);
  // 2 and 4: no hits (2 released first); 1 and 3: one hit (1 released first); 0: three.
  EXPECT_EQ(pool.free_queue(), (Ids{2, 4, 1, 3, 0}));
  Ids out;
  ASSERT_TRUE(pool.allocate(3, out));
  EXPECT_EQ(out, (Ids{2, 4, 1}));
  // An evicted block starts counting again from zero once cached anew.
  pool.cache(2, BlockHash{3000}, key_of({9}));
  pool.release(Ids{2});
  EXPECT_EQ(pool.free_queue(), (Ids{2, 3, 0}));
}

TEST(BlockPoolEviction, UncachedFreeBlocksGoBeforeCachedOnesUnderLfuAndFifo) {
  for (EvictionPolicy policy : {EvictionPolicy::kLfu, EvictionPolicy::kFifo}) {
    BlockPool pool(4, 1, policy);
    Ids out;
    ASSERT_TRUE(pool.allocate(4, out));
    pool.cache(1, BlockHash{11}, key_of({1}));
    pool.cache(3, BlockHash{13}, key_of({3}));
    pool.release(Ids{1, 3, 0, 2});
    EXPECT_EQ(pool.free_queue(), (Ids{0, 2, 1, 3})) << eviction_policy_name(policy);
    out.clear();
    ASSERT_TRUE(pool.allocate(2, out));
    EXPECT_EQ(out, (Ids{0, 2}));
    EXPECT_EQ(pool.n_evictions(), 0);
    EXPECT_EQ(pool.n_cached(), 2);
  }
}

TEST(BlockPoolEviction, PolicyNamesParse) {
  EXPECT_EQ(*parse_eviction_policy("lru"), EvictionPolicy::kLru);
  EXPECT_EQ(*parse_eviction_policy("lfu"), EvictionPolicy::kLfu);
  EXPECT_EQ(*parse_eviction_policy("fifo"), EvictionPolicy::kFifo);
  for (EvictionPolicy policy : {EvictionPolicy::kLru, EvictionPolicy::kLfu, EvictionPolicy::kFifo}) {
    EXPECT_EQ(*parse_eviction_policy(eviction_policy_name(policy)), policy);
  }
  const Expected<EvictionPolicy> bad = parse_eviction_policy("random");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "unknown prefix-cache eviction policy 'random' (expected lru, lfu or fifo)");
}

}  // namespace
}  // namespace pagoda::kv
