#pragma once
// One batched forward pass, as plain data (built by the engine's ModelRunner, read by
// the model): the tokens of every scheduled sequence, their positions, where their K/V
// go and which rows need next-token logits.

#include <cstdint>
#include <span>

#include "backend/attention_batch.h"

namespace pagoda::model {

struct ForwardBatch {
  std::span<const int32_t> token_ids;  // [n_tokens]
  std::span<const int32_t> positions;  // [n_tokens], position of each token in its sequence
  backend::AttentionBatch attention;   // sequences, KV slots, block size
  std::span<const int32_t> logit_rows; // batch rows whose next-token logits are wanted
};

}  // namespace pagoda::model
