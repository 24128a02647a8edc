#pragma once
// Runs the test models (on the CPU backend unless a test gives another), one
// sequence at a time: the test builds the ForwardBatch itself (one SequenceAttention, a
// block table 0..n covering the context, slot p for position p), as the engine's
// ModelRunner does.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "gguf/reader.h"
#include "model/gguf_builder.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::model::testing {

// A model file opened, loaded on its own CPU backend, with its tokenizer.
struct LoadedModel {
  std::unique_ptr<gguf::Reader> file;
  std::unique_ptr<backend::Backend> backend;
  std::unique_ptr<Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
};

// A test model (model_path) loaded on `backend`, with its tokenizer.
inline LoadedModel load_on(std::unique_ptr<backend::Backend> backend, const std::string& file_name,
                           const LoadOptions& options = {}) {
  LoadedModel m;
  Expected<gguf::Reader> reader = gguf::Reader::open(model_path(file_name));
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  if (!reader.ok() || !backend) return m;
  m.file = std::make_unique<gguf::Reader>(std::move(reader).value());
  m.backend = std::move(backend);
  Expected<std::unique_ptr<Model>> model = load_model(*m.file, *m.backend, options);
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (model.ok()) m.model = std::move(model).value();
  Expected<tokenizer::Tokenizer> tok = tokenizer::Tokenizer::from_gguf(*m.file);
  EXPECT_TRUE(tok.ok()) << tok.status().message();
  if (tok.ok()) m.tokenizer = std::make_unique<tokenizer::Tokenizer>(std::move(tok).value());
  return m;
}

// On the CPU backend; reference numerics by default: most tests compare with the
// reference build's outputs.
inline LoadedModel load(const std::string& file_name, const LoadOptions& options = {},
                        backend::CpuNumerics numerics = backend::CpuNumerics::kReference) {
  return load_on(backend::make_cpu_backend({.numerics = numerics}), file_name, options);
}

// One sequence's KV cache and position. Each feed() is one forward pass over the next
// tokens of the sequence.
class Sequence {
 public:
  static constexpr int32_t kBlockSize = 16;

  Sequence(Model& model, backend::Backend& backend, int32_t max_context) : model_(model) {
    const int32_t n_blocks = (max_context + kBlockSize - 1) / kBlockSize;
    Expected<std::unique_ptr<backend::KvStorage>> kv =
        backend.allocate_kv(kv_cache_shape(model.config(), n_blocks, kBlockSize));
    EXPECT_TRUE(kv.ok()) << kv.status().message();
    if (kv.ok()) kv_ = std::move(kv).value();
    block_table_.resize(n_blocks);
    std::iota(block_table_.begin(), block_table_.end(), 0);
  }

  int32_t n_past() const { return n_past_; }
  backend::KvStorage& kv() { return *kv_; }

  // Runs `tokens` at the next positions. Returns the logits of every token
  // ([tokens.size()][n_vocab]) when all_logits, else of the last one only.
  Expected<std::vector<float>> feed(std::span<const int32_t> tokens, bool all_logits = false) {
    const int32_t n = static_cast<int32_t>(tokens.size());
    std::vector<int32_t> positions(n);
    std::vector<int64_t> slots(n);
    for (int32_t i = 0; i < n; ++i) {
      positions[i] = n_past_ + i;
      slots[i] = n_past_ + i;  // block b holds positions [16 b, 16 b + 16): slot = position
    }
    std::vector<int32_t> logit_rows;
    for (int32_t i = all_logits ? 0 : n - 1; i < n; ++i) logit_rows.push_back(i);
    const backend::SequenceAttention seq{0, n, n_past_ + n, block_table_};

    ForwardBatch batch;
    batch.token_ids = tokens;
    batch.positions = positions;
    batch.attention.sequences = std::span(&seq, 1);
    batch.attention.slot_mapping = slots;
    batch.attention.block_size = kBlockSize;
    batch.logit_rows = logit_rows;
    std::vector<float> logits(logit_rows.size() * model_.config().n_vocab);
    PAGODA_TRY(model_.forward(batch, *kv_, logits));
    n_past_ += n;
    return logits;
  }

 private:
  Model& model_;
  std::unique_ptr<backend::KvStorage> kv_;
  std::vector<int32_t> block_table_;
  int32_t n_past_ = 0;
};

// Natural-log softmax of one row of logits, in double.
inline std::vector<double> log_softmax(std::span<const float> logits) {
  const double max = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (const float l : logits) sum += std::exp(l - max);
  const double log_sum = max + std::log(sum);
  std::vector<double> out(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = logits[i] - log_sum;
  return out;
}

inline int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// Row `row` of a [rows][n_vocab] block of logits.
inline std::span<const float> logits_row(const std::vector<float>& logits, int32_t n_vocab,
                                         size_t row) {
  return std::span<const float>(logits).subspan(row * n_vocab, n_vocab);
}

}  // namespace pagoda::model::testing
