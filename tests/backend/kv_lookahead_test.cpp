#include "backend/cpu/attention/kv_lookahead.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <span>
#include <vector>

#include "backend/cpu/attention/kv_storage_cpu.h"

namespace pagoda::backend::cpu {
namespace {

// 3 layers, 2 KV heads of 32 f16 values: 128-byte rows, 2 KiB blocks of 16 tokens.
constexpr KvCacheShape kShape{.n_layers = 3, .n_kv_heads = 2, .head_dim = 32, .block_size = 16, .n_blocks = 8};
constexpr uintptr_t kBlockBytes = 16 * 128;

std::unique_ptr<KvStorage> storage() {
  auto kv = CpuKvStorage::create(kShape);
  EXPECT_TRUE(kv.ok());
  return std::move(*kv);
}

// Every line a cursor gives, asked for `per_call` at a time.
std::vector<uintptr_t> drain(LookaheadCursor& c, int per_call) {
  std::vector<uintptr_t> lines;
  while (take_lines(c, per_call, [&](uintptr_t line) { lines.push_back(line); }) > 0) {
  }
  return lines;
}

// The lines of blocks `blocks` of `layer`, K then V.
std::set<uintptr_t> lines_of(KvStorage& kv, int32_t layer, const std::vector<int32_t>& blocks) {
  std::set<uintptr_t> lines;
  for (const TensorView& array : {kv.keys(layer), kv.values(layer)}) {
    for (const int32_t block : blocks) {
      const uintptr_t first = reinterpret_cast<uintptr_t>(array.data) + static_cast<uintptr_t>(block) * kBlockBytes;
      for (uintptr_t at = first; at < first + kBlockBytes; at += 64) lines.insert(at);
    }
  }
  return lines;
}

// A batch of one decoding sequence of n_context tokens in the blocks of `table`.
struct OneSequence {
  OneSequence(std::span<const int32_t> table, int32_t n_context)
      : seq{.query_start = 0, .n_query = 1, .n_context = n_context, .block_table = table},
        batch{.sequences = {&seq, 1}, .slot_mapping = {}, .block_size = 16} {}
  OneSequence(const OneSequence&) = delete;  // batch points at seq
  SequenceAttention seq;
  AttentionBatch batch;
};

TEST(KvLookahead, PlansTheNextLayersBlocksInUseSharedOutOverTheThreads) {
  auto kv = storage();
  // A: 20 tokens in blocks 5, 2; B: 16 tokens in block 7 (its table's block 3 is not
  // in use yet); C: no tokens.
  const int32_t table_a[] = {5, 2}, table_b[] = {7, 3};
  const SequenceAttention seqs[] = {{.query_start = 0, .n_query = 1, .n_context = 20, .block_table = table_a},
                                    {.query_start = 1, .n_query = 1, .n_context = 16, .block_table = table_b},
                                    {.query_start = 2, .n_query = 0, .n_context = 0, .block_table = {}}};
  const AttentionBatch batch{.sequences = seqs, .slot_mapping = {}, .block_size = 16};
  KvLookahead lookahead;
  lookahead.plan(*kv, 1, batch, 2);
  ASSERT_NE(lookahead.cursor(0), nullptr);
  ASSERT_NE(lookahead.cursor(1), nullptr);
  EXPECT_EQ(lookahead.cursor(2), nullptr);
  const std::vector<uintptr_t> first = drain(*lookahead.cursor(0), 5), second = drain(*lookahead.cursor(1), 7);
  // 6 ranges (3 blocks, K and V) of 32 lines, dealt out range by range: 3 to each thread.
  EXPECT_EQ(first.size(), 3 * kBlockBytes / 64);
  EXPECT_EQ(second.size(), 3 * kBlockBytes / 64);
  std::set<uintptr_t> all(first.begin(), first.end());
  all.insert(second.begin(), second.end());
  EXPECT_EQ(all.size(), first.size() + second.size()) << "a line given to both threads";
  EXPECT_EQ(all, lines_of(*kv, 1, {5, 2, 7}));
  // A cursor that has given its share gives nothing more.
  EXPECT_EQ(take_lines(*lookahead.cursor(0), 4, [](uintptr_t) {}), 0);
}

TEST(KvLookahead, TakesAtMostTheLinesAskedForAndGoesOnWhereItStopped) {
  auto kv = storage();
  const int32_t table[] = {4};
  const OneSequence one(table, 3);
  KvLookahead lookahead;
  lookahead.plan(*kv, 2, one.batch, 1);
  std::vector<uintptr_t> lines;
  auto keep = [&](uintptr_t line) { lines.push_back(line); };
  EXPECT_EQ(take_lines(*lookahead.cursor(0), 3, keep), 3);
  EXPECT_EQ(take_lines(*lookahead.cursor(0), 0, keep), 0);
  EXPECT_EQ(take_lines(*lookahead.cursor(0), 1000, keep), static_cast<int>(2 * kBlockBytes / 64 - 3));
  const uintptr_t k = reinterpret_cast<uintptr_t>(kv->keys(2).data) + 4 * kBlockBytes;
  ASSERT_EQ(lines.size(), 2 * kBlockBytes / 64);
  for (size_t i = 0; i < kBlockBytes / 64; ++i) EXPECT_EQ(lines[i], k + 64 * i);  // in address order
}

TEST(KvLookahead, NothingPastTheLastLayerOrAfterClear) {
  auto kv = storage();
  const int32_t table[] = {1};
  const OneSequence one(table, 5);
  KvLookahead lookahead;
  EXPECT_EQ(lookahead.cursor(0), nullptr);  // no plan yet
  lookahead.plan(*kv, 0, one.batch, 2);
  ASSERT_NE(lookahead.cursor(0), nullptr);
  lookahead.plan(*kv, kShape.n_layers, one.batch, 2);  // after the last layer's attention
  EXPECT_EQ(lookahead.cursor(0), nullptr);
  lookahead.plan(*kv, 0, one.batch, 2);
  lookahead.clear();
  EXPECT_EQ(lookahead.cursor(0), nullptr);
  fetch_lookahead(nullptr);  // the kernels' call without a plan does nothing
}

TEST(KvLookahead, BlockIdsOutsideTheStorageAreLeftOut) {
  auto kv = storage();
  const int32_t table[] = {-1, 8, 6};
  const OneSequence one(table, 48);
  KvLookahead lookahead;
  lookahead.plan(*kv, 0, one.batch, 1);
  const std::vector<uintptr_t> lines = drain(*lookahead.cursor(0), 64);
  EXPECT_EQ(std::set<uintptr_t>(lines.begin(), lines.end()), lines_of(*kv, 0, {6}));
}

}  // namespace
}  // namespace pagoda::backend::cpu
