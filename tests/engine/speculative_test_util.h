#pragma once
// What the speculative-decoding tests share: an engine configuration with a KV cache of
// a chosen number of blocks, story prompts that the tiny model continues with much
// repetition, and the check that two runs gave the same outputs.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine_test_util.h"
#include "test_files.h"
#include "tools/random_model.h"

namespace pagoda::engine::testing {

using ::pagoda::testing::TempFile;  // test_files.h

// A draft model for speculative decoding, loaded on the model's backend.
struct DraftModel {
  std::unique_ptr<gguf::Reader> file;
  std::unique_ptr<model::Model> model;  // null (and the test failed) when it did not load
};

inline DraftModel load_draft_model(const std::string& path, backend::Backend& backend,
                                   const model::LoadOptions& options) {
  DraftModel draft;
  Expected<gguf::Reader> reader = gguf::Reader::open(path);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  if (!reader.ok()) return draft;
  draft.file = std::make_unique<gguf::Reader>(std::move(reader).value());
  Expected<std::unique_ptr<model::Model>> model = model::load_model(*draft.file, backend, options);
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (model.ok()) draft.model = std::move(model).value();
  return draft;
}

// A tiny random-weight model (one layer, 32 wide): given a tokenizer to write, a draft
// that rarely agrees with the model.
inline tools::RandomModelSpec tiny_random_model(int32_t n_ctx) {
  tools::RandomModelSpec spec;
  spec.n_embd = 32;
  spec.n_layer = 1;
  spec.n_head = 2;
  spec.n_ff = 64;
  spec.n_ctx = n_ctx;
  spec.weight_type = "q8_0";
  spec.n_threads = 1;
  return spec;
}

constexpr int32_t kMaxModelLen = 256;

inline EngineConfig config_with_blocks(const model::ModelConfig& model, int32_t n_blocks,
                                       SpeculativeMethod method) {
  EngineConfig config;
  config.scheduler = {.max_batched_tokens = 96, .max_running = 8, .max_model_len = kMaxModelLen};
  config.kv_memory.bytes = model::kv_cache_shape(model, 1, config.block_size).block_bytes() *
                           static_cast<uint64_t>(n_blocks);
  config.speculative.method = method;
  if (method != SpeculativeMethod::kNone) config.speculative.num_speculative_tokens = 4;
  // Every request verifies 4 proposals whenever it has them, the draft declining none:
  // these tests are about what verification keeps, not about how many proposals are
  // worth a row (which depends on measured timings).
  config.speculative.adaptive = false;
  config.speculative.draft_p_min = 0.0f;
  return config;
}

// Story prompts that the tiny model continues with much repetition (so prompt lookup
// finds matches), greedy and sampled, some with stop strings and log-probabilities.
inline std::vector<EngineRequest> story_requests(const tokenizer::Tokenizer& tokenizer) {
  const std::vector<std::string> texts = {
      "Once upon a time, there was a little girl named Lily. Lily liked to play. Once upon a time,",
      "The dog ran to the park. The dog ran to the",
      "Tom had a big red ball. He liked his ball. Tom had a big",
      "One day, a bird",
      "Sue and Ben went to the store. Sue and Ben",
      "The cat sat. The cat sat. The cat",
  };
  std::vector<EngineRequest> requests;
  for (size_t i = 0; i < 12; ++i) {
    EngineRequest r;
    r.prompt = tokenizer.encode(texts[i % texts.size()], /*add_special=*/true, /*parse_special=*/false);
    r.stop.max_tokens = 20 + static_cast<int32_t>(i * 11) % 60;
    if (i % 4 == 3) r.stop.stop_strings = {"park"};
    if (i % 3 == 0) {
      r.sampling.temperature = 0.0f;
    } else {
      r.sampling.temperature = 0.5f + 0.2f * static_cast<float>(i % 4);
      r.sampling.top_k = i % 2 == 0 ? 40 : 0;
      r.sampling.top_p = i % 5 == 1 ? 0.9f : 1.0f;
      r.sampling.seed = 500 + i;
    }
    if (i % 2 == 0) {
      r.sampling.logprobs = true;
      r.sampling.top_logprobs = 2;
    }
    if (i == 5) r.sampling.frequency_penalty = 0.5f;
    requests.push_back(std::move(r));
  }
  return requests;
}

inline void expect_same(const std::vector<Received>& plain, const std::vector<Received>& speculated) {
  ASSERT_EQ(plain.size(), speculated.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(plain[i].tokens, speculated[i].tokens) << "request " << i;
    EXPECT_EQ(plain[i].text, speculated[i].text) << "request " << i;
    EXPECT_EQ(plain[i].finish, speculated[i].finish) << "request " << i;
    std::vector<float> a, b;
    for (const RequestOutput& o : plain[i].outputs) {
      for (const TokenLogprobs& l : o.logprobs) a.push_back(l.logprob);
    }
    for (const RequestOutput& o : speculated[i].outputs) {
      for (const TokenLogprobs& l : o.logprobs) b.push_back(l.logprob);
    }
    EXPECT_EQ(a, b) << "request " << i;  // bit for bit
  }
}

}  // namespace pagoda::engine::testing
