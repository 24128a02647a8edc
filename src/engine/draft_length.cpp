#include "engine/draft_length.h"

#include <algorithm>
#include <cmath>

namespace pagoda::engine {
namespace {

// What a request's earlier counts keep of their weight at each new verification.
constexpr float kOwnDecay = 0.7f;
constexpr float kMinAcceptance = 0.1f;   // below it a request waits before proposing again
constexpr int32_t kMaxWait = 64;
constexpr float kIdleDrift = 1.0f / 16.0f;  // of the way back to the prior, per idle step
// What the shared counts keep of their weight at each new verification (of any request).
constexpr float kSharedDecay = 15.0f / 16.0f;

}  // namespace

int32_t tried_proposals(int32_t proposed, int32_t accepted) {
  return accepted < proposed ? accepted + 1 : accepted;
}

void SharedAcceptance::record(int32_t proposed, int32_t accepted) {
  if (proposed <= 0) return;
  const int32_t tried = tried_proposals(proposed, accepted);
  kept_ = kSharedDecay * kept_ + static_cast<float>(accepted);
  trials_ = kSharedDecay * trials_ + static_cast<float>(tried);
  seen_ += tried;
}

float SharedAcceptance::estimate() const {
  const float m = mean();
  const float error = std::sqrt(m * (1.0f - m) / (static_cast<float>(seen_) + kPriorTrials));
  return std::min(1.0f, m + error);
}

void start_from_shared(DraftLengthState& state, const SharedAcceptance& shared) {
  if (state.verifications > 0) return;
  state.kept = shared.estimate() * kPriorTrials;
  state.trials = kPriorTrials;
}

int32_t draft_cap(DraftLengthState& state, int32_t max_tokens, bool* probe) {
  *probe = false;
  if (max_tokens <= 0) return 0;
  if (state.wait_steps > 0) {
    --state.wait_steps;
    *probe = state.wait_steps == 0;  // the end of a wait: probe with one
    return *probe ? 1 : 0;
  }
  if (state.acceptance() < kMinAcceptance) {
    state.wait_steps = state.next_wait;
    state.next_wait = std::min(state.next_wait * 2, kMaxWait);
    return 0;
  }
  return max_tokens;
}

int32_t own_draft_length(const DraftLengthState& state, int32_t max_tokens) {
  int32_t k = 0;
  float reach = 1.0f;
  while (k < max_tokens) {
    reach *= state.acceptance();
    if (reach < 1.0f / 3.0f) break;
    ++k;
  }
  return k;
}

void record_draft_outcome(DraftLengthState& state, int32_t proposed, int32_t accepted) {
  if (proposed <= 0) return;
  state.kept = kOwnDecay * state.kept + static_cast<float>(accepted);
  state.trials = kOwnDecay * state.trials + static_cast<float>(tried_proposals(proposed, accepted));
  ++state.verifications;
  if (accepted > 0) state.next_wait = 4;
}

void record_draft_idle(DraftLengthState& state, float prior) {
  const float acceptance = state.acceptance();
  if (acceptance >= prior) return;
  state.kept = (acceptance + kIdleDrift * (prior - acceptance)) * state.trials;
}

namespace {

struct Allocation {
  double tokens = 0.0;
  double seconds = 0.0;
  double rate() const { return seconds > 0.0 ? tokens / seconds : 0.0; }
};

// Takes the proposals in `gains` (sorted) of at most `max_k` per request while the
// expected tokens per second rise, each step paying `draft_seconds` for its draft passes.
Allocation allocate(std::span<DraftCandidate> candidates, std::span<const DraftGain> gains,
                    int32_t base, int32_t max_k, const StepCostModel& cost, double draft_seconds) {
  for (DraftCandidate& c : candidates) c.chosen = 0;
  Allocation step{static_cast<double>(base), cost.predict(base) + draft_seconds};
  int32_t rows = base;
  double fixed = 0.0;  // the chosen candidates' fixed_seconds
  for (const DraftGain& g : gains) {
    DraftCandidate& c = candidates[static_cast<size_t>(g.candidate)];
    if (g.k > max_k || g.k != c.chosen + 1) continue;  // an earlier proposal of it was not worth a row
    const double more_seconds = cost.predict(rows + 1) + draft_seconds + fixed + (g.k == 1 ? c.fixed_seconds : 0.0);
    // Worth it when the step's tokens per second rise: gain > cost x rate.
    const bool worth = g.probe || step.seconds <= 0.0 || more_seconds <= 0.0 ||  // nothing measured yet
                       g.gain > (more_seconds - step.seconds) * step.rate();
    if (!worth) continue;
    c.chosen = g.k;
    if (g.k == 1) fixed += c.fixed_seconds;
    step.tokens += g.gain;
    step.seconds = more_seconds;
    rows += 1;
  }
  return step;
}

}  // namespace

void choose_draft_lengths(std::span<DraftCandidate> candidates, int32_t n_decoding,
                          const StepCostModel& cost, double draft_pass_seconds,
                          std::vector<DraftGain>& scratch) {
  scratch.clear();
  int32_t longest = 0;
  bool probes = false;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const DraftCandidate& c = candidates[i];
    float gain = 1.0f;
    for (int32_t k = 1; k <= c.max_tokens; ++k) {
      gain *= c.acceptance;
      scratch.push_back({gain, c.probe, static_cast<int32_t>(i), k});
    }
    longest = std::max(longest, c.max_tokens);
    probes = probes || c.probe;
  }
  // Probes, then the most valuable first; a request's k-th proposal before its (k + 1)-th.
  std::stable_sort(scratch.begin(), scratch.end(), [](const DraftGain& a, const DraftGain& b) {
    return a.probe != b.probe ? a.probe : a.gain > b.gain;
  });
  const int32_t base = std::max(n_decoding, 1);
  if (draft_pass_seconds <= 0.0) {
    allocate(candidates, scratch, base, longest, cost, 0.0);
    return;
  }
  // A draft pass serves every request proposing that far: try each number of passes.
  int32_t best_k = 0;
  double best_rate = -1.0;
  for (int32_t k = probes ? 1 : 0; k <= longest; ++k) {
    const double rate = allocate(candidates, scratch, base, k, cost, draft_pass_seconds * k).rate();
    if (rate > best_rate) {
      best_rate = rate;
      best_k = k;
    }
  }
  allocate(candidates, scratch, base, best_k, cost, draft_pass_seconds * best_k);
}

}  // namespace pagoda::engine
