// ModelConfig::from_gguf on the test models and on headers built to test one key at a
// time: defaults, integer types, and the errors for contradictory values.

#include <gtest/gtest.h>

#include "model/config.h"
#include "model/gguf_builder.h"

namespace pagoda::model {
namespace {

using testing::model_path;
using testing::parse;

ModelConfig config_of(const std::string& file) {
  Expected<gguf::Reader> reader = gguf::Reader::open(model_path(file));
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  if (!reader.ok()) return {};
  Expected<ModelConfig> config = ModelConfig::from_gguf(*reader);
  EXPECT_TRUE(config.ok()) << config.status().message();
  return config.ok() ? *config : ModelConfig{};
}

// Every key a llama file must have, nothing optional.
gguf::Writer llama_header() {
  gguf::Writer w;
  EXPECT_TRUE(w.set_string("general.architecture", "llama").ok());
  EXPECT_TRUE(w.set_u32("llama.context_length", 2048).ok());
  EXPECT_TRUE(w.set_u32("llama.embedding_length", 64).ok());
  EXPECT_TRUE(w.set_u32("llama.block_count", 2).ok());
  EXPECT_TRUE(w.set_u32("llama.feed_forward_length", 172).ok());
  EXPECT_TRUE(w.set_u32("llama.attention.head_count", 8).ok());
  EXPECT_TRUE(w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-6f).ok());
  EXPECT_TRUE(w.set_u32("llama.vocab_size", 300).ok());
  return w;
}

// from_gguf on a header: the config, or the error message.
Expected<ModelConfig> read(const gguf::Writer& writer) {
  const testing::ParsedFile file = parse(writer);
  if (!file.reader) return internal_error("unparseable header");
  return ModelConfig::from_gguf(*file.reader);
}

std::string error_of(const gguf::Writer& writer) {
  const Expected<ModelConfig> config = read(writer);
  return config.ok() ? "ok" : config.status().message();
}

TEST(ModelConfig, Stories260K) {
  const ModelConfig c = config_of("stories260K.gguf");
  EXPECT_EQ(c.architecture, "llama");
  EXPECT_EQ(c.name, "llama");
  EXPECT_EQ(c.n_vocab, 512);  // no vocab_size key: the token embedding's rows
  EXPECT_EQ(c.n_ctx_train, 2048);
  EXPECT_EQ(c.n_embd, 64);
  EXPECT_EQ(c.n_layer, 5);
  EXPECT_EQ(c.n_head, 8);
  EXPECT_EQ(c.n_head_kv, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.head_dim_v, 8);
  EXPECT_EQ(c.n_ff, 172);
  EXPECT_EQ(c.n_rot, 8);
  EXPECT_EQ(c.rms_eps, 1e-5f);
  EXPECT_EQ(c.rope_freq_base, 10000.0f);  // absent: the default
  EXPECT_EQ(c.rope_freq_scale, 1.0f);
  EXPECT_FALSE(c.rope_neox);
}

// The qwen files also carry stray llama.* keys of another shape: only qwen3.* counts.
TEST(ModelConfig, Qwen3ReadsItsOwnKeysAndKeyLength) {
  PAGODA_SKIP_IF_MISSING(model_path("rand-qwen3-Q6_K.gguf"));
  const ModelConfig c = config_of("rand-qwen3-Q6_K.gguf");
  EXPECT_EQ(c.architecture, "qwen3");
  EXPECT_EQ(c.n_embd, 256);
  EXPECT_EQ(c.n_layer, 4);
  EXPECT_EQ(c.n_head, 8);
  EXPECT_EQ(c.n_head_kv, 4);
  EXPECT_EQ(c.head_dim, 64);  // attention.key_length, not 256 / 8
  EXPECT_EQ(c.q_dim(), 512);
  EXPECT_EQ(c.kv_dim(), 256);
  EXPECT_EQ(c.n_rot, 64);     // absent: the head size
  EXPECT_EQ(c.n_vocab, 32000);
  EXPECT_EQ(c.rms_eps, 1e-6f);
  EXPECT_EQ(c.rope_freq_base, 1e6f);
  EXPECT_TRUE(c.rope_neox);
}

TEST(ModelConfig, Qwen2) {
  PAGODA_SKIP_IF_MISSING(model_path("rand-qwen2-Q8_0.gguf"));
  const ModelConfig qwen2 = config_of("rand-qwen2-Q8_0.gguf");
  EXPECT_EQ(qwen2.n_layer, 4);
  EXPECT_EQ(qwen2.head_dim, 32);
  EXPECT_EQ(qwen2.rope_freq_base, 1e6f);
  EXPECT_TRUE(qwen2.rope_neox);
}

TEST(ModelConfig, Llama) {
  PAGODA_SKIP_IF_MISSING(model_path("rand-llama-Q4_K_M.gguf"));
  const ModelConfig llama = config_of("rand-llama-Q4_K_M.gguf");
  EXPECT_EQ(llama.n_vocab, 32000);
  EXPECT_EQ(llama.n_ff, 768);
  EXPECT_EQ(llama.n_rot, 32);
  EXPECT_FALSE(llama.rope_neox);
}

TEST(ModelConfig, Gpt2) {
  PAGODA_SKIP_IF_MISSING(model_path("rand-gpt2-Q8_0.gguf"));
  const ModelConfig gpt2 = config_of("rand-gpt2-Q8_0.gguf");
  EXPECT_EQ(gpt2.architecture, "gpt2");
  EXPECT_EQ(gpt2.n_vocab, 50257);
  EXPECT_EQ(gpt2.n_head_kv, 8);  // absent: head_count
  EXPECT_EQ(gpt2.head_dim, 32);
  EXPECT_EQ(gpt2.norm_eps, 1e-5f);
}

TEST(ModelConfig, DefaultsWhenKeysAreAbsent) {
  const Expected<ModelConfig> c = read(llama_header());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->n_head_kv, 8);
  EXPECT_EQ(c->head_dim, 8);
  EXPECT_EQ(c->head_dim_v, 8);
  EXPECT_EQ(c->n_rot, 8);
  EXPECT_EQ(c->rope_freq_base, 10000.0f);
  EXPECT_EQ(c->rope_freq_scale, 1.0f);
  EXPECT_EQ(c->n_vocab, 300);
  EXPECT_EQ(c->rms_eps, 1e-6f);
}

