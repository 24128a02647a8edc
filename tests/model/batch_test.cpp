// ForwardBatch handling: several sequences in one pass compute what they compute alone;
// only the requested logit rows come back; check_batch (which the engine's ModelRunner
// runs on every batch it builds) refuses a malformed batch with a message naming the
// problem.

#include <gtest/gtest.h>

#include <functional>

#include "model/model_harness.h"

namespace pagoda::model::testing {
namespace {

constexpr int32_t kBlock = 16;

// Two sequences sharing one KV storage: A in blocks {0, 1}, B in blocks {3, 2}. The
// engine's numerics (kFast), which are batch-invariant: a sequence's logits are bit for
// bit the same alone or in a batch with others.
class BatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_ = load("stories260K.gguf", LoadOptions{.max_batch_tokens = 32, .max_logit_rows = 4},
              backend::CpuNumerics::kFast);
    ASSERT_TRUE(m_.model);
    Expected<std::unique_ptr<backend::KvStorage>> kv =
        m_.backend->allocate_kv(kv_cache_shape(m_.model->config(), 4, kBlock));
    ASSERT_TRUE(kv.ok()) << kv.status().message();
    kv_ = std::move(kv).value();
  }

  // A batch of sequences given as (tokens, first position, block table).
  struct Part {
    std::vector<int32_t> tokens;
    int32_t start;
    std::vector<int32_t> blocks;
  };
  struct Built {
    std::vector<int32_t> tokens, positions, logit_rows;
    std::vector<int64_t> slots;
    std::vector<std::vector<int32_t>> block_tables;  // the sequences' spans point here
    std::vector<backend::SequenceAttention> seqs;
    ForwardBatch batch;
  };
  static std::unique_ptr<Built> build(const std::vector<Part>& parts) {
    auto b = std::make_unique<Built>();
    b->block_tables.reserve(parts.size());
    for (const Part& p : parts) {
      const int32_t first_row = static_cast<int32_t>(b->tokens.size());
      for (size_t i = 0; i < p.tokens.size(); ++i) {
        const int32_t pos = p.start + static_cast<int32_t>(i);
        b->tokens.push_back(p.tokens[i]);
        b->positions.push_back(pos);
        b->slots.push_back(int64_t{p.blocks[pos / kBlock]} * kBlock + pos % kBlock);
      }
      const int32_t n = static_cast<int32_t>(p.tokens.size());
      b->block_tables.push_back(p.blocks);
      b->seqs.push_back({first_row, n, p.start + n, b->block_tables.back()});
      b->logit_rows.push_back(first_row + n - 1);
    }
    b->batch.token_ids = b->tokens;
    b->batch.positions = b->positions;
    b->batch.attention.sequences = b->seqs;
    b->batch.attention.slot_mapping = b->slots;
    b->batch.attention.block_size = kBlock;
    b->batch.logit_rows = b->logit_rows;
    return b;
  }

  Status run(const ForwardBatch& batch, std::vector<float>& logits) {
    logits.assign(batch.logit_rows.size() * 512, 0.0f);
    return m_.model->forward(batch, *kv_, logits);
  }

  LoadedModel m_;
  std::unique_ptr<backend::KvStorage> kv_;
  const std::vector<int32_t> a_ = {1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315,
                                   421, 395, 410, 432, 412, 419};  // 18 tokens: two blocks
  const std::vector<int32_t> b_ = {1, 322, 353, 323, 298};
};

TEST_F(BatchTest, SequencesInOneBatchComputeWhatTheyComputeAlone) {
  std::vector<float> alone_a, alone_b, together;
  ASSERT_TRUE(run(build({{a_, 0, {0, 1}}})->batch, alone_a).ok());
  ASSERT_TRUE(run(build({{b_, 0, {3, 2}}})->batch, alone_b).ok());
  // Both again, B first, in one pass (overwriting the same slots with the same values).
  const Status s = run(build({{b_, 0, {3, 2}}, {a_, 0, {0, 1}}})->batch, together);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(std::vector<float>(together.begin(), together.begin() + 512), alone_b);
  EXPECT_EQ(std::vector<float>(together.begin() + 512, together.end()), alone_a);

  // Then one more token each, decoding both against their caches in one pass.
  std::vector<float> next_together, next_a;
  ASSERT_TRUE(run(build({{{432}, 5, {3, 2}}, {{286}, 18, {0, 1}}})->batch, next_together).ok());
  ASSERT_TRUE(run(build({{{286}, 18, {0, 1}}})->batch, next_a).ok());
  EXPECT_EQ(std::vector<float>(next_together.begin() + 512, next_together.end()), next_a);
}

