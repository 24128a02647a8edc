#pragma once
// Picks a sequence's next token from the model's logits. Stage order follows the usual
// chain: logit bias, penalties, top-k, top-p, min-p, then temperature and a draw from
// the sequence's own seeded generator (or the best token when greedy). Owns all the
// per-sequence state (token history for the penalties, random generator) and a scratch
// buffer sized once for the vocabulary: sampling a token allocates nothing.

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "core/status.h"
#include "sampling/logprobs.h"
#include "engine/penalties.h"
#include "engine/sampling_params.h"
#include "sampling/row_sampling.h"
#include "sampling/stages.h"

namespace pagoda::engine {

struct SampledToken {
  int32_t token = -1;
  float logprob = 0.0f;               // log-softmax of the raw logits; 0 unless asked
  std::span<const TokenLogprob> top;  // the top_logprobs best; valid until the next sample()
};

class Sampler {
 public:
  // Fails on params out of range (see SamplingParams::validate).
  static Expected<Sampler> create(const SamplingParams& params, int32_t n_vocab);

  // Records tokens of the sequence for the penalties: the prompt's, then each token
  // chosen (the caller accepts what it keeps, so a rejected draft is never counted).
  void accept_prompt(std::span<const int32_t> tokens);
  void accept(int32_t token);

  // logits: [n_vocab], the raw next-token logits. allowed: empty, or a token bitmask
  // ([ceil(n_vocab / 32)] words, bit i % 32 of word i / 32 set = token i may be chosen;
  // a grammar's mask), applied before every other stage. Log-probabilities stay those of
  // the raw logits. Fails on a wrong size, or when the mask and the bias leave no token
  // with a finite logit.
  Expected<SampledToken> sample(std::span<const float> logits,
                                std::span<const uint32_t> allowed = {});

  // Speculative decoding's rejection rule needs the distribution sample() draws from
  // and draws of its own (sampler_distribution.cpp):
  //
  // The probability sample() would give each token for these logits and mask, written to
  // `probs` ([n_vocab]; 0 for tokens a stage removed; one-hot when greedy). Fails as
  // sample() does.
  Status distribution(std::span<const float> logits, std::span<const uint32_t> allowed,
                      std::span<float> probs);
  // `token` with its log-probabilities (when asked) as sample() reports them.
  SampledToken score(std::span<const float> logits, int32_t token);
  // The next number in [0, 1) from the sequence's generator.
  double draw_uniform() { return next_uniform(); }

  const SamplingParams& params() const { return params_; }
  // Whether the next token may be chosen where the logits are, by Backend::sample_rows
  // with device_sampling()'s row: at most kMaxDeviceTopLogprobs top log-probabilities
  // asked, and no token named twice in the bias (whose adds the sampler makes one after
  // the other). (A grammar's mask is the caller's: RequestProcessor.)
  bool samples_on_device() const { return samples_on_device_; }
  // Whether sample() reports log-probabilities (logprobs or top_logprobs asked).
  bool reports_logprobs() const { return params_.logprobs || params_.top_logprobs > 0; }
  // Whether the tokens after a request's proposals may be chosen there too (speculative
  // decoding's verification, one row a proposal): samples_on_device(), and no penalty
  // (which would change from row to row with the proposals before it).
  bool verifies_on_device() const { return samples_on_device_ && !penalties_.enabled(); }
  // The rows that make sample_rows give sample()'s tokens for the same logits (no mask):
  // rows[0] for the next token, rows[i] for the one after proposal i - 1 (more rows than
  // one only where verifies_on_device()). Their stages' settings; the bias and penalties
  // as adjustments appended to `adjustments` (each token once), which every row views;
  // and when drawing, the generator's next uniforms, one a row, taken now and kept in
  // order: a token the device chose spends the first (took_device_token()), a sample()
  // (a row left to the host) takes it as its own, and those of rows past the last token
  // kept serve the next tokens, so the generator's numbers go to the tokens in the
  // order sample() alone would give them.
  void device_sampling(std::vector<LogitAdjustment>& adjustments, std::span<RowSampling> rows);
  void took_device_token();
  float temperature() const { return params_.temperature; }
  // The error sample() gives when no token has a finite logit.
  static Status no_finite_logit();

 private:
  Sampler(const SamplingParams& params, int32_t n_vocab);
  // A row of logits ([n_vocab]) and a mask (empty, or at least ceil(n_vocab / 32) words).
  Status check_inputs(std::span<const float> logits, std::span<const uint32_t> allowed) const;
  CandidateList prepare_candidates(std::span<const float> logits);
  // The logits with -inf where `allowed` bans, in masked_.
  std::span<const float> apply_mask(std::span<const float> logits,
                                    std::span<const uint32_t> allowed);
  // In [0, 1), from 32 random bits: the same on every platform. The first that
  // device_sampling() took, if any is still kept.
  double next_uniform();
  double fresh_uniform();  // the generator's next, past any kept
  // Temperature sampling with no bias, penalty or truncation: a draw from the softmax of
  // the logits as they are, weights by exp_sum (core/exp_sum.h) into weights_. nullopt
  // (nothing drawn) when no logit is finite or one is NaN.
  std::optional<int32_t> draw_from_logits(std::span<const float> logits);
  // Fills result.logprob and result.top from the raw logits when the params ask.
  void add_logprobs(std::span<const float> raw_logits, SampledToken& result);

  SamplingParams params_;
  int32_t n_vocab_ = 0;
  Penalties penalties_;
  std::mt19937 rng_;
  std::vector<Candidate> candidates_;  // [n_vocab] scratch
  std::vector<float> weights_;         // [n_vocab] scratch: unnormalized softmax of the logits (draws, log-probabilities)
  std::vector<TokenLogprob> top_;      // [top_logprobs] scratch
  std::vector<float> masked_;          // [n_vocab] scratch, with a grammar: the logits, -inf where the mask bans
  bool samples_on_device_ = false;
  std::vector<double> kept_uniforms_;  // device_sampling()'s not yet spent, in the generator's order
  // [n_vocab], all -1 between calls, once device_sampling() has run with an adjustment:
  // where a token's adjustment lies in the list being built
  std::vector<int32_t> adjustment_index_;
};

}  // namespace pagoda::engine
