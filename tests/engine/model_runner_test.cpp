// ModelRunner: the forward batch it builds from a step (ids, positions, slots, sequences,
// logit rows), the steps it refuses, paged multi-request passes computing what each
// request computes alone, and copy-on-write block copies done before the pass.

#include "engine/model_runner.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "engine_test_util.h"

namespace pagoda::engine {
namespace {

using testing::BatchedModel;
using testing::load_batched_model;

constexpr int32_t kBlock = 16;
constexpr int32_t kVocab = 512;  // stories260K

std::vector<int32_t> tokens_from(int32_t seed, int32_t n) {
  std::vector<int32_t> tokens(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) tokens[static_cast<size_t>(i)] = 1 + (seed * 131 + i * 37) % 500;
  return tokens;
}

class ModelRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_ = load_batched_model("stories260K.gguf", {.max_batch_tokens = 64, .max_logit_rows = 4});
    ASSERT_TRUE(m_.model);
    kv_ = allocate(8);
    ASSERT_TRUE(kv_);
    Expected<ModelRunner> runner = ModelRunner::create(*m_.model, *m_.backend, *kv_, kLimits);
    ASSERT_TRUE(runner.ok()) << runner.status().message();
    runner_ = std::make_unique<ModelRunner>(std::move(runner).value());
  }

  std::unique_ptr<backend::KvStorage> allocate(int32_t n_blocks) {
    Expected<std::unique_ptr<backend::KvStorage>> kv =
        m_.backend->allocate_kv(model::kv_cache_shape(m_.model->config(), n_blocks, kBlock));
    EXPECT_TRUE(kv.ok()) << kv.status().message();
    return kv.ok() ? std::move(kv).value() : nullptr;
  }

  // Logits of one step on runner_, copied out.
  std::vector<float> step(std::span<const RunnerSequence> sequences,
                          std::span<const kv::BlockCopy> copies = {}) {
    Expected<StepLogits> logits = runner_->execute(copies, sequences);
    EXPECT_TRUE(logits.ok()) << logits.status().message();
    if (!logits.ok()) return {};
    std::vector<float> out;
    for (int32_t r = 0; r < logits->n_rows(); ++r) {
      out.insert(out.end(), logits->row(r).begin(), logits->row(r).end());
    }
    return out;
  }

  static constexpr RunnerLimits kLimits{.max_batch_tokens = 64, .max_sequences = 4};
  BatchedModel m_;
  std::unique_ptr<backend::KvStorage> kv_;
  std::unique_ptr<ModelRunner> runner_;
};

TEST_F(ModelRunnerTest, BuildsTheForwardBatchOfAStep) {
  const std::vector<int32_t> a = tokens_from(1, 20), b = tokens_from(2, 5), c = tokens_from(3, 40);
  const std::vector<int32_t> table_a = {6, 2}, table_b = {4}, table_c = {0, 1, 3};
  const std::vector<RunnerSequence> step = {
      {.first_position = 16, .n_tokens = 4, .samples = true, .tokens = a, .block_table = table_a},
      {.first_position = 0, .n_tokens = 5, .samples = false, .tokens = b, .block_table = table_b},
      {.first_position = 33, .n_tokens = 1, .samples = true, .tokens = c, .block_table = table_c},
  };
  Expected<model::ForwardBatch> batch = runner_->prepare(step);
  ASSERT_TRUE(batch.ok()) << batch.status().message();

  const std::vector<int32_t> ids = {a[16], a[17], a[18], a[19], b[0],
                                    b[1],  b[2],  b[3],  b[4],  c[33]};
  EXPECT_EQ(std::vector<int32_t>(batch->token_ids.begin(), batch->token_ids.end()), ids);
  const std::vector<int32_t> positions = {16, 17, 18, 19, 0, 1, 2, 3, 4, 33};
  EXPECT_EQ(std::vector<int32_t>(batch->positions.begin(), batch->positions.end()), positions);
  // A: block 2 rows 0-3; B: block 4 rows 0-4; C: position 33 is block 3, row 1.
  const std::vector<int64_t> slots = {32, 33, 34, 35, 64, 65, 66, 67, 68, 49};
  const std::span<const int64_t> got_slots = batch->attention.slot_mapping;
  EXPECT_EQ(std::vector<int64_t>(got_slots.begin(), got_slots.end()), slots);
  ASSERT_EQ(batch->attention.sequences.size(), 3u);
  const backend::SequenceAttention& sa = batch->attention.sequences[0];
  const backend::SequenceAttention& sb = batch->attention.sequences[1];
  const backend::SequenceAttention& sc = batch->attention.sequences[2];
  EXPECT_EQ(std::tuple(sa.query_start, sa.n_query, sa.n_context), std::tuple(0, 4, 20));
  EXPECT_EQ(std::tuple(sb.query_start, sb.n_query, sb.n_context), std::tuple(4, 5, 5));
  EXPECT_EQ(std::tuple(sc.query_start, sc.n_query, sc.n_context), std::tuple(9, 1, 34));
  EXPECT_EQ(sc.block_table.data(), table_c.data());
  EXPECT_EQ(batch->attention.block_size, kBlock);
  EXPECT_EQ(std::vector<int32_t>(batch->logit_rows.begin(), batch->logit_rows.end()),
            (std::vector<int32_t>{3, 9}));
}