TEST(ModelConfig, CountsMayBeSignedOrWide) {
  gguf::Writer w = llama_header();
  ASSERT_TRUE(w.set_i32("llama.block_count", 3).ok());
  ASSERT_TRUE(w.set_u64("llama.attention.head_count_kv", 2).ok());
  const Expected<ModelConfig> c = read(w);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->n_layer, 3);
  EXPECT_EQ(c->n_head_kv, 2);

  ASSERT_TRUE(w.set_f32("llama.block_count", 3.0f).ok());
  EXPECT_EQ(error_of(w),
            "model.gguf: key 'llama.block_count' has type float32, expected an integer");
}

TEST(ModelConfig, VocabularySizeFromTheTokenEmbedding) {
  gguf::Writer w;
  const testing::ParsedFile header = parse(llama_header());
  for (const auto& [key, value] : header.reader->metadata()) {
    if (key != "llama.vocab_size") {
      ASSERT_TRUE(w.set(key, value).ok());
    }
  }
  EXPECT_EQ(error_of(w), "model.gguf: missing tensor 'token_embd.weight'");
  const std::vector<uint8_t> zeros(64 * 77 * 4, 0);
  ASSERT_TRUE(w.add_tensor("token_embd.weight", DType::F32, {64, 77}, zeros).ok());
  const Expected<ModelConfig> c = read(w);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->n_vocab, 77);
}

TEST(ModelConfig, HeadSizeFromKeyLengthWhenHeadsDoNotDivideTheWidth) {
  gguf::Writer w = llama_header();
  ASSERT_TRUE(w.set_u32("llama.attention.head_count", 6).ok());
  ASSERT_TRUE(w.set_u32("llama.attention.head_count_kv", 3).ok());
  EXPECT_EQ(error_of(w),
            "model.gguf: 'llama.embedding_length' (64) is not divisible by "
            "'llama.attention.head_count' (6) and 'llama.attention.key_length' is absent");
  ASSERT_TRUE(w.set_u32("llama.attention.key_length", 16).ok());
  const Expected<ModelConfig> c = read(w);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->head_dim, 16);
  EXPECT_EQ(c->q_dim(), 96);
  EXPECT_EQ(c->n_rot, 16);
}

