// fork() and the copy-on-write rule of allocate(): n completions of one prompt share its
// blocks; the first write into a shared block gives the writer a fresh copy.

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "kv/kv_cache_manager.h"

namespace pagoda::kv {
namespace {

using Ids = std::vector<BlockId>;
using Copies = std::vector<BlockCopy>;

Ids table_of(const KvCacheManager& kv, RequestId id) {
  const std::span<const BlockId> table = kv.block_table(id);
  return Ids(table.begin(), table.end());
}

std::vector<int32_t> counting(int32_t first, int32_t n) {
  std::vector<int32_t> tokens(static_cast<size_t>(n));
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

TEST(CopyOnWrite, ForkSharesEveryBlock) {
  KvCacheManager kv(8, 4);
  ASSERT_TRUE(kv.allocate(1, 0, 10));  // blocks 0, 1 full, block 2 rows 0..1
  kv.fork(1, 2);
  EXPECT_EQ(table_of(kv, 2), (Ids{0, 1, 2}));
  for (const BlockId block : {0, 1, 2}) EXPECT_EQ(kv.pool().ref_count(block), 2);
  EXPECT_EQ(kv.n_free_blocks(), 5);
  EXPECT_TRUE(kv.take_copies().empty());
}

// Exactly the shared partial block is copied, once: by the first side to write. The
// other side is then its only holder and writes in place.
TEST(CopyOnWrite, FirstWriterCopiesTheSharedPartialBlock) {
  KvCacheManager kv(8, 4);
  ASSERT_TRUE(kv.allocate(1, 0, 10));
  kv.fork(1, 2);
  ASSERT_TRUE(kv.allocate(1, 10, 1));
  EXPECT_EQ(table_of(kv, 1), (Ids{0, 1, 3}));
  EXPECT_EQ(kv.take_copies(), (Copies{{.src = 2, .dst = 3}}));
  EXPECT_EQ(kv.pool().ref_count(0), 2);
  EXPECT_EQ(kv.pool().ref_count(1), 2);
  EXPECT_EQ(kv.pool().ref_count(2), 1);
  EXPECT_EQ(kv.pool().ref_count(3), 1);
  ASSERT_TRUE(kv.allocate(2, 10, 1));
  EXPECT_EQ(table_of(kv, 2), (Ids{0, 1, 2}));
  EXPECT_TRUE(kv.take_copies().empty());
  EXPECT_EQ(kv.n_free_blocks(), 4);
  // Later writes of both sides land in their own blocks: no more copies.
  ASSERT_TRUE(kv.allocate(1, 11, 3));
  ASSERT_TRUE(kv.allocate(2, 11, 3));
  EXPECT_EQ(table_of(kv, 1), (Ids{0, 1, 3, 4}));
  EXPECT_EQ(table_of(kv, 2), (Ids{0, 1, 2, 5}));
  EXPECT_TRUE(kv.take_copies().empty());
  EXPECT_EQ(kv.pool().ref_count(0), 2);  // the full blocks stay shared
}

TEST(CopyOnWrite, ForkAtABlockBoundaryCopiesNothing) {
  KvCacheManager kv(8, 4);
  ASSERT_TRUE(kv.allocate(1, 0, 8));
  kv.fork(1, 2);
  ASSERT_TRUE(kv.allocate(2, 8, 1));
  ASSERT_TRUE(kv.allocate(1, 8, 1));
  EXPECT_EQ(table_of(kv, 1), (Ids{0, 1, 3}));
  EXPECT_EQ(table_of(kv, 2), (Ids{0, 1, 2}));
  EXPECT_TRUE(kv.take_copies().empty());
}

// n completions: every writer but the last copies the same source block.
TEST(CopyOnWrite, NCompletionsCopyUntilOneHolderIsLeft) {
  KvCacheManager kv(16, 4);
  ASSERT_TRUE(kv.allocate(1, 0, 6));  // blocks 0 (full), 1 (rows 0..1)
  for (const RequestId child : {2, 3, 4}) kv.fork(1, child);
  EXPECT_EQ(kv.pool().ref_count(1), 4);
  for (const RequestId id : {3, 1, 4, 2}) ASSERT_TRUE(kv.allocate(id, 6, 1));
  EXPECT_EQ(kv.take_copies(), (Copies{{1, 2}, {1, 3}, {1, 4}}));
  EXPECT_EQ(table_of(kv, 3), (Ids{0, 2}));
  EXPECT_EQ(table_of(kv, 1), (Ids{0, 3}));
  EXPECT_EQ(table_of(kv, 4), (Ids{0, 4}));
  EXPECT_EQ(table_of(kv, 2), (Ids{0, 1}));
  EXPECT_EQ(kv.pool().ref_count(0), 4);
  for (const BlockId block : {1, 2, 3, 4}) EXPECT_EQ(kv.pool().ref_count(block), 1);
}

// A step that spans the shared partial block and new ones: the copy takes the shared
// block's slot, the new blocks follow it.
TEST(CopyOnWrite, CopyAndAppendInOneStep) {
  KvCacheManager kv(8, 4);
  ASSERT_TRUE(kv.allocate(1, 0, 10));
  kv.fork(1, 2);
  ASSERT_TRUE(kv.allocate(1, 10, 8));  // rows 10..17: blocks 2 (shared), 3, 4
  EXPECT_EQ(table_of(kv, 1), (Ids{0, 1, 3, 4, 5}));
  EXPECT_EQ(kv.take_copies(), (Copies{{.src = 2, .dst = 3}}));
  EXPECT_EQ(kv.n_free_blocks(), 2);
}

TEST(CopyOnWrite, RefusedWhenNoBlockIsLeftForTheCopy) {
  KvCacheManager kv(3, 4);
  ASSERT_TRUE(kv.allocate(1, 0, 10));
  kv.fork(1, 2);
  EXPECT_EQ(kv.n_free_blocks(), 0);
  EXPECT_FALSE(kv.allocate(2, 10, 1));
  EXPECT_EQ(table_of(kv, 2), (Ids{0, 1, 2}));
  EXPECT_EQ(kv.pool().ref_count(2), 2);
  EXPECT_TRUE(kv.take_copies().empty());
  // Once the other side is gone, the block is private and written in place.
  kv.free(1);
  ASSERT_TRUE(kv.allocate(2, 10, 2));
  EXPECT_EQ(table_of(kv, 2), (Ids{0, 1, 2}));
  EXPECT_TRUE(kv.take_copies().empty());
}

// A fork inherits the parent's chain: caching the child's identical full blocks
// registers nothing twice, and its own new blocks extend the same chain.
TEST(CopyOnWrite, ForkedChildExtendsTheParentsChain) {
  KvCacheManager kv(16, 4);
  const std::vector<int32_t> prompt = counting(0, 9);
  ASSERT_TRUE(kv.allocate(1, 0, 9));
  kv.cache_full_blocks(1, prompt, 8, 0);
  kv.fork(1, 2);
  std::vector<int32_t> child_tokens = prompt;
  for (int32_t t = 100; t < 107; ++t) child_tokens.push_back(t);
  ASSERT_TRUE(kv.allocate(2, 8, 8));
  kv.cache_full_blocks(2, child_tokens, 16, 0);
  EXPECT_EQ(kv.pool().n_cached(), 4);
  const PrefixHit hit = kv.find_prefix(child_tokens, 0);
  EXPECT_EQ(hit.n_tokens, 12);
  const Ids child = table_of(kv, 2);
  EXPECT_EQ(hit.blocks, Ids(child.begin(), child.begin() + 3));
}

// The engine's n completions: a child forks from a parent that has computed past the
// prompt and recomputes the last prompt token for its own logits. That write lands in
// a full block the parent has cached: the child gets a copy, the cached block stays.
TEST(CopyOnWrite, ChildForkedBehindItsParentCopiesTheBlockItRewrites) {
  KvCacheManager kv(8, 4);
  const std::vector<int32_t> parent_tokens = {10, 11, 12, 13, 14, 15, 20, 21};  // prompt: 6
  ASSERT_TRUE(kv.allocate(1, 0, 8));
  kv.cache_full_blocks(1, parent_tokens, 8, 0);
  kv.fork(1, 2);
  ASSERT_TRUE(kv.allocate(2, 5, 1));  // row 5 of block 1: shared and cached
  EXPECT_EQ(kv.take_copies(), (Copies{{.src = 1, .dst = 2}}));
  EXPECT_EQ(table_of(kv, 1), (Ids{0, 1}));
  EXPECT_EQ(table_of(kv, 2), (Ids{0, 2}));
  // The child's block 1 fills up with its own tokens: another identity, cached apart.
  const std::vector<int32_t> child_tokens = {10, 11, 12, 13, 14, 15, 30, 31};
  ASSERT_TRUE(kv.allocate(2, 6, 2));
  EXPECT_TRUE(kv.take_copies().empty());
  kv.cache_full_blocks(2, child_tokens, 8, 0);
  EXPECT_EQ(kv.pool().n_cached(), 3);
  kv.free(1);
  EXPECT_EQ(kv.find_prefix(std::vector<int32_t>{10, 11, 12, 13, 14, 15, 20, 21, 0}, 0).blocks,
            (Ids{0, 1}));
  EXPECT_EQ(kv.find_prefix(std::vector<int32_t>{10, 11, 12, 13, 14, 15, 30, 31, 0}, 0).blocks,
            (Ids{0, 2}));
}

// Freeing the writer before its copy ran drops the copy: nobody will read the block.
TEST(CopyOnWrite, FreeDropsPendingCopiesIntoFreedBlocks) {
  KvCacheManager kv(8, 4);
  ASSERT_TRUE(kv.allocate(1, 0, 6));
  kv.fork(1, 2);
  kv.fork(1, 3);
  ASSERT_TRUE(kv.allocate(2, 6, 1));  // copy 1 -> 2
  ASSERT_TRUE(kv.allocate(3, 6, 1));  // copy 1 -> 3
  kv.free(2);
  EXPECT_EQ(kv.take_copies(), (Copies{{.src = 1, .dst = 3}}));
}

// Moving n_computed back into a full cached block (rewriting its rows) must not change
// what the cache holds: the writer gets a copy, the cached block keeps its content.
TEST(CopyOnWrite, RewritingACachedBlockCopiesIt) {
  KvCacheManager kv(8, 4);
  const std::vector<int32_t> prompt = counting(0, 9);
  ASSERT_TRUE(kv.allocate(1, 0, 9));
  kv.cache_full_blocks(1, prompt, 8, 0);
  ASSERT_TRUE(kv.allocate(1, 6, 3));  // rows 6..8: block 1 (cached), block 2 (private)
  EXPECT_EQ(table_of(kv, 1), (Ids{0, 3, 2}));
  EXPECT_EQ(kv.take_copies(), (Copies{{.src = 1, .dst = 3}}));
  EXPECT_EQ(kv.pool().ref_count(1), 0);  // free, still cached, still findable
  EXPECT_EQ(kv.find_prefix(prompt, 0).blocks, (Ids{0, 1}));
  std::vector<int32_t> rewritten = prompt;
  rewritten[6] = 60;
  kv.cache_full_blocks(1, rewritten, 8, 0);  // the new block 1 content gets its own hash
  EXPECT_EQ(kv.find_prefix(rewritten, 0).blocks, (Ids{0, 3}));
  EXPECT_EQ(kv.find_prefix(prompt, 0).blocks, (Ids{0, 1}));
}

}  // namespace
}  // namespace pagoda::kv
