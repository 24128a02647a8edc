// load_model on copies of stories260K with one thing changed: each broken file gives a
// one-line error naming the problem; tied output embeddings and Llama 3 rope frequency
// factors load and compute what they should.

#include <gtest/gtest.h>

#include "model/model_harness.h"

namespace pagoda::model::testing {
namespace {

// stories260K.gguf, open for the test's lifetime.
const gguf::Reader& stories() {
  static const gguf::Reader* reader = [] {
    Expected<gguf::Reader> r = gguf::Reader::open(model_path("stories260K.gguf"));
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? new gguf::Reader(std::move(r).value()) : nullptr;
  }();
  return *reader;
}

// A model built from an in-memory file, with the backend it runs on.
struct InMemoryModel {
  ParsedFile file;
  std::unique_ptr<backend::Backend> backend = backend::make_cpu_backend();
  Expected<std::unique_ptr<Model>> model = internal_error("not loaded");
};

std::unique_ptr<InMemoryModel> load_from(const gguf::Writer& writer,
                                         const LoadOptions& options = {}) {
  auto m = std::make_unique<InMemoryModel>();
  m->file = parse(writer);
  if (m->file.reader) m->model = load_model(*m->file.reader, *m->backend, options);
  return m;
}

std::string load_error(const gguf::Writer& writer) {
  const std::unique_ptr<InMemoryModel> m = load_from(writer);
  return m->model.ok() ? "ok" : m->model.status().message();
}

// Logits of the last token after running `tokens` in one batch.
std::vector<float> last_logits(Model& model, backend::Backend& backend,
                               const std::vector<int32_t>& tokens) {
  Sequence seq(model, backend, static_cast<int32_t>(tokens.size()));
  Expected<std::vector<float>> logits = seq.feed(tokens);
  EXPECT_TRUE(logits.ok()) << logits.status().message();
  return logits.ok() ? *logits : std::vector<float>{};
}

const std::vector<int32_t> kTokens = {1, 403, 407, 261, 378, 432, 383};

TEST(LoadModel, TheUnchangedCopyLoads) {
  EXPECT_EQ(load_error(copy_model(stories())), "ok");
}

TEST(LoadModel, MissingTensor) {
  const gguf::Writer w = copy_model(stories(), [](const gguf::TensorInfo& t) {
    TensorEdit edit;
    edit.drop = t.name == "output_norm.weight";
    return edit;
  });
  EXPECT_EQ(load_error(w), "model.gguf: missing tensor 'output_norm.weight'");
}

TEST(LoadModel, WrongShape) {
  const gguf::Writer w = copy_model(stories(), [](const gguf::TensorInfo& t) {
    if (t.name != "blk.3.ffn_up.weight") return TensorEdit{};
    return TensorEdit{.shape = {64, 100}, .type = DType::F32};
  });
  EXPECT_EQ(load_error(w),
            "model.gguf: tensor 'blk.3.ffn_up.weight' has shape [64, 100], expected [64, 172]");
}

TEST(LoadModel, WrongType) {
  gguf::Writer w = copy_model(stories(), [](const gguf::TensorInfo& t) {
    if (t.name != "blk.0.attn_q.weight") return TensorEdit{};
    return TensorEdit{.shape = {64, 64}, .type = DType::I32};
  });
  EXPECT_EQ(load_error(w),
            "model.gguf: tensor 'blk.0.attn_q.weight' has type i32, which has no matrix "
            "multiplication");

  w = copy_model(stories(), [](const gguf::TensorInfo& t) {
    if (t.name != "blk.1.ffn_norm.weight") return TensorEdit{};
    return TensorEdit{.shape = {64}, .type = DType::F16};
  });
  EXPECT_EQ(load_error(w), "model.gguf: tensor 'blk.1.ffn_norm.weight' has type f16, expected f32");
}

TEST(LoadModel, UnknownArchitecture) {
  gguf::Writer w = copy_model(stories());
  ASSERT_TRUE(w.set_string("general.architecture", "mamba").ok());
  const std::unique_ptr<InMemoryModel> m = load_from(w);
  ASSERT_FALSE(m->model.ok());
  EXPECT_EQ(m->model.status().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(m->model.status().message(),
            "model.gguf: unknown architecture 'mamba' (supported: llama, qwen2, qwen3, gpt2)");
}

TEST(LoadModel, TensorTheArchitectureWouldIgnore) {
  gguf::Writer w = copy_model(stories());
  const std::vector<uint8_t> bias(64 * sizeof(float), 0);
  ASSERT_TRUE(w.add_tensor("blk.0.attn_q.bias", DType::F32, {64}, bias).ok());
  EXPECT_EQ(load_error(w),
            "model.gguf: tensor 'blk.0.attn_q.bias' is not used by architecture 'llama'");
}

TEST(LoadModel, BadOptions) {
  const std::unique_ptr<InMemoryModel> m = load_from(copy_model(stories()), {0, 4});
  ASSERT_FALSE(m->model.ok());
  EXPECT_EQ(m->model.status().message(),
            "load_model: max_batch_tokens (0) and max_logit_rows (4) must be positive");
}

// A file without output.weight projects with the token embedding. Two files whose
// embedding is stories260K's output matrix, one with output.weight (the same bytes)
// and one without, must compute the same logits.
TEST(LoadModel, TiedOutputEmbedding) {
  const gguf::TensorInfo* output = stories().find_tensor("output.weight");
  ASSERT_NE(output, nullptr);
  auto with_embedding_from_output = [&](bool keep_output) {
    gguf::Writer w;
    for (const auto& [key, value] : stories().metadata()) EXPECT_TRUE(w.set(key, value).ok());
    for (const gguf::TensorInfo& t : stories().tensors()) {
      if (t.name == "output.weight" && !keep_output) continue;
      const gguf::TensorInfo& source = t.name == "token_embd.weight" ? *output : t;
      EXPECT_TRUE(w.add_tensor(t.name, t.type, t.shape, source.bytes()).ok());
    }
    return w;
  };
  const std::unique_ptr<InMemoryModel> untied = load_from(with_embedding_from_output(true));
  const std::unique_ptr<InMemoryModel> tied = load_from(with_embedding_from_output(false));
  ASSERT_TRUE(untied->model.ok()) << untied->model.status().message();
  ASSERT_TRUE(tied->model.ok()) << tied->model.status().message();
  const std::vector<float> a = last_logits(**untied->model, *untied->backend, kTokens);
  const std::vector<float> b = last_logits(**tied->model, *tied->backend, kTokens);
  ASSERT_EQ(a.size(), 512u);
  EXPECT_EQ(a, b);
}

// rope_freqs.weight divides each rotary frequency: all ones changes nothing, other
// factors change the result, a wrong length is an error.
TEST(LoadModel, RopeFrequencyFactors) {
  auto with_factors = [](std::vector<float> factors) {
    gguf::Writer w = copy_model(stories());
    const auto* bytes = reinterpret_cast<const uint8_t*>(factors.data());
    EXPECT_TRUE(w.add_tensor("rope_freqs.weight", DType::F32,
                             {static_cast<int64_t>(factors.size())},
                             std::span(bytes, factors.size() * sizeof(float)))
                    .ok());
    return w;
  };
  const std::unique_ptr<InMemoryModel> plain = load_from(copy_model(stories()));
  const std::unique_ptr<InMemoryModel> ones = load_from(with_factors({1, 1, 1, 1}));
  const std::unique_ptr<InMemoryModel> scaled = load_from(with_factors({1, 2, 4, 8}));
  ASSERT_TRUE(plain->model.ok() && ones->model.ok() && scaled->model.ok());
  const std::vector<float> base = last_logits(**plain->model, *plain->backend, kTokens);
  EXPECT_EQ(last_logits(**ones->model, *ones->backend, kTokens), base);
  EXPECT_NE(last_logits(**scaled->model, *scaled->backend, kTokens), base);

  EXPECT_EQ(load_error(with_factors({1, 1, 1})),
            "model.gguf: tensor 'rope_freqs.weight' has shape [3], expected [4]");
}

}  // namespace
}  // namespace pagoda::model::testing