TEST_F(BatchTest, NoLogitRowsStillFillsTheCache) {
  std::unique_ptr<Built> prefill = build({{a_, 0, {0, 1}}});
  prefill->batch.logit_rows = {};
  std::vector<float> none;
  ASSERT_TRUE(run(prefill->batch, none).ok());
  std::vector<float> after_prefill, reference;
  ASSERT_TRUE(run(build({{{286}, 18, {0, 1}}})->batch, after_prefill).ok());
  ASSERT_TRUE(run(build({{a_, 0, {0, 1}}})->batch, reference).ok());
  ASSERT_TRUE(run(build({{{286}, 18, {0, 1}}})->batch, reference).ok());
  EXPECT_EQ(after_prefill, reference);
}

// Each broken batch is refused with a message.
TEST_F(BatchTest, MalformedBatchesAreRefused) {
  auto check = [&](const ForwardBatch& batch, const backend::KvStorage& kv,
                   std::span<const float> logits) {
    return check_batch(batch, m_.model->config(), m_.model->batch_limits(), kv, logits);
  };
  std::vector<float> out(4 * 512);
  ASSERT_TRUE(check(build({{{383, 286}, 17, {0, 1}}})->batch, *kv_, out).ok());
  auto refused = [&](const std::function<void(Built&)>& breakit, const std::string& message) {
    std::unique_ptr<Built> b = build({{{383, 286}, 17, {0, 1}}});
    breakit(*b);
    const Status s = check(b->batch, *kv_, out);
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s.message(), message);
  };
  refused([](Built& b) { b.tokens[0] = 512; }, "forward: token id 512 is outside the vocabulary of 512");
  refused([](Built& b) { b.tokens[1] = -1; }, "forward: token id -1 is outside the vocabulary of 512");
  refused([](Built& b) { b.positions[1] = 20; },
          "forward: row 1 has position 20, its sequence puts it at 18");
  refused([](Built& b) { b.slots[0] = 5; }, "forward: row 0 writes KV slot 5, its block table says 17");
  refused([](Built& b) { b.seqs[0].block_table = std::span(b.seqs[0].block_table.data(), 1); },
          "forward: a context of 19 tokens needs 2 blocks, the block table has 1");
  refused([](Built& b) { b.seqs[0].n_context = 1; },
          "forward: a sequence has 2 new tokens and a context of 1");
  refused([](Built& b) { b.seqs[0] = {0, 1, 18, b.seqs[0].block_table}; },
          "forward: sequences cover 1 of the batch's 2 rows");
  refused([](Built& b) { b.logit_rows[0] = 2; }, "forward: logit row 2 is outside the batch");
  refused([](Built& b) { b.batch.attention.block_size = 32; },
          "forward: batch block size 32 differs from the KV storage's 16");
  refused([](Built& b) { b.batch.positions = std::span(b.positions.data(), 1); },
          "forward: 2 tokens but 1 positions and 2 slots");
  refused([](Built& b) { b.batch.token_ids = {}; }, "forward: empty batch");

  std::vector<int32_t> block_ids = {0, 9};
  refused([&](Built& b) { b.seqs[0].block_table = block_ids; },
          "forward: block id 9 is outside the KV storage's 4 blocks");

  // Too many tokens, logit rows, or too small a logits buffer.
  std::unique_ptr<Built> big = build({{std::vector<int32_t>(33, 1), 0, {0, 1, 2}}});
  EXPECT_EQ(check(big->batch, *kv_, out).message(),
            "forward: 33 tokens, more than the 32 the model was loaded for");
  std::unique_ptr<Built> rows = build({{{383, 286}, 17, {0, 1}}});
  std::vector<int32_t> five_rows = {0, 1, 0, 1, 0};
  rows->batch.logit_rows = five_rows;
  std::vector<float> five_logits(5 * 512);
  EXPECT_EQ(check(rows->batch, *kv_, five_logits).message(),
            "forward: 5 logit rows, more than the 4 the model was loaded for");
  rows->batch.logit_rows = rows->logit_rows;
  EXPECT_EQ(check(rows->batch, *kv_, std::span<const float>(out).first(511)).message(),
            "forward: the logits buffer holds 511 floats, 1 rows need 512");

  // A KV storage of another shape.
  Expected<std::unique_ptr<backend::KvStorage>> other = m_.backend->allocate_kv(
      backend::KvCacheShape{.n_layers = 4, .n_kv_heads = 4, .head_dim = 8, .block_size = 16,
                            .n_blocks = 4});
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(check(rows->batch, **other, out).message(),
            "forward: KV storage has 4 layers x 4 heads x 8, the model needs 5 x 4 x 8");
}

}  // namespace
}  // namespace pagoda::model::testing
