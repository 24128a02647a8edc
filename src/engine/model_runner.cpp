#include "engine/model_runner.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace pagoda::engine {
namespace {

std::string str(int64_t v) {
  return std::to_string(v);
}

Status bad_step(const std::string& problem) {
  return invalid_argument("model runner: " + problem);
}

}  // namespace

Expected<ModelRunner> ModelRunner::create(model::Model& model, backend::Backend& backend,
                                          backend::KvStorage& kv, RunnerLimits limits) {
  if (limits.max_batch_tokens <= 0 || limits.max_sequences <= 0 || limits.max_logit_rows < 0) {
    return invalid_argument("model runner: max_batch_tokens and max_sequences must be positive");
  }
  if (limits.max_logit_rows == 0) limits.max_logit_rows = limits.max_sequences;
  const model::ModelConfig& config = model.config();
  const backend::KvCacheShape& shape = kv.shape();
  if (shape.n_layers != config.n_layer || shape.n_kv_heads != config.n_head_kv ||
      shape.head_dim != config.head_dim || shape.block_size <= 0 || shape.n_blocks <= 0) {
    return invalid_argument("model runner: the KV storage does not have the model's shape");
  }
  const size_t logits_bytes = static_cast<size_t>(limits.max_logit_rows) * static_cast<size_t>(config.n_vocab) *
                              sizeof(float);
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<backend::Buffer> logits_memory, backend.allocate_host(logits_bytes));
  return ModelRunner(model, backend, kv, limits, std::move(logits_memory));
}

ModelRunner::ModelRunner(model::Model& model, backend::Backend& backend, backend::KvStorage& kv,
                         RunnerLimits limits, std::unique_ptr<backend::Buffer> logits_memory)
    : model_(&model),
      backend_(&backend),
      kv_(&kv),
      limits_(limits),
      block_size_(kv.shape().block_size),
      n_vocab_(model.config().n_vocab),
      logits_memory_(std::move(logits_memory)),
      logits_(static_cast<float*>(logits_memory_->data()),
              static_cast<size_t>(limits.max_logit_rows) * static_cast<size_t>(n_vocab_)) {
  const auto max_tokens = static_cast<size_t>(limits.max_batch_tokens);
  const auto max_sequences = static_cast<size_t>(limits.max_sequences);
  token_ids_.reserve(max_tokens);
  positions_.reserve(max_tokens);
  slots_.reserve(max_tokens);
  attention_.reserve(max_sequences);
  const auto max_logit_rows = static_cast<size_t>(limits.max_logit_rows);
  logit_rows_.reserve(max_logit_rows);
  token_on_device_.reserve(max_logit_rows);
  samplings_.reserve(max_logit_rows);
  device_tokens_.resize(max_logit_rows);
  device_logprobs_.resize(max_logit_rows);
  copies_.reserve(max_sequences);
}

Status ModelRunner::check(std::span<const RunnerSequence> sequences) const {
  if (sequences.empty()) return bad_step("a step must run at least one request");
  if (sequences.size() > static_cast<size_t>(limits_.max_sequences)) {
    return bad_step(str(static_cast<int64_t>(sequences.size())) +
                    " requests in a step, more than " + str(limits_.max_sequences));
  }
  int64_t n_tokens = 0;
  int64_t n_logit_rows = 0;
  for (const RunnerSequence& s : sequences) {
    const int64_t end = static_cast<int64_t>(s.first_position) + s.n_tokens;
    if (s.n_tokens <= 0 || s.first_position < 0) {
      return bad_step("a request runs " + str(s.n_tokens) + " tokens from position " +
                      str(s.first_position));
    }
    const auto n_known = static_cast<int64_t>(s.tokens.size() + s.draft_tokens.size());
    if (end > n_known) {
      return bad_step("a request runs tokens up to " + str(end) + " but has " + str(n_known));
    }
    if (s.samples) {
      if (s.n_logit_rows < 1 || s.n_logit_rows > s.n_tokens) {
        return bad_step("a request of " + str(s.n_tokens) + " tokens wants logits for " +
                        str(s.n_logit_rows) + " rows");
      }
      if (s.token_on_device && !s.samplings.empty() && static_cast<int64_t>(s.samplings.size()) != s.n_logit_rows) {
        return bad_step("a request with " + str(s.n_logit_rows) + " logit rows has " +
                        str(static_cast<int64_t>(s.samplings.size())) + " samplings");
      }
      n_logit_rows += s.n_logit_rows;
    }
    const int64_t blocks_needed = (end + block_size_ - 1) / block_size_;
    if (static_cast<int64_t>(s.block_table.size()) < blocks_needed) {
      return bad_step("a request of " + str(end) + " tokens has " +
                      str(static_cast<int64_t>(s.block_table.size())) + " KV blocks, needs " +
                      str(blocks_needed));
    }
    n_tokens += s.n_tokens;
  }
  if (n_tokens > limits_.max_batch_tokens) {
    return bad_step(str(n_tokens) + " tokens in a step, more than " +
                    str(limits_.max_batch_tokens));
  }
  if (n_logit_rows > limits_.max_logit_rows) {
    return bad_step(str(n_logit_rows) + " rows need logits in a step, more than " +
                    str(limits_.max_logit_rows));
  }
  return Status::ok_status();
}

