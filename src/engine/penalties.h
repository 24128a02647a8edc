#pragma once
// The token history the penalties need, kept per sequence:
//  - repetition: every token among the last `window` tokens of the sequence (prompt
//    included), as a sliding window with a count per token id;
//  - presence / frequency: how often each token id was generated so far.
// Counts are vocabulary-sized arrays, allocated once, and only for the penalties that
// are switched on.

#include <cstdint>
#include <span>
#include <vector>

#include "engine/sampling_params.h"
#include "sampling/row_sampling.h"
#include "sampling/stages.h"

namespace pagoda::engine {

class Penalties {
 public:
  Penalties() = default;
  Penalties(const SamplingParams& params, int32_t n_vocab);

  bool enabled() const { return repetition_enabled() || additive_enabled(); }

  // Records a token of the sequence; `generated` is false for prompt tokens.
  void accept(int32_t token, bool generated);

  // Penalizes `candidates`, which must hold every token of the vocabulary in id order.
  void apply(std::span<Candidate> candidates) const;

  // What apply() does, as adjustments (sampling/row_sampling.h) appended to `out`: one
  // kRepeated per token in the repetition window (a token may come more than once), one
  // kSubtract per generated token, never merged; the caller merges them per token.
  void append_adjustments(std::vector<LogitAdjustment>& out) const;
  float repetition_penalty() const { return repetition_penalty_; }

 private:
  bool repetition_enabled() const { return !window_count_.empty(); }
  bool additive_enabled() const { return !generated_count_.empty(); }
  // What a token generated `count` (> 0) times has subtracted from its logit.
  float subtraction(int32_t count) const {
    return static_cast<float>(count) * frequency_penalty_ + presence_penalty_;
  }

  float repetition_penalty_ = 1.0f;
  float presence_penalty_ = 0.0f;
  float frequency_penalty_ = 0.0f;

  std::vector<int32_t> window_;           // ring of the last tokens; empty: whole sequence
  size_t window_next_ = 0;                // ring slot the next token goes to
  size_t window_filled_ = 0;              // ring slots in use
  std::vector<int32_t> window_count_;     // [n_vocab] occurrences inside the window
  std::vector<int32_t> generated_count_;  // [n_vocab] occurrences among generated tokens
  // Each token once, in the order first seen: those with a window count (kept only when
  // the window is the whole sequence: otherwise the ring holds them) and those generated.
  std::vector<int32_t> seen_tokens_;
  std::vector<int32_t> generated_tokens_;
};

}  // namespace pagoda::engine
