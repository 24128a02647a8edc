#pragma once
// Log-probabilities of the raw logits: log_softmax(logits)[t] = logits[t] - max -
// log(sum_j exp(logits[j] - max)), the normalizer computed once per step: the exps by
// exp_sum (core/exp_sum.h: f32, about 1 ulp each, summed in double, the same bits on
// every CPU), which puts the log of the sum within ~1e-7 of the exact one, several times
// faster than the C library's exp in double over the vocabulary.

#include <cstdint>
#include <span>

namespace pagoda {

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;  // natural log
};

class LogSoftmax {
 public:
  // logits: [n_vocab] raw model output; scratch: at least n_vocab floats, overwritten.
  LogSoftmax(std::span<const float> logits, std::span<float> scratch);
  float operator()(int32_t token) const;

  // Writes the out.size() most likely tokens to `out`, most likely first (ties: lower
  // id first). out.size() <= logits.size().
  void top(std::span<TokenLogprob> out) const;

 private:
  std::span<const float> logits_;
  float max_ = 0.0f;
  double log_denominator_ = 0.0;  // log(sum_j exp(logits[j] - max))
};

}  // namespace pagoda
