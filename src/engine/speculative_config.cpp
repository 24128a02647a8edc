#include "engine/speculative_config.h"

namespace pagoda::engine {

int32_t SpeculativeConfig::max_draft_tokens() const {
  if (method == SpeculativeMethod::kNone) return 0;
  if (num_speculative_tokens > 0) return num_speculative_tokens;
  return method == SpeculativeMethod::kNgram ? 3 : 4;
}

Status SpeculativeConfig::validate() const {
  if (num_speculative_tokens < 0 || num_speculative_tokens > 16) {
    return invalid_argument("the number of speculative tokens must be in [0, 16], got " +
                            std::to_string(num_speculative_tokens));
  }
  if (ngram_min < 1 || ngram_max > 16 || ngram_min > ngram_max) {
    return invalid_argument("the n-gram sizes of prompt lookup must satisfy 1 <= min <= max <= 16, got min " +
                            std::to_string(ngram_min) + " and max " + std::to_string(ngram_max));
  }
  if (!(draft_p_min >= 0.0f && draft_p_min <= 1.0f)) {
    return invalid_argument("the draft's least chance to propose a token must be in [0, 1], got " +
                            std::to_string(draft_p_min));
  }
  return {};
}

std::string_view speculative_method_name(SpeculativeMethod method) {
  switch (method) {
    case SpeculativeMethod::kNone:
      return "none";
    case SpeculativeMethod::kNgram:
      return "ngram";
    case SpeculativeMethod::kDraft:
      return "draft";
  }
  return "none";
}

}  // namespace pagoda::engine