TEST_F(ModelRunnerTest, RefusesStepsItCannotBuild) {
  const std::vector<int32_t> a = tokens_from(1, 20), long_prompt = tokens_from(2, 65);
  const std::vector<int32_t> one_block = {0}, five_blocks = {0, 1, 2, 3, 4};
  auto refused = [&](std::vector<RunnerSequence> step, const std::string& message) {
    Expected<model::ForwardBatch> batch = runner_->prepare(step);
    ASSERT_FALSE(batch.ok());
    EXPECT_EQ(batch.status().message(), message);
  };
  const RunnerSequence good{
      .first_position = 0, .n_tokens = 16, .samples = true, .tokens = a, .block_table = one_block};
  refused({}, "model runner: a step must run at least one request");
  refused({good, good, good, good, good}, "model runner: 5 requests in a step, more than 4");
  refused(
      {{.first_position = 0, .n_tokens = 65, .tokens = long_prompt, .block_table = five_blocks}},
      "model runner: 65 tokens in a step, more than 64");
  refused({{.first_position = 3, .n_tokens = 0, .tokens = a, .block_table = one_block}},
          "model runner: a request runs 0 tokens from position 3");
  refused({{.first_position = 16, .n_tokens = 5, .tokens = a, .block_table = five_blocks}},
          "model runner: a request runs tokens up to 21 but has 20");
  refused({{.first_position = 0, .n_tokens = 17, .tokens = a, .block_table = one_block}},
          "model runner: a request of 17 tokens has 1 KV blocks, needs 2");
  // What the runner builds is checked against the model and the storage too.
  std::vector<int32_t> bad_token = a;
  bad_token[3] = 512;
  const std::vector<int32_t> outside = {40};
  refused({{.first_position = 0, .n_tokens = 16, .tokens = bad_token, .block_table = one_block}},
          "forward: token id 512 is outside the vocabulary of 512");
  refused({{.first_position = 0, .n_tokens = 16, .tokens = a, .block_table = outside}},
          "forward: block id 40 is outside the KV storage's " +
              std::to_string(kv_->shape().n_blocks) + " blocks");
  EXPECT_TRUE(runner_->prepare(std::vector<RunnerSequence>{good}).ok());
}

// Three requests, one pass, blocks scattered and shared storage: each request's logits
// equal, bit for bit, those of the same request alone on a storage of its own (blocks
// 0, 1, ...), for a prefill step and for the decode step after it.
TEST_F(ModelRunnerTest, SeveralRequestsInOnePassComputeWhatEachComputesAlone) {
  const std::vector<std::vector<int32_t>> prompts = {tokens_from(4, 23), tokens_from(5, 7),
                                                     tokens_from(6, 17)};
  const std::vector<std::vector<int32_t>> tables = {{5, 1}, {7}, {0, 3}};
  const std::vector<int32_t> next_tokens = {17, 250, 3};
  std::vector<std::vector<int32_t>> grown = prompts;
  for (size_t i = 0; i < grown.size(); ++i) grown[i].push_back(next_tokens[i]);

  std::vector<RunnerSequence> prefill, decode;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto n = static_cast<int32_t>(prompts[i].size());
    prefill.push_back({0, n, true, grown[i], tables[i]});
    decode.push_back({n, 1, true, grown[i], tables[i]});
  }
  const std::vector<float> together_prefill = step(prefill);
  const std::vector<float> together_decode = step(decode);
  ASSERT_EQ(together_prefill.size(), 3u * kVocab);

  for (size_t i = 0; i < prompts.size(); ++i) {
    kv_ = allocate(2);
    Expected<ModelRunner> alone = ModelRunner::create(*m_.model, *m_.backend, *kv_, kLimits);
    ASSERT_TRUE(alone.ok());
    runner_ = std::make_unique<ModelRunner>(std::move(alone).value());
    const std::vector<int32_t> contiguous = {0, 1};
    RunnerSequence p = prefill[i], d = decode[i];
    p.block_table = d.block_table = contiguous;
    const std::vector<float> alone_prefill = step(std::span(&p, 1));
    const std::vector<float> alone_decode = step(std::span(&d, 1));
    const auto row = [&](const std::vector<float>& all) {
      return std::vector<float>(all.begin() + static_cast<std::ptrdiff_t>(i * kVocab),
                                all.begin() + static_cast<std::ptrdiff_t>((i + 1) * kVocab));
    };
    EXPECT_EQ(row(together_prefill), alone_prefill) << "request " << i;
    EXPECT_EQ(row(together_decode), alone_decode) << "request " << i;
  }
}

