#pragma once
// How one sequence picks its next token: the knobs of the OpenAI API (temperature,
// top_p, presence / frequency penalties, logit_bias, seed, logprobs) plus the usual
// extras (top_k, min_p, repetition penalty). Plain data, checked once by validate().

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/status.h"
#include "engine/grammar_constraint.h"

namespace pagoda::engine {

struct SamplingParams {
  // <= 0 means greedy: the highest logit after bias and penalties, no randomness.
  float temperature = 1.0f;
  int32_t top_k = 0;   // keep the k highest logits; <= 0 keeps all
  float top_p = 1.0f;  // keep the smallest head whose probability mass reaches p; 1 = off
  float min_p = 0.0f;  // drop tokens less likely than min_p * (most likely); 0 = off

  // Multiplicative penalty (divides positive logits, multiplies negative ones) for every
  // token among the last `repetition_window` tokens of the sequence, prompt included.
  // 1 = off. The window: 0 disables the penalty, -1 covers the whole sequence.
  float repetition_penalty = 1.0f;
  int32_t repetition_window = 64;
  // OpenAI's additive penalties over the generated tokens only:
  // logit -= count * frequency_penalty + (count > 0) * presence_penalty.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;

  // Added to a token's logit before anything else (OpenAI's logit_bias; -inf bans).
  std::vector<std::pair<int32_t, float>> logit_bias;

  // Seeds the sequence's own generator: the same seed gives the same tokens. nullopt
  // draws a seed from std::random_device.
  std::optional<uint64_t> seed;

  // Report the chosen token's log-probability, and that of the `top_logprobs` most
  // likely tokens. Log-probabilities are the log-softmax of the model's raw logits,
  // before bias, penalties, truncation and temperature (what vLLM reports by default).
  bool logprobs = false;
  int32_t top_logprobs = 0;

  // Constrains the output to a grammar (null: free text). Shared, immutable: the
  // choices of a request with n > 1 each keep their own matcher over it.
  std::shared_ptr<const GrammarConstraint> grammar;

  bool greedy() const { return temperature <= 0.0f; }

  // Rejects values out of range (NaN included) and bias entries naming no token.
  Status validate(int32_t n_vocab) const;
};

}  // namespace pagoda::engine
