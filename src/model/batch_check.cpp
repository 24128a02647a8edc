#include "model/batch_check.h"

#include <algorithm>
#include <string>

namespace pagoda::model {
namespace {

Status bad_batch(const std::string& problem) { return invalid_argument("forward: " + problem); }

std::string str(int64_t v) { return std::to_string(v); }

Status check_kv_shape(const ModelConfig& config, const backend::KvStorage& kv,
                      int32_t block_size) {
  const backend::KvCacheShape& s = kv.shape();
  if (s.n_layers != config.n_layer || s.n_kv_heads != config.n_head_kv ||
      s.head_dim != config.head_dim) {
    return bad_batch("KV storage has " + str(s.n_layers) + " layers x " + str(s.n_kv_heads) +
                     " heads x " + str(s.head_dim) + ", the model needs " + str(config.n_layer) +
                     " x " + str(config.n_head_kv) + " x " + str(config.head_dim));
  }
  if (s.block_size <= 0 || s.block_size != block_size) {
    return bad_batch("batch block size " + str(block_size) + " differs from the KV storage's " +
                     str(s.block_size));
  }
  return {};
}

Status check_tokens(const ForwardBatch& batch, const ModelConfig& config,
                    const BatchLimits& limits) {
  const size_t n = batch.token_ids.size();
  if (n == 0) return bad_batch("empty batch");
  if (n > static_cast<size_t>(limits.max_tokens)) {
    return bad_batch(str(static_cast<int64_t>(n)) + " tokens, more than the " +
                     str(limits.max_tokens) + " the model was loaded for");
  }
  if (batch.positions.size() != n || batch.attention.slot_mapping.size() != n) {
    return bad_batch(str(static_cast<int64_t>(n)) + " tokens but " +
                     str(static_cast<int64_t>(batch.positions.size())) + " positions and " +
                     str(static_cast<int64_t>(batch.attention.slot_mapping.size())) + " slots");
  }
  for (size_t i = 0; i < n; ++i) {
    if (batch.token_ids[i] < 0 || batch.token_ids[i] >= config.n_vocab) {
      return bad_batch("token id " + str(batch.token_ids[i]) + " is outside the vocabulary of " +
                       str(config.n_vocab));
    }
    if (batch.positions[i] < 0 || batch.positions[i] >= limits.max_position) {
      return bad_batch("position " + str(batch.positions[i]) + " is outside [0, " +
                       str(limits.max_position) + ")");
    }
  }
  return {};
}

// One sequence: its rows, positions, block table and slots.
Status check_sequence(const ForwardBatch& batch, const backend::SequenceAttention& seq,
                      int32_t block_size, int32_t n_blocks) {
  const int64_t first_position = static_cast<int64_t>(seq.n_context) - seq.n_query;
  if (seq.n_query <= 0 || first_position < 0) {
    return bad_batch("a sequence has " + str(seq.n_query) + " new tokens and a context of " +
                     str(seq.n_context));
  }
  const int64_t blocks_needed = (static_cast<int64_t>(seq.n_context) + block_size - 1) / block_size;
  if (static_cast<int64_t>(seq.block_table.size()) < blocks_needed) {
    return bad_batch("a context of " + str(seq.n_context) + " tokens needs " +
                     str(blocks_needed) + " blocks, the block table has " +
                     str(static_cast<int64_t>(seq.block_table.size())));
  }
  for (int64_t b = 0; b < blocks_needed; ++b) {
    if (seq.block_table[b] < 0 || seq.block_table[b] >= n_blocks) {
      return bad_batch("block id " + str(seq.block_table[b]) + " is outside the KV storage's " +
                       str(n_blocks) + " blocks");
    }
  }
  for (int32_t i = 0; i < seq.n_query; ++i) {
    const int64_t row = seq.query_start + i;
    const int64_t position = first_position + i;
    if (batch.positions[row] != position) {
      return bad_batch("row " + str(row) + " has position " + str(batch.positions[row]) +
                       ", its sequence puts it at " + str(position));
    }
    const int64_t slot = static_cast<int64_t>(seq.block_table[position / block_size]) * block_size +
                         position % block_size;
    if (batch.attention.slot_mapping[row] != slot) {
      return bad_batch("row " + str(row) + " writes KV slot " +
                       str(batch.attention.slot_mapping[row]) + ", its block table says " +
                       str(slot));
    }
  }
  return {};
}

Status check_sequences(const ForwardBatch& batch, const backend::KvCacheShape& kv) {
  int64_t next_row = 0;
  const int64_t n = static_cast<int64_t>(batch.token_ids.size());
  for (const backend::SequenceAttention& seq : batch.attention.sequences) {
    if (seq.query_start != next_row || seq.n_query > n - next_row) {
      return bad_batch("sequences must cover the batch's rows in order: one starts at row " +
                       str(seq.query_start) + " with " + str(seq.n_query) +
                       " rows, expected a start at row " + str(next_row));
    }
    PAGODA_TRY(check_sequence(batch, seq, kv.block_size, kv.n_blocks));
    next_row += seq.n_query;
  }
  if (next_row != n) {
    return bad_batch("sequences cover " + str(next_row) + " of the batch's " + str(n) + " rows");
  }
  return {};
}

Status check_logit_rows(const ForwardBatch& batch, const ModelConfig& config,
                        const BatchLimits& limits, std::span<const float> logits) {
  const size_t n_rows = batch.logit_rows.size();
  if (n_rows > static_cast<size_t>(limits.max_logit_rows)) {
    return bad_batch(str(static_cast<int64_t>(n_rows)) + " logit rows, more than the " +
                     str(limits.max_logit_rows) + " the model was loaded for");
  }
  for (const int32_t row : batch.logit_rows) {
    if (row < 0 || static_cast<size_t>(row) >= batch.token_ids.size()) {
      return bad_batch("logit row " + str(row) + " is outside the batch");
    }
  }
  if (!batch.token_on_device.empty() &&
      (batch.token_on_device.size() != n_rows || batch.device_tokens.size() < n_rows)) {
    return bad_batch(str(static_cast<int64_t>(batch.token_on_device.size())) + " on-device flags and room for " +
                     str(static_cast<int64_t>(batch.device_tokens.size())) + " tokens for " +
                     str(static_cast<int64_t>(n_rows)) + " logit rows");
  }
  if (!batch.samplings.empty() && (batch.token_on_device.empty() || batch.samplings.size() != n_rows)) {
    return bad_batch(str(static_cast<int64_t>(batch.samplings.size())) + " samplings for " +
                     str(static_cast<int64_t>(n_rows)) + " logit rows" +
                     (batch.token_on_device.empty() ? ", none flagged to take its token on the device" : ""));
  }
  if (batch.samplings.empty() && !batch.adjustments.empty()) return bad_batch("adjustments without samplings");
  const bool asks_logprobs =
      std::any_of(batch.samplings.begin(), batch.samplings.end(), [](const RowSampling& r) { return r.logprobs; });
  if (asks_logprobs && batch.device_logprobs.size() < n_rows) {
    return bad_batch("rows ask for log-probabilities with room for " +
                     str(static_cast<int64_t>(batch.device_logprobs.size())) + " reports");
  }
  if (const Status rows = check_row_samplings(batch.samplings, batch.adjustments, config.n_vocab); !rows.ok()) {
    return bad_batch(rows.message());
  }
  if (logits.size() < n_rows * static_cast<size_t>(config.n_vocab)) {
    return bad_batch("the logits buffer holds " + str(static_cast<int64_t>(logits.size())) +
                     " floats, " + str(static_cast<int64_t>(n_rows)) + " rows need " +
                     str(static_cast<int64_t>(n_rows) * config.n_vocab));
  }
  return {};
}

}  // namespace

Status check_batch(const ForwardBatch& batch, const ModelConfig& config, const BatchLimits& limits,
                   const backend::KvStorage& kv, std::span<const float> logits) {
  PAGODA_TRY(check_kv_shape(config, kv, batch.attention.block_size));
  PAGODA_TRY(check_tokens(batch, config, limits));
  PAGODA_TRY(check_sequences(batch, kv.shape()));
  return check_logit_rows(batch, config, limits, logits);
}

}  // namespace pagoda::model
