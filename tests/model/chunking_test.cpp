// Prompt processing in one batch, token by token, and in uneven chunks must give the
// same logits: how a prompt is split into forward passes (chunked prefill) is an engine
// decision that must not change what the model computes.

#include <gtest/gtest.h>

#include "model/model_harness.h"
#include "model/reference_check.h"

namespace pagoda::model::testing {
namespace {

// Logits of every token of `tokens`, fed in chunks of the given sizes (cycled).
std::vector<float> run_in_chunks(LoadedModel& m, const std::vector<int32_t>& tokens,
                                 const std::vector<size_t>& chunk_sizes) {
  Sequence seq(*m.model, *m.backend, static_cast<int32_t>(tokens.size()));
  std::vector<float> all;
  size_t done = 0;
  for (size_t c = 0; done < tokens.size(); ++c) {
    const size_t n = std::min(chunk_sizes[c % chunk_sizes.size()], tokens.size() - done);
    const Expected<std::vector<float>> logits =
        seq.feed(std::span(tokens).subspan(done, n), /*all_logits=*/true);
    EXPECT_TRUE(logits.ok()) << logits.status().message();
    if (!logits.ok()) return {};
    all.insert(all.end(), logits->begin(), logits->end());
    done += n;
  }
  return all;
}

struct ChunkingCase {
  const char* model;
  double tol;       // on each log-probability
  double mean_tol;  // on their mean
};

void PrintTo(const ChunkingCase& c, std::ostream* os) { *os << c.model; }

class Chunking : public ::testing::TestWithParam<ChunkingCase> {};

TEST_P(Chunking, OneBatchTokenByTokenAndChunksAgree) {
  PAGODA_SKIP_IF_MISSING(model_path(GetParam().model));
  LoadedModel m = load(GetParam().model, {}, backend::CpuNumerics::kFast);
  ASSERT_TRUE(m.model && m.tokenizer);
  const int32_t n_vocab = m.model->config().n_vocab;
  const std::vector<int32_t> tokens = m.tokenizer->encode(
      "Once upon a time, there was a little girl named Lily. She loved to play outside in "
      "the park with her friends, and one day she found a shiny red ball under a tree.",
      true, true);
  ASSERT_GT(tokens.size(), 20u);

  const std::vector<float> whole = run_in_chunks(m, tokens, {tokens.size()});
  ASSERT_EQ(whole.size(), tokens.size() * n_vocab);
  const std::vector<std::vector<size_t>> splits = {{1}, {7, 1, 3}, {5}};
  for (const std::vector<size_t>& split : splits) {
    const std::vector<float> chunked = run_in_chunks(m, tokens, split);
    ASSERT_EQ(chunked.size(), whole.size());
    ErrorStats stats;
    for (size_t i = 0; i < tokens.size(); ++i) {
      const std::vector<double> a = log_softmax(logits_row(whole, n_vocab, i));
      const std::vector<double> b = log_softmax(logits_row(chunked, n_vocab, i));
      for (const int32_t id : top_k(a, 8)) stats.add(std::abs(a[id] - b[id]));
      EXPECT_EQ(argmax(logits_row(whole, n_vocab, i)), argmax(logits_row(chunked, n_vocab, i)))
          << "position " << i << ", chunks of " << split.front();
    }
    EXPECT_LE(stats.max_abs, GetParam().tol) << "chunks of " << split.front() << "...";
    EXPECT_LE(stats.mean_abs(), GetParam().mean_tol) << "chunks of " << split.front() << "...";
    std::cout << "[ stats    ] " << GetParam().model << ", chunks of " << split.front()
              << "...: " << stats.summary() << "\n";
  }
}

// The engine's numerics (kFast) compute each row the same way whatever the batch around
// it, so the results are identical (kReference mirrors the reference build, whose float
// matmuls round otherwise for batches than for single tokens): a tolerance of float noise would not do, since the 8-bit
// quantization of activations and the f16 attention amplify a last-bit difference up
// to 0.1 in log-probability (see generation_test.cpp). The prompt stays under 64
// tokens: from 64 new tokens on, attention switches (as the reference's does) to tiles
// that accumulate in f32 instead of f16, a deliberate difference this test is not about.
INSTANTIATE_TEST_SUITE_P(Models, Chunking,
                         ::testing::Values(ChunkingCase{"stories260K.gguf", 1e-6, 1e-7},
                                           ChunkingCase{"stories260K-Q8_0.gguf", 1e-6, 1e-7},
                                           ChunkingCase{"rand-llama-Q4_K_M.gguf", 1e-6, 1e-7},
                                           ChunkingCase{"rand-llama-Q8_0.gguf", 1e-6, 1e-7},
                                           ChunkingCase{"rand-qwen2-Q8_0.gguf", 1e-6, 1e-7},
                                           ChunkingCase{"rand-qwen3-Q6_K.gguf", 1e-6, 1e-7},
                                           ChunkingCase{"rand-gpt2-Q8_0.gguf", 1e-6, 1e-7}));

}  // namespace
}  // namespace pagoda::model::testing
