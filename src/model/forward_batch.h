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
  // Empty, or one flag per logit row: set where the caller needs only the row's token,
  // chosen where the logits are and written to device_tokens (host memory,
  // [logit_rows.size()]): its greedy token (core/argmax.h), or the token samplings[i]
  // gives (Backend::sample_rows). Such a row's logits may be left unwritten (a GPU keeps
  // them), unless its token is kLeftToHost: the pass then delivers its logits as well.
  std::span<const uint8_t> token_on_device;
  std::span<int32_t> device_tokens;
  // Empty (every flagged row takes its greedy token), or one sampling per logit row (an
  // unflagged row's is not used) and the adjustments they index.
  std::span<const RowSampling> samplings;
  std::span<const LogitAdjustment> adjustments;
  // Empty, or one report per logit row (host memory) where some flagged row's sampling
  // asks for log-probabilities: the pass writes those rows' (RowLogprobs).
  std::span<RowLogprobs> device_logprobs;
};

}  // namespace pagoda::model
