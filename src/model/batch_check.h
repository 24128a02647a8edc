#pragma once
// Checks a ForwardBatch against the model, its load options and the KV storage before
// anything runs, so that a malformed batch (an engine bug, or a hostile one) is an error
// value and never an out-of-bounds read or write in an op.

#include <cstdint>
#include <span>

#include "backend/backend.h"
#include "core/status.h"
#include "model/config.h"
#include "model/forward_batch.h"

namespace pagoda::model {

struct BatchLimits {
  int32_t max_tokens = 0;      // LoadOptions::max_batch_tokens
  int32_t max_logit_rows = 0;  // LoadOptions::max_logit_rows
  int32_t max_position = 0;    // positions must be below this (learned position tables)
};

// Checks: sizes against the limits; token ids below n_vocab; every row in exactly one
// sequence, the sequences in row order; each sequence's positions running up to its
// n_context; block tables long enough and block ids and slots inside the KV storage,
// each row's slot the one its block table gives its position; the KV storage of the
// model's shape; `logits` big enough for the requested rows.
Status check_batch(const ForwardBatch& batch, const ModelConfig& config, const BatchLimits& limits,
                   const backend::KvStorage& kv, std::span<const float> logits);

}  // namespace pagoda::model
