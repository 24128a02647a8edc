#include "engine/draft_length.h"

#include <algorithm>
#include <cmath>

namespace pagoda::engine {
namespace {

constexpr float kAverageWeight = 0.3f;  // of the newest verification in the running average
constexpr int32_t kMaxWait = 64;

}  // namespace

float draft_acceptance_bar(int32_t n_decoding) {
  // Alone, a row is nearly free: verify whatever has a fair chance. Every request that
  // decodes beside it makes rows dearer, up to needing near certainty.
  return std::min(0.15f + 0.04f * static_cast<float>(std::max(n_decoding - 1, 0)), 0.9f);
}

int32_t next_draft_length(DraftLengthState& state, int32_t max_tokens, int32_t n_decoding) {
  if (max_tokens <= 0) return 0;
  if (state.wait_steps > 0) {
    --state.wait_steps;
    return state.wait_steps == 0 ? 1 : 0;  // the end of a wait: probe with one
  }
  const float bar = draft_acceptance_bar(n_decoding);
  int32_t k = 0;
  float reach = 1.0f;
  while (k < max_tokens) {
    reach *= state.acceptance;
    if (reach < bar) break;
    ++k;
  }
  if (k == 0) {
    state.wait_steps = state.next_wait;
    state.next_wait = std::min(state.next_wait * 2, kMaxWait);
  }
  return k;
}

void record_draft_outcome(DraftLengthState& state, int32_t proposed, int32_t accepted) {
  if (proposed <= 0) return;
  const float share = static_cast<float>(accepted) / static_cast<float>(proposed);
  state.acceptance = (1.0f - kAverageWeight) * state.acceptance + kAverageWeight * share;
  if (accepted > 0) state.next_wait = 4;
}

}  // namespace pagoda::engine
