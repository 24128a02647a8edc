#pragma once
// Speculative decoding's settings: which proposer suggests the next tokens of a request
// (none, prompt lookup over the request's own tokens, or a draft model) and how many it
// may suggest per step. The target model verifies every proposal in the batched step;
// the output is the one decoding without speculation gives (see RequestProcessor).

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace pagoda::engine {

enum class SpeculativeMethod {
  kNone,
  kNgram,  // prompt lookup: continue the latest earlier occurrence of the last n tokens
  kDraft,  // a smaller model with the same vocabulary proposes
};

struct SpeculativeConfig {
  SpeculativeMethod method = SpeculativeMethod::kNone;
  // Most proposals a request verifies per step; 0 takes the method's default (3 for
  // n-gram, 4 for a draft model).
  int32_t num_speculative_tokens = 0;
  // Prompt lookup matches the last n tokens for n from ngram_max down to ngram_min.
  int32_t ngram_min = 2;
  int32_t ngram_max = 4;
  // kDraft: the draft's GGUF file, which the caller loads (EngineCore takes the model).
  std::string draft_model_path;
  // Each request verifies as many proposals as are worth their rows (draft_length.h);
  // off: every request verifies num_speculative_tokens whenever it has them.
  bool adaptive = true;
  // kDraft, greedy requests: the draft stops proposing at the first token it gives less
  // than this chance (the rest of the run would likely be refused, each costing a row and
  // a draft pass); 0: never. Off by default: on the CPU the chance costs a pass over the
  // vocabulary per draft row, and the rows it saved were worth less (README).
  float draft_p_min = 0.0f;

  bool enabled() const { return method != SpeculativeMethod::kNone; }
  // num_speculative_tokens, or the method's default when it is 0.
  int32_t max_draft_tokens() const;
  // Fails on a count outside [0, 16], n-gram bounds outside 1 <= min <= max <= 16, or a
  // draft_p_min outside [0, 1].
  Status validate() const;
};

std::string_view speculative_method_name(SpeculativeMethod method);  // "none", "ngram", "draft"

}  // namespace pagoda::engine
