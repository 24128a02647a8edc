#include "tools/random_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "gguf/reader.h"
#include "model/model.h"
#include "test_data.h"
#include "test_files.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::engine {
namespace {

using tools::RandomModelSpec;
using tools::write_random_model;
using ::pagoda::testing::open_gguf_or_fail;
using ::pagoda::testing::TempFile;

const std::string kStories = pagoda::testing::model_path("stories260K.gguf");

RandomModelSpec tiny_spec(const std::string& architecture) {
  RandomModelSpec spec;
  spec.architecture = architecture;
  spec.n_embd = 64;
  spec.n_layer = 2;
  spec.n_head = 4;
  spec.n_head_kv = architecture == "gpt2" ? 4 : 2;
  spec.n_ff = 96;
  spec.n_vocab = 300;
  spec.n_ctx = 128;
  spec.weight_type = "q8_0";
  spec.n_threads = 2;
  return spec;
}

DType type_of(const gguf::Reader& file, const std::string& tensor) {
  const gguf::TensorInfo* info = file.find_tensor(tensor);
  EXPECT_NE(info, nullptr) << tensor;
  return info ? info->type : DType::I8;
}

// Loads the file and runs one forward pass of five tokens: the logits must be finite
// and must differ between tokens.
void expect_model_runs(const gguf::Reader& file) {
  backend::CpuBackendOptions backend_options;
  backend_options.n_threads = 1;
  std::unique_ptr<backend::Backend> backend = backend::make_cpu_backend(backend_options);
  Expected<std::unique_ptr<model::Model>> model = model::load_model(file, *backend, {});
  ASSERT_TRUE(model.ok()) << model.status().message();
  const model::ModelConfig& config = (*model)->config();
  Expected<std::unique_ptr<backend::KvStorage>> kv =
      backend->allocate_kv(model::kv_cache_shape(config, /*n_blocks=*/1, /*block_size=*/16));
  ASSERT_TRUE(kv.ok()) << kv.status().message();
  // One sequence of five tokens at positions 0..4 in KV block 0, logits of the last.
  const std::vector<int32_t> tokens = {1, 17, 42, 260, 299}, positions = {0, 1, 2, 3, 4};
  const std::vector<int64_t> slots = {0, 1, 2, 3, 4};
  const std::vector<int32_t> block_table = {0}, logit_rows = {4};
  const backend::SequenceAttention sequence{0, 5, 5, block_table};
  model::ForwardBatch batch;
  batch.token_ids = tokens;
  batch.positions = positions;
  batch.attention.sequences = std::span(&sequence, 1);
  batch.attention.slot_mapping = slots;
  batch.attention.block_size = 16;
  batch.logit_rows = logit_rows;
  std::vector<float> logits(static_cast<size_t>(config.n_vocab));
  const Status status = (*model)->forward(batch, **kv, logits);
  ASSERT_TRUE(status.ok()) << status.message();
  float lo = INFINITY, hi = -INFINITY;
  for (float x : logits) {
    ASSERT_TRUE(std::isfinite(x));
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  EXPECT_GT(hi - lo, 1e-3f);
}

class EveryArchitecture : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryArchitecture, WritesAModelThatLoadsAndRuns) {
  TempFile out(GetParam() + ".gguf");
  const Status status = write_random_model(tiny_spec(GetParam()), nullptr, out.path());
  ASSERT_TRUE(status.ok()) << status.message();
  const gguf::Reader file = open_gguf_or_fail(out.path());
  EXPECT_EQ(file.get_or<std::string>("general.architecture", ""), GetParam());
  EXPECT_EQ(type_of(file, "output_norm.weight"), DType::F32);
  EXPECT_EQ(type_of(file, "token_embd.weight"), DType::Q8_0);
  expect_model_runs(file);
}

INSTANTIATE_TEST_SUITE_P(RandomModel, EveryArchitecture,
                         ::testing::Values("llama", "qwen2", "qwen3", "gpt2"));

TEST(RandomModel, KQuantMixAndFallbacksFollowLlamaQuantize) {
  RandomModelSpec spec = tiny_spec("llama");
  spec.n_embd = 256;
  spec.n_head = 8;
  spec.n_head_kv = 4;
  spec.n_ff = 352;  // not a multiple of 256: ffn_down's rows fall back
  spec.weight_type = "q4_K_M";
  TempFile out("mix.gguf");
  ASSERT_TRUE(write_random_model(spec, nullptr, out.path()).ok());
  const gguf::Reader file = open_gguf_or_fail(out.path());
  EXPECT_EQ(file.get_int("general.file_type").value(), 15);
  EXPECT_EQ(type_of(file, "token_embd.weight"), DType::Q4_K);
  EXPECT_EQ(type_of(file, "output.weight"), DType::Q6_K);
  EXPECT_EQ(type_of(file, "blk.0.attn_q.weight"), DType::Q4_K);
  EXPECT_EQ(type_of(file, "blk.0.attn_v.weight"), DType::Q4_K);    // layer 0 of 2: no extra bits
  EXPECT_EQ(type_of(file, "blk.1.attn_v.weight"), DType::Q6_K);    // the last eighth
  EXPECT_EQ(type_of(file, "blk.0.ffn_down.weight"), DType::Q5_0);  // Q4_K cannot hold rows of 352
  EXPECT_EQ(type_of(file, "blk.1.ffn_down.weight"), DType::Q8_0);  // nor Q6_K
  EXPECT_EQ(type_of(file, "blk.1.ffn_norm.weight"), DType::F32);
  expect_model_runs(file);
}

TEST(RandomModel, RowsThatFitNoBlockFallBackToF16) {
  RandomModelSpec spec = tiny_spec("llama");
  spec.n_ff = 100;  // not a multiple of 32
  TempFile out("f16.gguf");
  ASSERT_TRUE(write_random_model(spec, nullptr, out.path()).ok());
  const gguf::Reader file = open_gguf_or_fail(out.path());
  EXPECT_EQ(type_of(file, "blk.0.ffn_down.weight"), DType::F16);
  EXPECT_EQ(type_of(file, "blk.0.ffn_up.weight"), DType::Q8_0);
}

TEST(RandomModel, TheSameSeedWritesTheSameBytesWhateverTheThreads) {
  auto bytes_of = [](RandomModelSpec spec, const std::string& name) {
    TempFile out(name);
    EXPECT_TRUE(write_random_model(spec, nullptr, out.path()).ok());
    std::ifstream in(out.path(), std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(in), {});
  };
  RandomModelSpec spec = tiny_spec("qwen2");
  const std::vector<char> a = bytes_of(spec, "a.gguf");
  spec.n_threads = 1;
  EXPECT_EQ(a, bytes_of(spec, "b.gguf"));
  spec.seed = 2;
  EXPECT_NE(a, bytes_of(spec, "c.gguf"));
}

TEST(RandomModel, CopiesTheTokenizerOfAnotherFile) {
  const gguf::Reader source = open_gguf_or_fail(kStories);
  RandomModelSpec spec = tiny_spec("llama");
  spec.n_vocab = 0;  // the tokenizer's
  TempFile out("tok.gguf");
  const Status status = write_random_model(spec, &source, out.path());
  ASSERT_TRUE(status.ok()) << status.message();
  const gguf::Reader file = open_gguf_or_fail(out.path());
  for (const auto& [key, value] : source.metadata()) {
    if (!key.starts_with("tokenizer.")) continue;
    const gguf::Value* copied = file.find(key);
    ASSERT_NE(copied, nullptr) << key;
    EXPECT_TRUE(*copied == value) << key;
  }
  EXPECT_EQ(file.find_tensor("token_embd.weight")->shape[1], 512);
  spec.n_vocab = 300;
  EXPECT_EQ(write_random_model(spec, &source, out.path()).message(),
            "vocabulary size 300 differs from the 512 tokens of " + kStories);
}

TEST(RandomModel, TheMadeUpVocabularyRoundTripsText) {
  TempFile out("vocab.gguf");
  ASSERT_TRUE(write_random_model(tiny_spec("llama"), nullptr, out.path()).ok());
  const gguf::Reader file = open_gguf_or_fail(out.path());
  Expected<tokenizer::Tokenizer> tokenizer = tokenizer::Tokenizer::from_gguf(file);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  EXPECT_EQ(tokenizer->n_vocab(), 300);
  const std::string text = "Hello, world! Ünïcödé ab ba";
  EXPECT_EQ(tokenizer->encode(text, /*add_special=*/true, false).front(), tokenizer->bos());
  const std::vector<int32_t> tokens = tokenizer->encode(text, /*add_special=*/false, false);
  EXPECT_EQ(tokenizer->decode(tokens), text);
  EXPECT_EQ(tokenizer->token_text(tokens[0]), "\u2581");  // the space piece, then bytes
}

TEST(RandomModel, ControlTokensTakeTheLastIds) {
  RandomModelSpec spec = tiny_spec("llama");
  spec.control_tokens = {"[TOOL_CALLS]", "<|python_tag|>"};
  TempFile out("controls.gguf");
  ASSERT_TRUE(write_random_model(spec, nullptr, out.path()).ok());
  const gguf::Reader file = open_gguf_or_fail(out.path());
  Expected<tokenizer::Tokenizer> tokenizer = tokenizer::Tokenizer::from_gguf(file);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  EXPECT_EQ(tokenizer->n_vocab(), 300);
  EXPECT_EQ(tokenizer->find_token("[TOOL_CALLS]"), 298);
  EXPECT_EQ(tokenizer->find_token("<|python_tag|>"), 299);
  EXPECT_TRUE(tokenizer->is_control(298));
  EXPECT_TRUE(tokenizer->is_control(299));
  EXPECT_EQ(tokenizer->encode("[TOOL_CALLS]", false, /*parse_special=*/true),
            std::vector<int32_t>{298});
  EXPECT_EQ(tokenizer->decode(std::vector<int32_t>{298}), "");

  const gguf::Reader source = open_gguf_or_fail(kStories);
  spec.n_vocab = 0;
  EXPECT_EQ(write_random_model(spec, &source, out.path()).message(),
            "control tokens are added to the built-in vocabulary only, not to " + kStories +
                "'s");
}

TEST(RandomModel, RejectsImpossibleShapes) {
  TempFile out("bad.gguf");
  RandomModelSpec spec = tiny_spec("mamba");
  EXPECT_EQ(write_random_model(spec, nullptr, out.path()).code(), ErrorCode::kUnsupported);
  spec = tiny_spec("llama");
  spec.n_head_kv = 3;
  EXPECT_EQ(write_random_model(spec, nullptr, out.path()).message(),
            "head count 4 is not a multiple of the KV head count 3");
  spec = tiny_spec("llama");
  spec.weight_type = "q9_9";
  EXPECT_EQ(write_random_model(spec, nullptr, out.path()).code(), ErrorCode::kInvalidArgument);
  spec = tiny_spec("llama");
  spec.n_vocab = 100;  // too small for the byte vocabulary
  EXPECT_EQ(write_random_model(spec, nullptr, out.path()).code(), ErrorCode::kInvalidArgument);
  spec = tiny_spec("llama");
  spec.n_layer = 0;
  EXPECT_EQ(write_random_model(spec, nullptr, out.path()).message(),
            "layer count must be positive, got 0");
  EXPECT_FALSE(std::filesystem::exists(out.path()));
}

}  // namespace
}  // namespace pagoda::engine
