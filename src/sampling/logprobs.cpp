#include "sampling/logprobs.h"

#include <algorithm>
#include <cmath>

#include "core/exp_sum.h"

namespace pagoda {
namespace {

// Higher log-probability first, then lower token id.
bool more_likely(const TokenLogprob& a, const TokenLogprob& b) {
  return a.logprob > b.logprob || (a.logprob == b.logprob && a.token < b.token);
}

}  // namespace

LogSoftmax::LogSoftmax(std::span<const float> logits, std::span<float> scratch) : logits_(logits) {
  max_ = -INFINITY;
  for (float x : logits) max_ = std::max(max_, x);
  // No finite logit (which the sampler refuses before asking): no weights, a sum of 0.
  const double sum = max_ > -INFINITY && scratch.size() >= logits.size()
                         ? exp_sum(logits.data(), static_cast<int64_t>(logits.size()), max_, 1.0f, scratch.data())
                         : 0.0;
  log_denominator_ = std::log(sum);
}

float LogSoftmax::operator()(int32_t token) const {
  return static_cast<float>(static_cast<double>(logits_[static_cast<size_t>(token)]) - max_ -
                            log_denominator_);
}

void LogSoftmax::top(std::span<TokenLogprob> out) const {
  if (out.empty()) return;
  // A heap of the best so far whose front is the worst of them: one pass, no allocation.
  size_t filled = 0;
  for (size_t id = 0; id < logits_.size(); ++id) {
    const TokenLogprob entry{static_cast<int32_t>(id), logits_[id]};
    if (filled < out.size()) {
      out[filled++] = entry;
      std::push_heap(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(filled), more_likely);
    } else if (more_likely(entry, out.front())) {
      std::pop_heap(out.begin(), out.end(), more_likely);
      out.back() = entry;
      std::push_heap(out.begin(), out.end(), more_likely);
    }
  }
  std::sort_heap(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(filled), more_likely);
  for (size_t i = 0; i < filled; ++i) out[i].logprob = (*this)(out[i].token);
}

}  // namespace pagoda
