// The bookkeeping of the step graphs (backend/cuda/graph_cache.h), with stand-in graphs:
// no GPU needed. First seen: one by one; seen again: captured; then replayed; a failed
// capture keeps its key one by one; keys differing in one word, or only in length, are
// different steps; the least recently used key goes when the cache is full, its graph
// destroyed once; everything left is destroyed with the cache.

#include "backend/cuda/graph_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

namespace pagoda::backend::cuda {
namespace {

using Plan = GraphCache::Plan;

// Stand-in graphs: distinct addresses, each destroyed at most once.
struct Graphs {
  std::vector<int> storage = std::vector<int>(16);
  std::multiset<void*> destroyed;
  void* make(int i) { return &storage[static_cast<size_t>(i)]; }
  GraphCache::Destroy destroy() {
    return [this](void* g) { destroyed.insert(g); };
  }
};

TEST(GraphCache, FirstSeenRunsEachThenCapturesThenReplays) {
  Graphs g;
  {
    GraphCache cache(8, g.destroy());
    const std::vector<uint64_t> decode = {3, 1, 2, 3}, prompt = {3, 1, 2, 4};
    EXPECT_EQ(cache.plan(decode), Plan::kRunEach);
    EXPECT_EQ(cache.plan(prompt), Plan::kRunEach);
    EXPECT_EQ(cache.plan(decode), Plan::kCapture);
    cache.store(g.make(0));
    EXPECT_EQ(cache.graph(), g.make(0));
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(cache.plan(decode), Plan::kReplay);
      EXPECT_EQ(cache.graph(), g.make(0));
    }
    EXPECT_EQ(cache.plan(prompt), Plan::kCapture);
    cache.store(nullptr);  // its capture failed
    EXPECT_EQ(cache.plan(prompt), Plan::kRunEach);
    EXPECT_EQ(cache.plan(prompt), Plan::kRunEach);
    // A prefix of a key, or a key one word longer, is another step.
    EXPECT_EQ(cache.plan(std::vector<uint64_t>{3, 1, 2}), Plan::kRunEach);
    EXPECT_EQ(cache.plan(std::vector<uint64_t>{3, 1, 2, 3, 0}), Plan::kRunEach);
    EXPECT_EQ(cache.plan(decode), Plan::kReplay);
    EXPECT_TRUE(g.destroyed.empty());
  }
  EXPECT_EQ(g.destroyed, std::multiset<void*>({g.make(0)}));
}

TEST(GraphCache, TheLeastRecentlyUsedKeyGoesFirst) {
  Graphs g;
  GraphCache cache(3, g.destroy());
  auto key = [](uint64_t k) { return std::vector<uint64_t>{k, k * 7}; };
  for (uint64_t k = 1; k <= 3; ++k) {
    ASSERT_EQ(cache.plan(key(k)), Plan::kRunEach);
    ASSERT_EQ(cache.plan(key(k)), Plan::kCapture);
    cache.store(g.make(static_cast<int>(k)));
  }
  EXPECT_EQ(cache.plan(key(1)), Plan::kReplay);   // 2 is now the least recently used
  EXPECT_EQ(cache.plan(key(4)), Plan::kRunEach);  // full: 2 goes
  EXPECT_EQ(g.destroyed, std::multiset<void*>({g.make(2)}));
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.plan(key(2)), Plan::kRunEach);  // forgotten: first seen again; 3 goes
  EXPECT_EQ(g.destroyed, std::multiset<void*>({g.make(2), g.make(3)}));
  EXPECT_EQ(cache.plan(key(1)), Plan::kReplay);
  EXPECT_EQ(cache.graph(), g.make(1));
}

TEST(GraphCache, NoCapacityKeepsNothing) {
  Graphs g;
  GraphCache cache(0, g.destroy());
  const std::vector<uint64_t> key = {1, 2};
  EXPECT_EQ(cache.plan(key), Plan::kRunEach);
  EXPECT_EQ(cache.plan(key), Plan::kRunEach);
  EXPECT_EQ(cache.size(), 0u);
}

}  // namespace
}  // namespace pagoda::backend::cuda
