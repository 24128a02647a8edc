#pragma once
// A row's next token chosen where its logits are (Backend::sample_rows), with every stage
// of the engine's sampler: the request's logit bias and penalties as per-token
// adjustments, then top-k, top-p, min-p, and the greedy token or a temperature draw with
// a uniform the sampler took from the request's generator. sample_row is the op on the
// host: the CPU backend's op, and the reference the CUDA kernel (sample_rows.cu)
// reproduces bit for bit. A row that truncation leaves with more than
// kRowSamplingCapacity tokens, or whose adjusted logits hold a NaN or +inf (or its raw
// logits, where it reports log-probabilities), it leaves to the host's sampler
// (kLeftToHost), which then reads the row's logits; a backend may leave more rows so (the
// token is the same either way).

#include <cmath>
#include <cstdint>
#include <span>

#include "core/status.h"
#include "sampling/logprobs.h"
#include "sampling/stages.h"

namespace pagoda {

// What an adjustment does to its token's logit, in the sampler's order: add the bias,
// then shrink by the repetition penalty, then subtract the additive penalties.
enum LogitAdjustmentFlags : uint32_t { kAddBias = 1u, kRepeated = 2u, kSubtract = 4u };

struct LogitAdjustment {
  int32_t token = 0;
  uint32_t flags = 0;     // LogitAdjustmentFlags
  float bias = 0.0f;      // kAddBias: the request's logit_bias for the token
  float subtract = 0.0f;  // kSubtract: count * frequency_penalty + presence_penalty
};

// One row's sampling. Its adjustments are [first_adjustment, first_adjustment +
// n_adjustments) of the op's list, each token at most once.
struct RowSampling {
  float temperature = 0.0f;          // 0: the greedy token of the adjusted logits
  double uniform = 0.0;              // in [0, 1): where a draw falls
  int32_t top_k = 0;                 // <= 0 or >= the vocabulary: off
  float top_p = 1.0f;                // in [0, 1]; 1: off
  float log_min_p = -INFINITY;       // log(min_p), taken on the host; -inf: off
  float repetition_penalty = 1.0f;   // for the kRepeated tokens
  int32_t first_adjustment = 0;
  int32_t n_adjustments = 0;
  // Report the log-probabilities of the raw logits (RowLogprobs): the chosen token's, and
  // those of the top_logprobs most likely (at most kMaxDeviceTopLogprobs).
  bool logprobs = false;
  int32_t top_logprobs = 0;
};

// The most top log-probabilities a row may ask of sample_rows (OpenAI's limit).
inline constexpr int32_t kMaxDeviceTopLogprobs = 20;

// What sample_rows reports of a row that asks for log-probabilities, as LogSoftmax gives
// them (sampling/logprobs.h).
struct RowLogprobs {
  float chosen = 0.0f;  // the chosen token's
  int32_t n_top = 0;    // the row's top_logprobs
  TokenLogprob top[kMaxDeviceTopLogprobs] = {};  // most likely first (ties: lower id)
};
// A device buffer of them is addressed as 32-bit words.
inline constexpr int64_t kRowLogprobsWords = static_cast<int64_t>(sizeof(RowLogprobs) / 4);
static_assert(sizeof(RowLogprobs) % 4 == 0);

// sample_row's answer for a row the host's sampler is to take.
inline constexpr int32_t kLeftToHost = -2;
// The most tokens truncation may leave a row with for it to be sampled where its logits
// are (a short list a GPU block sorts in its shared memory).
inline constexpr int32_t kRowSamplingCapacity = 4096;

// The logit after an adjustment, with the sampler's operations (Sampler's bias, then
// Penalties::apply).
inline float adjusted_logit(float logit, const LogitAdjustment& a, float repetition_penalty) {
  if ((a.flags & kAddBias) != 0u) logit += a.bias;
  if ((a.flags & kRepeated) != 0u) logit = logit <= 0.0f ? logit * repetition_penalty : logit / repetition_penalty;
  if ((a.flags & kSubtract) != 0u) logit -= a.subtract;
  return logit;
}

// Whether the row truncates (top-k below the vocabulary, top-p below 1 or min-p on).
inline bool truncates(const RowSampling& row, int64_t n_vocab) {
  return (row.top_k > 0 && row.top_k < n_vocab) || row.top_p < 1.0f || row.log_min_p > -INFINITY;
}

// Fails unless every row's settings are in range (temperature >= 0, uniform in [0, 1),
// top-p in [0, 1], log_min_p <= 0, a positive finite repetition penalty, top_logprobs
// in [0, min(kMaxDeviceTopLogprobs, n_vocab)]) and its
// adjustments lie in `adjustments` and name tokens below n_vocab with a bias that is a
// number or -inf and a finite subtraction. (That a token is named once per row is the
// caller's to keep.)
Status check_row_samplings(std::span<const RowSampling> rows, std::span<const LogitAdjustment> adjustments,
                           int64_t n_vocab);

// The token of `row` over `logits` ([n_vocab]): greedy_token or draw_token
// (sampling/draw.h) where nothing adjusts or truncates; otherwise the sampler's stages
// over the adjusted logits (sampling/stages.h): -1 where no adjusted logit is above
// -inf, kLeftToHost as above, with `capacity` in place of kRowSamplingCapacity (the CPU
// backend, whose logits are on the host already, sets no limit). adjustments: the row's
// own; candidates, weights: [n_vocab] scratch.
// Where the row asks for log-probabilities and gets a token, `logprobs` receives them.
int32_t sample_row(std::span<const float> logits, const RowSampling& row,
                   std::span<const LogitAdjustment> adjustments, std::span<Candidate> candidates,
                   std::span<float> weights, int64_t capacity = kRowSamplingCapacity,
                   RowLogprobs* logprobs = nullptr);

}  // namespace pagoda
