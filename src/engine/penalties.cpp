#include "engine/penalties.h"

namespace pagoda::engine {

Penalties::Penalties(const SamplingParams& params, int32_t n_vocab)
    : repetition_penalty_(params.repetition_penalty),
      presence_penalty_(params.presence_penalty),
      frequency_penalty_(params.frequency_penalty) {
  const size_t vocab = static_cast<size_t>(n_vocab);
  if (params.repetition_penalty != 1.0f && params.repetition_window != 0) {
    window_count_.assign(vocab, 0);
    if (params.repetition_window > 0)
      window_.assign(static_cast<size_t>(params.repetition_window), 0);
  }
  if (params.presence_penalty != 0.0f || params.frequency_penalty != 0.0f) {
    generated_count_.assign(vocab, 0);
  }
}

void Penalties::accept(int32_t token, bool generated) {
  if (token < 0) return;
  const size_t id = static_cast<size_t>(token);
  if (generated && additive_enabled() && id < generated_count_.size() && generated_count_[id]++ == 0) {
    generated_tokens_.push_back(token);
  }
  if (!repetition_enabled() || id >= window_count_.size()) return;
  if (window_count_[id]++ == 0 && window_.empty()) seen_tokens_.push_back(token);
  if (window_.empty()) return;  // the whole sequence counts: nothing ever leaves
  if (window_filled_ == window_.size()) {
    --window_count_[static_cast<size_t>(window_[window_next_])];  // the oldest leaves
  } else {
    ++window_filled_;
  }
  window_[window_next_] = token;
  window_next_ = (window_next_ + 1) % window_.size();
}

void Penalties::apply(std::span<Candidate> candidates) const {
  if (repetition_enabled()) {
    for (size_t id = 0; id < window_count_.size() && id < candidates.size(); ++id) {
      if (window_count_[id] == 0) continue;
      float& logit = candidates[id].logit;
      // Shrinks the logit toward "less likely" whatever its sign.
      logit = logit <= 0.0f ? logit * repetition_penalty_ : logit / repetition_penalty_;
    }
  }
  if (additive_enabled()) {
    for (size_t id = 0; id < generated_count_.size() && id < candidates.size(); ++id) {
      const int32_t count = generated_count_[id];
      if (count == 0) continue;
      candidates[id].logit -= subtraction(count);
    }
  }
}

void Penalties::append_adjustments(std::vector<LogitAdjustment>& out) const {
  if (repetition_enabled()) {
    const std::span<const int32_t> tokens =
        window_.empty() ? std::span<const int32_t>(seen_tokens_) : std::span<const int32_t>(window_).first(window_filled_);
    for (const int32_t token : tokens) out.push_back(LogitAdjustment{token, kRepeated, 0.0f, 0.0f});
  }
  for (const int32_t token : generated_tokens_) {
    out.push_back(LogitAdjustment{token, kSubtract, 0.0f, subtraction(generated_count_[static_cast<size_t>(token)])});
  }
}

}  // namespace pagoda::engine