// Only the sampling requests' last rows come back, in order.
TEST_F(ModelRunnerTest, ReturnsLogitsOfSamplingRequestsOnly) {
  const std::vector<int32_t> a = tokens_from(7, 9), b = tokens_from(8, 12);
  const std::vector<int32_t> table_a = {0}, table_b = {1};
  const std::vector<RunnerSequence> both = {{0, 9, false, a, table_a}, {0, 12, true, b, table_b}};
  const std::vector<float> logits = step(both);
  ASSERT_EQ(logits.size(), static_cast<size_t>(kVocab));
  const std::vector<RunnerSequence> b_alone = {{0, 12, true, b, table_b}};
  EXPECT_EQ(step(b_alone), logits);
  const std::vector<RunnerSequence> none = {{0, 9, false, a, table_a}};
  EXPECT_TRUE(step(none).empty());
}

// Bytes of block `block` in every layer's K and V arrays, concatenated, copied out
// through the backend (its memory may be a GPU's).
std::vector<char> block_bytes(backend::Backend& backend, backend::KvStorage& kv, int32_t block) {
  const backend::KvCacheShape& shape = kv.shape();
  const size_t n = shape.token_bytes() * static_cast<size_t>(shape.block_size);
  std::vector<char> bytes;
  for (int32_t layer = 0; layer < shape.n_layers; ++layer) {
    for (backend::TensorView rows : {kv.keys(layer), kv.values(layer)}) {
      rows.data = static_cast<char*>(rows.data) + static_cast<size_t>(block) * n;
      rows.ne[1] = shape.block_size;
      std::vector<char> part(n);
      backend.copy_to_host(rows, part.data());
      bytes.insert(bytes.end(), part.begin(), part.end());
    }
  }
  backend.synchronize();
  return bytes;
}

// A request prefilled into blocks {2, 6}, then decoded after its half-full block 6 was
// copied to block 4 (copy on write): the decode reads the copy and gives the logits of
// decoding in place; the copy holds every layer's K and V of the original.
TEST_F(ModelRunnerTest, CopiesBlocksBeforeThePass) {
  std::vector<int32_t> tokens = tokens_from(9, 21);
  const std::vector<int32_t> original = {2, 6}, copied = {2, 4};
  ASSERT_FALSE(step(std::vector<RunnerSequence>{{0, 20, true, tokens, original}}).empty());
  const std::vector<char> block_6 = block_bytes(*m_.backend, *kv_, 6);
  ASSERT_NE(block_bytes(*m_.backend, *kv_, 4), block_6);

  const std::vector<kv::BlockCopy> copies = {{.src = 6, .dst = 4}};
  const std::vector<float> from_copy =
      step(std::vector<RunnerSequence>{{20, 1, true, tokens, copied}}, copies);
  // Block 4 now has block 6's first four rows and the new token's row; block 6 is as it was.
  EXPECT_EQ(block_bytes(*m_.backend, *kv_, 6), block_6);
  const std::vector<float> in_place =
      step(std::vector<RunnerSequence>{{20, 1, true, tokens, original}});
  ASSERT_FALSE(from_copy.empty());
  EXPECT_EQ(from_copy, in_place);
  EXPECT_EQ(block_bytes(*m_.backend, *kv_, 4), block_bytes(*m_.backend, *kv_, 6));
}

TEST_F(ModelRunnerTest, CopyToABlockOutsideTheStorageFailsTheStep) {
  const std::vector<int32_t> tokens = tokens_from(10, 4), table = {0};
  const std::vector<kv::BlockCopy> copies = {{.src = 0, .dst = 8}};
  const std::vector<RunnerSequence> step_of = {{0, 4, true, tokens, table}};
  Expected<StepLogits> logits = runner_->execute(copies, step_of);
  ASSERT_FALSE(logits.ok());
  EXPECT_EQ(logits.status().message(), "kv block copy 0 -> 8 is outside the 8 blocks of the cache");
  EXPECT_TRUE(runner_->execute({}, step_of).ok());  // the error was taken, not left behind
}

TEST_F(ModelRunnerTest, CreateChecksLimitsAndStorage) {
  EXPECT_FALSE(ModelRunner::create(*m_.model, *m_.backend, *kv_, {0, 4}).ok());
  EXPECT_FALSE(ModelRunner::create(*m_.model, *m_.backend, *kv_, {64, 0}).ok());
  backend::KvCacheShape other = model::kv_cache_shape(m_.model->config(), 2, kBlock);
  other.n_layers += 1;
  Expected<std::unique_ptr<backend::KvStorage>> wrong = m_.backend->allocate_kv(other);
  ASSERT_TRUE(wrong.ok());
  EXPECT_FALSE(ModelRunner::create(*m_.model, *m_.backend, **wrong, kLimits).ok());
}

}  // namespace
}  // namespace pagoda::engine
