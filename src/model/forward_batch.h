#pragma once
// One batched forward pass, as plain data (built by the engine's ModelRunner, read by
// the model): the tokens of every scheduled sequence, their positions, where their K/V
// go and which rows need next-token logits.

#include <cstdint>
#include <span>

#include "backend/attention_batch.h"
#include "backend/backend.h"

namespace pagoda::model {

struct ForwardBatch {
  std::span<const int32_t> token_ids;  // [n_tokens]
  std::span<const int32_t> positions;  // [n_tokens], position of each token in its sequence
  backend::AttentionBatch attention;   // sequences, KV slots, block size
  std::span<const int32_t> logit_rows; // batch rows whose next-token logits are wanted
  // Empty, or one flag per logit row: set where the caller needs only the row's greedy
  // token (core/argmax.h), which the pass then writes to argmax_ids (host memory,
  // [logit_rows.size()]); such a row's logits may be left unwritten (a GPU keeps them).
  std::span<const uint8_t> argmax_only;
  std::span<int32_t> argmax_ids;
  // Empty (every flagged row takes its greedy token), or one draw per logit row: a
  // flagged row takes the token Backend::draw_rows gives (temperature 0: its greedy
  // token), written to argmax_ids as well.
  std::span<const backend::RowDraw> draws;
};

}  // namespace pagoda::model
