#include "engine/sampling_params.h"

#include <cmath>
#include <sstream>
#include <string>

namespace pagoda::engine {
namespace {

// "name must be in [lo, hi], got x" when x is outside (or NaN).
Status check_range(const char* name, float x, float lo, float hi) {
  if (x >= lo && x <= hi) return Status::ok_status();
  std::ostringstream message;
  message << name << " must be in [" << lo << ", " << hi << "], got " << x;
  return invalid_argument(message.str());
}

}  // namespace

Status SamplingParams::validate(int32_t n_vocab) const {
  if (std::isnan(temperature)) return invalid_argument("temperature is NaN");
  PAGODA_TRY(check_range("top_p", top_p, 0.0f, 1.0f));
  PAGODA_TRY(check_range("min_p", min_p, 0.0f, 1.0f));
  if (!(repetition_penalty > 0.0f) || std::isinf(repetition_penalty)) {
    std::ostringstream message;
    message << "repetition_penalty must be a positive number, got " << repetition_penalty;
    return invalid_argument(message.str());
  }
  if (repetition_window < -1) {
    return invalid_argument(
        "repetition window must be -1 (whole sequence), 0 (off) or a "
        "token count, got " +
        std::to_string(repetition_window));
  }
  PAGODA_TRY(check_range("presence_penalty", presence_penalty, -2.0f, 2.0f));
  PAGODA_TRY(check_range("frequency_penalty", frequency_penalty, -2.0f, 2.0f));
  if (top_logprobs < 0 || top_logprobs > n_vocab) {
    return invalid_argument("top_logprobs must be in [0, " + std::to_string(n_vocab) + "], got " +
                            std::to_string(top_logprobs));
  }
  for (const auto& [token, bias] : logit_bias) {
    if (token < 0 || token >= n_vocab) {
      return invalid_argument("logit_bias names token " + std::to_string(token) +
                              ", outside the vocabulary of " + std::to_string(n_vocab));
    }
    if (std::isnan(bias) || bias == INFINITY) {
      return invalid_argument("logit_bias for token " + std::to_string(token) +
                              " must be a number or -inf");
    }
  }
  return Status::ok_status();
}

}  // namespace pagoda::engine
