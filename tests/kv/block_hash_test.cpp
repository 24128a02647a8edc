// hash_block: deterministic across machines, sensitive to every part of a block's
// identity, and free of collisions on the kind of inputs a server sees.

#include "kv/block_hash.h"

#include <gtest/gtest.h>

#include <numeric>
#include <unordered_set>
#include <vector>

namespace pagoda::kv {
namespace {

std::vector<int32_t> iota_tokens(int32_t first, int32_t n) {
  std::vector<int32_t> tokens(static_cast<size_t>(n));
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

// Values from an independent implementation of the documented algorithm (64-bit Python
// integers): they pin the hash so that it can never change silently between builds.
TEST(BlockHash, MatchesTheDocumentedAlgorithm) {
  const BlockHash first = hash_block(kRootBlockHash, 0, iota_tokens(0, 16));
  EXPECT_EQ(first, 0x636a6fea45e1f07eull);
  EXPECT_EQ(hash_block(first, 0, iota_tokens(16, 16)), 0xab2a6761895c5226ull);
  EXPECT_EQ(hash_block(kRootBlockHash, 0, {}), 0x8cd1b3a3d482a8d1ull);
  const std::vector<int32_t> odd = {1, -1, 2};
  EXPECT_EQ(hash_block(kRootBlockHash, 7, odd), 0x6ae5506fee463866ull);
}

TEST(BlockHash, EveryPartOfTheIdentityChangesTheHash) {
  const std::vector<int32_t> tokens = iota_tokens(100, 16);
  const BlockHash base = hash_block(kRootBlockHash, 0, tokens);
  EXPECT_NE(hash_block(kRootBlockHash + 1, 0, tokens), base);
  EXPECT_NE(hash_block(kRootBlockHash, 1, tokens), base);
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::vector<int32_t> changed = tokens;
    changed[i] ^= 1;
    EXPECT_NE(hash_block(kRootBlockHash, 0, changed), base) << "token " << i;
  }
  std::vector<int32_t> swapped = tokens;
  std::swap(swapped[0], swapped[1]);
  EXPECT_NE(hash_block(kRootBlockHash, 0, swapped), base);
}

// An odd last token pairs with zero; the token count keeps that from matching a real 0.
TEST(BlockHash, LengthIsPartOfTheIdentity) {
  const std::vector<int32_t> three = {5, 6, 7};
  const std::vector<int32_t> four = {5, 6, 7, 0};
  EXPECT_NE(hash_block(kRootBlockHash, 0, three), hash_block(kRootBlockHash, 0, four));
  const std::vector<int32_t> zero = {0};
  EXPECT_NE(hash_block(kRootBlockHash, 0, zero), hash_block(kRootBlockHash, 0, {}));
}

// Parent and extra key are folded in separately: swapping them is another identity.
TEST(BlockHash, ParentAndExtraKeyAreNotInterchangeable) {
  const std::vector<int32_t> tokens = iota_tokens(0, 4);
  EXPECT_NE(hash_block(1, 2, tokens), hash_block(2, 1, tokens));
}

// 200,000 blocks of nearby token ids (sliding windows over a counting sequence, the
// worst case for a weak mix) and chains of one block repeated: all hashes distinct.
TEST(BlockHash, NoCollisionsOnStructuredInputs) {
  const std::vector<int32_t> counting = iota_tokens(0, 100'016);
  std::unordered_set<BlockHash> seen;
  for (size_t start = 0; start < 100'000; ++start) {
    const std::span<const int32_t> window(counting.data() + start, 16);
    EXPECT_TRUE(seen.insert(hash_block(kRootBlockHash, 0, window)).second) << start;
    EXPECT_TRUE(seen.insert(hash_block(kRootBlockHash, 1, window)).second) << start;
  }
  const std::vector<int32_t> zeros(16, 0);
  BlockHash parent = kRootBlockHash;
  for (int i = 0; i < 10'000; ++i) {
    parent = hash_block(parent, 0, zeros);
    EXPECT_TRUE(seen.insert(parent).second) << "chain link " << i;
  }
}

// Flipping one input bit flips about half of the output bits (avalanche).
TEST(BlockHash, OneBitChangesAboutHalfTheOutput) {
  std::vector<int32_t> tokens = iota_tokens(1000, 16);
  const BlockHash base = hash_block(kRootBlockHash, 0, tokens);
  int64_t flipped_bits = 0;
  int n_trials = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    for (int bit = 0; bit < 32; ++bit) {
      std::vector<int32_t> changed = tokens;
      changed[i] = static_cast<int32_t>(static_cast<uint32_t>(changed[i]) ^ (1u << bit));
      flipped_bits += __builtin_popcountll(base ^ hash_block(kRootBlockHash, 0, changed));
      ++n_trials;
    }
  }
  const double mean = static_cast<double>(flipped_bits) / n_trials;
  EXPECT_GT(mean, 30.0);
  EXPECT_LT(mean, 34.0);
}

}  // namespace
}  // namespace pagoda::kv