void ModelRunner::append(const RunnerSequence& s) {
  const auto query_start = static_cast<int32_t>(token_ids_.size());
  for (int32_t i = 0; i < s.n_tokens; ++i) {
    const int32_t position = s.first_position + i;
    const int32_t block = s.block_table[static_cast<size_t>(position / block_size_)];
    const auto index = static_cast<size_t>(position);
    token_ids_.push_back(index < s.tokens.size() ? s.tokens[index]
                                                 : s.draft_tokens[index - s.tokens.size()]);
    positions_.push_back(position);
    slots_.push_back(static_cast<int64_t>(block) * block_size_ + position % block_size_);
  }
  attention_.push_back(backend::SequenceAttention{query_start, s.n_tokens,
                                                  s.first_position + s.n_tokens, s.block_table});
  if (!s.samples) return;
  const auto first_adjustment = static_cast<int32_t>(adjustments_.size());
  if (s.token_on_device) adjustments_.insert(adjustments_.end(), s.adjustments.begin(), s.adjustments.end());
  for (int32_t row = s.n_tokens - s.n_logit_rows, i = 0; row < s.n_tokens; ++row, ++i) {
    logit_rows_.push_back(query_start + row);
    token_on_device_.push_back(s.token_on_device ? 1 : 0);
    RowSampling sampling = s.token_on_device && !s.samplings.empty() ? s.samplings[static_cast<size_t>(i)] : RowSampling{};
    sampling.first_adjustment = first_adjustment;
    sampling.n_adjustments = s.token_on_device ? static_cast<int32_t>(s.adjustments.size()) : 0;
    samplings_.push_back(sampling);
  }
}

Expected<model::ForwardBatch> ModelRunner::prepare(std::span<const RunnerSequence> sequences) {
  PAGODA_TRY(check(sequences));
  token_ids_.clear();
  positions_.clear();
  slots_.clear();
  attention_.clear();
  logit_rows_.clear();
  token_on_device_.clear();
  samplings_.clear();
  adjustments_.clear();
  for (const RunnerSequence& s : sequences) append(s);

  model::ForwardBatch batch;
  batch.token_ids = token_ids_;
  batch.positions = positions_;
  batch.attention.sequences = attention_;
  batch.attention.slot_mapping = slots_;
  batch.attention.block_size = block_size_;
  batch.logit_rows = logit_rows_;
  if (std::find(token_on_device_.begin(), token_on_device_.end(), 1) != token_on_device_.end()) {
    batch.token_on_device = token_on_device_;
    batch.device_tokens = device_tokens_;
    // Rows that only take their greedy token need no more than argmax_rows.
    const auto more_than_greedy = [](const RowSampling& r) {
      return r.temperature > 0.0f || r.n_adjustments > 0 || r.logprobs;
    };
    if (std::any_of(samplings_.begin(), samplings_.end(), more_than_greedy)) {
      batch.samplings = samplings_;
      batch.adjustments = adjustments_;
    }
    if (std::any_of(samplings_.begin(), samplings_.end(), [](const RowSampling& r) { return r.logprobs; })) {
      batch.device_logprobs = std::span<RowLogprobs>(device_logprobs_).first(logit_rows_.size());
    }
  }
  // The one place a batch is checked: the model and the backend only assert it.
  PAGODA_TRY(model::check_batch(batch, model_->config(), model_->batch_limits(), *kv_, logits_));
  return batch;
}

Status ModelRunner::warm_up() {
  const int32_t n_tokens = std::min(block_size_, limits_.max_batch_tokens);
  const std::vector<int32_t> tokens(static_cast<size_t>(n_tokens), 0);
  const std::vector<int32_t> block_table = {0};
  RunnerSequence sequence;
  sequence.n_tokens = n_tokens;
  sequence.samples = true;
  sequence.tokens = tokens;
  sequence.block_table = block_table;
  sequence.n_logit_rows = std::min(n_tokens, limits_.max_logit_rows);
  return execute({}, std::span<const RunnerSequence>(&sequence, 1)).status();
}

Status ModelRunner::copy_blocks(std::span<const kv::BlockCopy> copies) {
  if (copies.empty()) return Status::ok_status();
  copies_.clear();
  for (const kv::BlockCopy& copy : copies) copies_.push_back({copy.src, copy.dst});
  backend_->copy_kv_blocks(*kv_, copies_);
  return backend_->take_error();
}

Expected<StepLogits> ModelRunner::execute(std::span<const kv::BlockCopy> copies,
                                          std::span<const RunnerSequence> sequences) {
  PAGODA_ASSIGN_OR_RETURN(const model::ForwardBatch batch, prepare(sequences));
  PAGODA_TRY(copy_blocks(copies));
  const size_t n_logits = logit_rows_.size() * static_cast<size_t>(n_vocab_);
  const std::span<float> logits = logits_.first(n_logits);
  PAGODA_TRY(model_->forward(batch, *kv_, logits));
  return StepLogits(logits, n_vocab_, std::span<const int32_t>(device_tokens_).first(logit_rows_.size()),
                    batch.device_logprobs);
}

}  // namespace pagoda::engine
