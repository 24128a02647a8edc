#include "tools/random_model.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>
#include <vector>

#include "core/thread_pool.h"
#include "gguf/writer.h"
#include "quant/quantize.h"
#include "tools/quantize_rows.h"
#include "tools/random_model_layout.h"
#include "tools/random_model_vocab.h"
#include "tools/weight_scheme.h"

namespace pagoda::tools {
namespace {

constexpr float kWeightStd = 0.02f;  // GPT-2's initialization: keeps activations near unit scale

// splitmix64: a tiny, fast generator, good enough for weights, seeded per row so that
// the values do not depend on how the rows are spread over threads.
class RowRandom {
 public:
  explicit RowRandom(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Two standard normal values (Box-Muller, in float: the tails reach 5.7 sigma) from
  // two 24-bit uniforms of one draw.
  std::pair<float, float> normal_pair() {
    const uint64_t bits = next();
    const float u1 = (static_cast<float>(bits >> 40) + 1.0f) * 0x1p-24f;     // (0, 1]
    const float u2 = static_cast<float>((bits >> 8) & 0xFFFFFF) * 0x1p-24f;  // [0, 1)
    const float radius = std::sqrt(-2.0f * std::log(u1));
    const float angle = 2.0f * std::numbers::pi_v<float> * u2;
    return {radius * std::cos(angle), radius * std::sin(angle)};
  }

 private:
  uint64_t state_;
};

uint64_t row_seed(uint64_t seed, size_t tensor_index, int64_t row) {
  RowRandom mixer(seed ^ (uint64_t{tensor_index} << 40) ^ static_cast<uint64_t>(row));
  mixer.next();
  return mixer.next();
}

// mean + std * N(0, 1) for each of the n values.
void fill_normal(float* out, int64_t n, uint64_t seed, float mean, float std) {
  RowRandom random(seed);
  for (int64_t i = 0; i < n; i += 2) {
    const auto [a, b] = random.normal_pair();
    out[i] = mean + std * a;
    if (i + 1 < n) out[i + 1] = mean + std * b;
  }
}

float mean_of(TensorRole role) {
  return role == TensorRole::kNorm ? 1.0f : 0.0f;
}

// The tensor's bytes in `type`: rows generated and quantized in parallel.
Expected<std::vector<uint8_t>> random_tensor(const TensorPlan& tensor, DType type, uint64_t seed,
                                             size_t index, ThreadPool& pool) {
  const int64_t row = tensor.shape[0];
  return quantize_rows(
      type, row, tensor.n_elements() / row, pool,
      [&](int64_t r, std::span<float> values) {
        fill_normal(values.data(), row, row_seed(seed, index, r), mean_of(tensor.role), kWeightStd);
        return Status::ok_status();
      },
      tensor.name);
}

// The vocabulary size the model must have: the tokenizer's when one is given.
Expected<int32_t> vocab_size(const RandomModelSpec& spec, const gguf::Reader* tokenizer) {
  if (tokenizer == nullptr) return spec.n_vocab;
  if (!spec.control_tokens.empty()) {
    return invalid_argument("control tokens are added to the built-in vocabulary only, not to " +
                            tokenizer->name() + "'s");
  }
  PAGODA_ASSIGN_OR_RETURN(const int32_t n_vocab, tokenizer_vocab_size(*tokenizer));
  if (spec.n_vocab != 0 && spec.n_vocab != n_vocab) {
    return invalid_argument("vocabulary size " + std::to_string(spec.n_vocab) +
                            " differs from the " + std::to_string(n_vocab) + " tokens of " +
                            tokenizer->name());
  }
  return n_vocab;
}

}  // namespace

Status write_random_model(const RandomModelSpec& requested, const gguf::Reader* tokenizer,
                          const std::string& path) {
  RandomModelSpec spec = requested;
  PAGODA_ASSIGN_OR_RETURN(spec.n_vocab, vocab_size(spec, tokenizer));
  PAGODA_ASSIGN_OR_RETURN(spec, resolve_spec(std::move(spec)));
  PAGODA_ASSIGN_OR_RETURN(const WeightScheme scheme, parse_weight_scheme(spec.weight_type));
  gguf::Writer writer;
  PAGODA_TRY(write_model_metadata(writer, spec, scheme.file_type));
  PAGODA_TRY(tokenizer ? copy_tokenizer(*tokenizer, writer)
                       : write_byte_vocab(writer, spec.n_vocab, spec.control_tokens));

  ThreadPool pool(spec.n_threads > 0 ? spec.n_threads : physical_core_count());
  const std::vector<TensorPlan> plan = plan_tensors(spec);
  for (size_t i = 0; i < plan.size(); ++i) {
    const DType type = tensor_type(scheme, plan[i], spec.n_layer, spec.tie_embeddings);
    PAGODA_ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes,
                            random_tensor(plan[i], type, spec.seed, i, pool));
    PAGODA_TRY(writer.add_tensor(plan[i].name, type, plan[i].shape, bytes));
  }
  return writer.write_file(path);
}

}  // namespace pagoda::tools