TEST(ModelConfig, ContradictoryValuesAreErrors) {
  gguf::Writer w = llama_header();
  ASSERT_TRUE(w.set_u32("llama.attention.head_count_kv", 3).ok());
  EXPECT_EQ(error_of(w),
            "model.gguf: 'llama.attention.head_count' (8) is not a multiple of "
            "'llama.attention.head_count_kv' (3)");

  w = llama_header();
  ASSERT_TRUE(w.set_u32("llama.block_count", 0).ok());
  EXPECT_EQ(error_of(w), "model.gguf: key 'llama.block_count' is 0, expected a positive count");

  w = llama_header();
  ASSERT_TRUE(w.set_i32("llama.embedding_length", -64).ok());
  EXPECT_EQ(error_of(w),
            "model.gguf: key 'llama.embedding_length' is -64, expected a positive count");

  w = llama_header();
  ASSERT_TRUE(w.set_u32("llama.rope.dimension_count", 12).ok());
  EXPECT_EQ(error_of(w),
            "model.gguf: 'llama.rope.dimension_count' (12) must be even and at most the head "
            "size (8)");

  w = llama_header();
  ASSERT_TRUE(w.set_u32("llama.attention.value_length", 16).ok());
  EXPECT_EQ(error_of(w),
            "model.gguf: 'llama.attention.value_length' (16) differs from the key length (8): "
            "not supported");

  w = llama_header();
  ASSERT_TRUE(w.set_f32("llama.rope.freq_base", -1.0f).ok());
  EXPECT_EQ(error_of(w), "model.gguf: key 'llama.rope.freq_base' is -1.000000, out of range");
}

TEST(ModelConfig, RequiredKeys) {
  gguf::Writer w;
  EXPECT_EQ(error_of(w), "model.gguf: key 'general.architecture' not found");

  ASSERT_TRUE(w.set_string("general.architecture", "mamba").ok());
  EXPECT_EQ(error_of(w),
            "model.gguf: unknown architecture 'mamba' (supported: llama, qwen2, qwen3, gpt2)");
  EXPECT_EQ(read(w).status().code(), ErrorCode::kUnsupported);

  // The reference requires the norm epsilon of each architecture.
  const testing::ParsedFile header = parse(llama_header());
  for (const char* arch : {"llama", "gpt2"}) {
    w = gguf::Writer();
    for (const auto& [key, value] : header.reader->metadata()) {
      std::string renamed = key;
      if (key.starts_with("llama.")) renamed = std::string(arch) + key.substr(5);
      if (renamed.find("epsilon") == std::string::npos) {
        ASSERT_TRUE(w.set(renamed, value).ok());
      }
    }
    ASSERT_TRUE(w.set_string("general.architecture", arch).ok());
    const std::string eps = std::string(arch) == "gpt2" ? "gpt2.attention.layer_norm_epsilon"
                                                        : "llama.attention.layer_norm_rms_epsilon";
    EXPECT_EQ(error_of(w), "model.gguf: key '" + eps + "' not found");
  }
}

TEST(ModelConfig, RopeScaling) {
  gguf::Writer w = llama_header();
  ASSERT_TRUE(w.set_string("llama.rope.scaling.type", "linear").ok());
  ASSERT_TRUE(w.set_f32("llama.rope.scaling.factor", 4.0f).ok());
  Expected<ModelConfig> c = read(w);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->rope_freq_scale, 0.25f);

  ASSERT_TRUE(w.set_string("llama.rope.scaling.type", "none").ok());
  c = read(w);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->rope_freq_scale, 1.0f);

  ASSERT_TRUE(w.set_string("llama.rope.scaling.type", "yarn").ok());
  EXPECT_EQ(error_of(w), "model.gguf: rope scaling 'yarn' is not supported");
}

}  // namespace
}  // namespace pagoda::model
