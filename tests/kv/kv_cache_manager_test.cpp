// KvCacheManager: block tables, refusal without side effects, the prefix cache
// (hits, misses, verification, stats) and returning blocks on free/abort.

#include "kv/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace pagoda::kv {
namespace {

using Ids = std::vector<BlockId>;
using Tokens = std::vector<int32_t>;

Tokens counting(int32_t first, int32_t n) {
  Tokens tokens(static_cast<size_t>(n));
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

Tokens concat(Tokens a, const Tokens& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Ids table_of(const KvCacheManager& kv, RequestId id) {
  const std::span<const BlockId> table = kv.block_table(id);
  return Ids(table.begin(), table.end());
}

// Computes a whole prompt for request `id` from scratch and registers its full blocks.
void run_prompt(KvCacheManager& kv, RequestId id, const Tokens& prompt, uint64_t extra_key = 0) {
  const int32_t n = static_cast<int32_t>(prompt.size());
  ASSERT_TRUE(kv.allocate(id, 0, n));
  kv.cache_full_blocks(id, prompt, n, extra_key);
}

TEST(KvCacheManager, TableGrowsToCeilOfTokensOverBlockSize) {
  KvCacheManager kv(10, 4);
  EXPECT_EQ(kv.block_size(), 4);
  EXPECT_EQ(kv.n_blocks(), 10);
  EXPECT_FALSE(kv.has(1));
  ASSERT_TRUE(kv.allocate(1, 0, 9));  // tokens 0..8: three blocks, the last one row 0
  EXPECT_TRUE(kv.has(1));
  EXPECT_EQ(table_of(kv, 1), (Ids{0, 1, 2}));
  EXPECT_EQ(kv.n_free_blocks(), 7);
  EXPECT_DOUBLE_EQ(kv.usage(), 0.3);
  ASSERT_TRUE(kv.allocate(1, 9, 3));  // rows 1..3 of block 2
  EXPECT_EQ(table_of(kv, 1), (Ids{0, 1, 2}));
  ASSERT_TRUE(kv.allocate(1, 12, 1));  // first row of a fourth block
  EXPECT_EQ(table_of(kv, 1), (Ids{0, 1, 2, 3}));
  ASSERT_TRUE(kv.allocate(1, 13, 0));
  EXPECT_EQ(table_of(kv, 1), (Ids{0, 1, 2, 3}));
  ASSERT_TRUE(kv.allocate(2, 0, 1));
  EXPECT_EQ(table_of(kv, 2), (Ids{4}));
  EXPECT_EQ(kv.n_free_blocks(), 5);
  EXPECT_TRUE(kv.take_copies().empty());
}

// Speculative decoding wrote K/V for proposals past what it kept: the blocks past the
// kept tokens go back, and cached blocks of the kept part stay cached.
TEST(KvCacheManager, TruncateReturnsTheBlocksPastTheKeptTokens) {
  KvCacheManager kv(10, 4);
  ASSERT_TRUE(kv.allocate(1, 0, 14));  // tokens 0..13: blocks 0..3
  kv.cache_full_blocks(1, counting(1, 14), 8, 0);  // blocks 0 and 1 cached
  kv.truncate(1, 9);  // tokens 0..8 kept: blocks 0..2
  EXPECT_EQ(table_of(kv, 1), (Ids{0, 1, 2}));
  EXPECT_EQ(kv.n_free_blocks(), 7);
  kv.truncate(1, 12);  // nothing past the table
  kv.truncate(2, 0);   // unknown: ignored
  EXPECT_EQ(table_of(kv, 1), (Ids{0, 1, 2}));
  kv.truncate(1, 5);  // block 2 back; blocks 0 and 1 still found in the cache
  EXPECT_EQ(table_of(kv, 1), (Ids{0, 1}));
  kv.free(1);
  EXPECT_EQ(kv.find_prefix(counting(1, 14), 0).n_tokens, 8);
  EXPECT_EQ(kv.n_free_blocks(), 10);
}

TEST(KvCacheManager, RefusalChangesNothing) {
  KvCacheManager kv(4, 4);
  ASSERT_TRUE(kv.allocate(1, 0, 12));
  EXPECT_FALSE(kv.allocate(2, 0, 8));  // two blocks, one free
  EXPECT_FALSE(kv.has(2));
  EXPECT_EQ(kv.n_free_blocks(), 1);
  EXPECT_FALSE(kv.allocate(1, 12, 5));  // two more blocks
  EXPECT_EQ(table_of(kv, 1), (Ids{0, 1, 2}));
  EXPECT_EQ(kv.n_free_blocks(), 1);
  EXPECT_EQ(kv.pool().free_queue(), (Ids{3}));
  ASSERT_TRUE(kv.allocate(1, 12, 4));  // exactly the last block
  EXPECT_EQ(table_of(kv, 1), (Ids{0, 1, 2, 3}));
  EXPECT_EQ(kv.n_free_blocks(), 0);
  EXPECT_DOUBLE_EQ(kv.usage(), 1.0);
  EXPECT_FALSE(kv.allocate(1, 16, 1));
  ASSERT_TRUE(kv.allocate(1, 16, 0));  // nothing to write, nothing needed
}

TEST(KvCacheManager, MissOnAnEmptyCacheCountsTheQuery) {
  KvCacheManager kv(8, 4);
  const PrefixHit hit = kv.find_prefix(counting(0, 10), 0);
  EXPECT_TRUE(hit.blocks.empty());
  EXPECT_TRUE(hit.hashes.empty());
  EXPECT_EQ(hit.n_tokens, 0);
  EXPECT_EQ(kv.prefix_stats().queries, 1);
  EXPECT_EQ(kv.prefix_stats().queried_tokens, 10);
  EXPECT_EQ(kv.prefix_stats().hit_tokens, 0);
  EXPECT_EQ(kv.find_prefix({}, 0).n_tokens, 0);
  EXPECT_EQ(kv.prefix_stats().queries, 2);
}

TEST(KvCacheManager, OnlyFullComputedBlocksAreCached) {
  KvCacheManager kv(8, 4);
  const Tokens prompt = counting(0, 10);
  ASSERT_TRUE(kv.allocate(1, 0, 10));
  kv.cache_full_blocks(1, prompt, 7, 0);  // block 1 is full in the table but not computed
  EXPECT_TRUE(kv.pool().cached_hash(0));
  EXPECT_FALSE(kv.pool().cached_hash(1));
  kv.cache_full_blocks(1, prompt, 10, 0);
  EXPECT_TRUE(kv.pool().cached_hash(1));
  EXPECT_FALSE(kv.pool().cached_hash(2));  // partial
  EXPECT_EQ(kv.pool().n_cached(), 2);
  // The stored identities form the chain.
  const BlockHash first = hash_block(kRootBlockHash, 0, counting(0, 4));
  EXPECT_EQ(kv.pool().cached_hash(0), first);
  EXPECT_EQ(kv.pool().cached_hash(1), hash_block(first, 0, counting(4, 4)));
  ASSERT_NE(kv.pool().cached_key(1), nullptr);
  EXPECT_EQ(kv.pool().cached_key(1)->parent, first);
  EXPECT_EQ(kv.pool().cached_key(1)->tokens, counting(4, 4));
}

TEST(KvCacheManager, FindsTheLongestCachedRunOfFullBlocks) {
  KvCacheManager kv(16, 4);
  const Tokens prompt = counting(0, 13);
  run_prompt(kv, 1, prompt);  // caches blocks 0, 1, 2
  const Ids a = table_of(kv, 1);

  PrefixHit hit = kv.find_prefix(concat(counting(0, 12), {77, 78}), 0);
  EXPECT_EQ(hit.blocks, (Ids{a[0], a[1], a[2]}));
  EXPECT_EQ(hit.n_tokens, 12);
  for (size_t i = 0; i < hit.blocks.size(); ++i) {
    EXPECT_EQ(kv.pool().cached_hash(hit.blocks[i]), hit.hashes[i]);
  }
  // Diverging inside block 1: only block 0 matches.
  hit = kv.find_prefix(concat(counting(0, 5), {99, 6, 7, 8, 9, 10}), 0);
  EXPECT_EQ(hit.blocks, (Ids{a[0]}));
  EXPECT_EQ(hit.n_tokens, 4);
  // Same tokens, another extra key (cache salt): nothing.
  EXPECT_EQ(kv.find_prefix(prompt, 1).n_tokens, 0);
  // Same block content at another position has another parent: nothing.
  EXPECT_EQ(kv.find_prefix(concat(counting(4, 4), counting(8, 4)), 0).n_tokens, 0);
}

TEST(KvCacheManager, AHitNeverCoversTheLastToken) {
  KvCacheManager kv(16, 4);
  run_prompt(kv, 1, counting(0, 16));  // four full cached blocks
  EXPECT_EQ(kv.find_prefix(counting(0, 16), 0).n_tokens, 12);
  EXPECT_EQ(kv.find_prefix(counting(0, 13), 0).n_tokens, 12);
  EXPECT_EQ(kv.find_prefix(counting(0, 12), 0).n_tokens, 8);
  EXPECT_EQ(kv.find_prefix(counting(0, 5), 0).n_tokens, 4);
  EXPECT_EQ(kv.find_prefix(counting(0, 4), 0).n_tokens, 0);
  EXPECT_EQ(kv.find_prefix(counting(0, 1), 0).n_tokens, 0);
  const PrefixCacheStats& stats = kv.prefix_stats();
  EXPECT_EQ(stats.queries, 6);
  EXPECT_EQ(stats.queried_tokens, 16 + 13 + 12 + 5 + 4 + 1);
  EXPECT_EQ(stats.hit_tokens, 12 + 12 + 8 + 4);
}

TEST(KvCacheManager, StartingFromAHitSharesTheBlocks) {
  KvCacheManager kv(16, 4);
  const Tokens prompt_a = counting(0, 10);
  run_prompt(kv, 1, prompt_a);
  const Ids a = table_of(kv, 1);
  const Tokens prompt_b = concat(counting(0, 8), {50, 51, 52});
  const PrefixHit hit = kv.find_prefix(prompt_b, 0);
  ASSERT_EQ(hit.n_tokens, 8);
  const int32_t free_before = kv.n_free_blocks();
  ASSERT_TRUE(kv.allocate(2, hit.n_tokens, 3, &hit));
  const Ids b = table_of(kv, 2);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0], a[0]);
  EXPECT_EQ(b[1], a[1]);
  EXPECT_NE(b[2], a[2]);
  EXPECT_EQ(kv.pool().ref_count(a[0]), 2);
  EXPECT_EQ(kv.pool().ref_count(a[1]), 2);
  EXPECT_EQ(kv.pool().ref_count(b[2]), 1);
  EXPECT_EQ(kv.n_free_blocks(), free_before - 1);
  EXPECT_TRUE(kv.take_copies().empty());  // writes go to the fresh block only
  // The hit blocks are registered already; caching B's prompt adds nothing new.
  kv.cache_full_blocks(2, prompt_b, 11, 0);
  EXPECT_EQ(kv.pool().n_cached(), 2);
  kv.free(1);
  EXPECT_EQ(kv.pool().ref_count(a[0]), 1);
  EXPECT_EQ(kv.pool().ref_count(a[2]), 0);
}

// Hit blocks in the free queue come out of it: they do not count as available for the
// blocks the step needs besides them.
TEST(KvCacheManager, FreeHitBlocksAreNotAvailableTwice) {
  KvCacheManager kv(4, 4);
  const Tokens prompt_a = counting(0, 12);
  run_prompt(kv, 1, prompt_a);
  const Ids a = table_of(kv, 1);
  kv.free(1);
  ASSERT_EQ(kv.n_free_blocks(), 4);
  const Tokens prompt_b = counting(0, 17);
  const PrefixHit hit = kv.find_prefix(prompt_b, 0);
  ASSERT_EQ(hit.blocks, a);  // all three blocks, free but cached
  const Ids queue_before = kv.pool().free_queue();
  EXPECT_FALSE(kv.allocate(2, 12, 5, &hit));  // two fresh blocks, one left besides the hit
  EXPECT_FALSE(kv.has(2));
  EXPECT_EQ(kv.pool().free_queue(), queue_before);
  EXPECT_EQ(kv.pool().n_cached(), 3);
  EXPECT_EQ(kv.pool().n_evictions(), 0);
  ASSERT_TRUE(kv.allocate(2, 12, 4, &hit));
  const Ids b = table_of(kv, 2);
  EXPECT_EQ(Ids(b.begin(), b.begin() + 3), a);
  EXPECT_EQ(kv.n_free_blocks(), 0);
  EXPECT_EQ(kv.pool().n_evictions(), 0);  // the fresh block was the one never cached
  for (const BlockId block : b) EXPECT_EQ(kv.pool().ref_count(block), 1);
}

// A request's blocks go back last first, so the end of its chain is evicted first and
// the start, which later prompts can still hit, survives longest.
TEST(KvCacheManager, FreeReturnsBlocksLastFirstSoTheChainEndIsEvictedFirst) {
  KvCacheManager kv(8, 4);
  const Tokens prompt = counting(0, 13);
  run_prompt(kv, 1, prompt);
  const Ids a = table_of(kv, 1);
  ASSERT_EQ(a, (Ids{0, 1, 2, 3}));
  kv.free(1);
  EXPECT_FALSE(kv.has(1));
  EXPECT_EQ(kv.pool().free_queue(), (Ids{4, 5, 6, 7, 3, 2, 1, 0}));
  ASSERT_TRUE(kv.allocate(2, 0, 16));  // the four never-used blocks
  EXPECT_EQ(table_of(kv, 2), (Ids{4, 5, 6, 7}));
  EXPECT_EQ(kv.pool().n_evictions(), 0);
  ASSERT_TRUE(kv.allocate(3, 0, 8));  // block 3 held no identity (partial), then block 2
  EXPECT_EQ(table_of(kv, 3), (Ids{3, 2}));
  EXPECT_EQ(kv.pool().n_evictions(), 1);
  EXPECT_EQ(kv.find_prefix(prompt, 0).blocks, (Ids{0, 1}));
  ASSERT_TRUE(kv.allocate(4, 0, 1));
  EXPECT_EQ(table_of(kv, 4), (Ids{1}));
  EXPECT_EQ(kv.find_prefix(prompt, 0).blocks, (Ids{0}));
}

TEST(KvCacheManager, AbortReturnsEveryBlock) {
  KvCacheManager kv(32, 4);
  const Tokens prompt = counting(0, 21);
  run_prompt(kv, 1, prompt);
  const PrefixHit hit = kv.find_prefix(prompt, 0);
  ASSERT_TRUE(kv.allocate(2, hit.n_tokens, 1, &hit));
  kv.fork(2, 3);
  ASSERT_TRUE(kv.allocate(3, 20, 7));
  ASSERT_TRUE(kv.allocate(4, 0, 30));
  EXPECT_LT(kv.n_free_blocks(), 32);
  for (const RequestId id : {3, 1, 4, 2}) kv.free(id);
  EXPECT_EQ(kv.n_free_blocks(), 32);
  EXPECT_DOUBLE_EQ(kv.usage(), 0.0);
  for (BlockId block = 0; block < 32; ++block) EXPECT_EQ(kv.pool().ref_count(block), 0);
  EXPECT_EQ(kv.pool().free_queue().size(), 32u);
  for (const RequestId id : {1, 2, 3, 4}) {
    EXPECT_FALSE(kv.has(id));
    EXPECT_TRUE(kv.block_table(id).empty());
  }
  kv.free(1);  // unknown now: ignored
  kv.free(99);
  EXPECT_EQ(kv.n_free_blocks(), 32);
  // The prompt's full blocks are still cached.
  EXPECT_EQ(kv.find_prefix(prompt, 0).n_tokens, 20);
}

// Two requests computing one prefix side by side: the first to register keeps the
// hash, the second's copy stays private, but its chain still continues past it.
TEST(KvCacheManager, DuplicateBlocksStayPrivateAndTheChainContinues) {
  KvCacheManager kv(16, 4);
  const Tokens prefix = counting(0, 8);
  const Tokens longer = concat(prefix, {40, 41, 42, 43, 44});
  ASSERT_TRUE(kv.allocate(1, 0, 8));
  ASSERT_TRUE(kv.allocate(2, 0, 13));
  kv.cache_full_blocks(1, prefix, 8, 0);
  kv.cache_full_blocks(2, longer, 13, 0);
  const Ids a = table_of(kv, 1);
  const Ids b = table_of(kv, 2);
  EXPECT_FALSE(kv.pool().cached_hash(b[0]));
  EXPECT_FALSE(kv.pool().cached_hash(b[1]));
  EXPECT_TRUE(kv.pool().cached_hash(b[2]));
  EXPECT_EQ(kv.pool().n_cached(), 3);
  EXPECT_EQ(kv.find_prefix(longer, 0).blocks, (Ids{a[0], a[1], b[2]}));
}

TEST(KvCacheManager, DisabledPrefixCacheNeverHitsNorCounts) {
  KvCacheManager kv(8, 4, /*enable_prefix_cache=*/false);
  EXPECT_FALSE(kv.prefix_cache_enabled());
  const Tokens prompt = counting(0, 12);
  run_prompt(kv, 1, prompt);
  EXPECT_EQ(kv.pool().n_cached(), 0);
  kv.free(1);
  const PrefixHit hit = kv.find_prefix(prompt, 0);
  EXPECT_TRUE(hit.blocks.empty());
  EXPECT_EQ(hit.n_tokens, 0);
  EXPECT_EQ(kv.prefix_stats().queries, 0);
  EXPECT_EQ(kv.prefix_stats().queried_tokens, 0);
  EXPECT_TRUE(KvCacheManager(8, 4).prefix_cache_enabled());
}

TEST(KvCacheManager, BlockSizeOneAndLargeBlocks) {
  KvCacheManager unit(8, 1);
  const Tokens prompt = counting(0, 5);
  run_prompt(unit, 1, prompt);
  EXPECT_EQ(table_of(unit, 1).size(), 5u);
  EXPECT_EQ(unit.find_prefix(prompt, 0).n_tokens, 4);

  KvCacheManager big(4, 256);
  ASSERT_TRUE(big.allocate(1, 0, 257));
  EXPECT_EQ(table_of(big, 1).size(), 2u);
  ASSERT_TRUE(big.allocate(1, 257, 255));
  EXPECT_EQ(table_of(big, 1).size(), 2u);
}

}  // namespace
}  // namespace pagoda::kv
