#pragma once
// How many proposals each request verifies in the next step (speculative decoding).
//
// Each request keeps an estimate of the chance that one of its proposals is kept, so that
// its k-th proposal is worth acceptance^k tokens. Proposals are verified in order and the
// first one refused ends a verification: those after it were never tried. So a
// verification of k proposals with j kept is j successes in j + 1 trials (j < k) or k in
// k, and the estimate is kept / trials over the recent verifications (a share kept of
// those proposed would count the untried ones as refused: at a true chance of 0.9, four
// proposals a verification keep 3.1 on average, and 3.1 / 4 reads as 0.78).
//
// A proposal costs a row of the next forward pass, and with a draft model a draft pass
// for the step's longest run of proposals; what a row costs comes from the engine's
// measurements of its decoding steps, whose rows all have logits as a proposal's does
// (StepCostModel): nearly nothing while a pass is bound by reading the weights, a real
// share once the batch is large. choose_draft_lengths() gives rows to the most valuable
// proposals of all requests, while the step's expected tokens per second still rise.
//
// A request's estimate starts from what the engine's verifications of all requests keep
// (SharedAcceptance): a new request whose proposer has served the others well speculates
// from its first step, one whose proposer has not waits. The engine measures its
// proposer before it judges it: until its verifications have tried a few proposals, every
// request's are verified whatever they cost (a draft model's first request would otherwise
// weigh its costly catch-up over the prompt against the prior and never learn how good
// the draft is; and the first proposal after a prompt, where models differ in style
// more than anywhere, is often refused). While the trials are still few the shared
// estimate is optimistic too (plus its standard error), so that those first verifications
// are long enough to measure something. A request whose estimate falls very low stops
// proposing, and tries a single proposal again after a wait that doubles each time (so a
// request that was hard to predict can recover, at little cost). An estimate below that
// shared one that no verification refreshes (the request proposes, but its proposals are
// not worth their rows) drifts back up towards it, so that one unlucky early verification
// does not keep a request from speculating for the rest of its life: where rows are cheap
// it is soon verified again and measured; where they are dear it still gets none.

#include <cstdint>
#include <span>
#include <vector>

#include "engine/step_cost.h"

namespace pagoda::engine {

// The estimate before any verification has measured one.
inline constexpr float kPriorAcceptance = 0.6f;

// The estimate's weight in trials before any verification: the prior's, and a request's
// start from the shared estimate.
inline constexpr float kPriorTrials = 2.0f;

struct DraftLengthState {
  float kept = kPriorAcceptance * kPriorTrials;  // proposals kept, recent ones weighing more
  float trials = kPriorTrials;                   // proposals tried, weighed alike
  int32_t wait_steps = 0;     // steps left without proposals
  int32_t next_wait = 4;      // the wait after the next failed probe
  int32_t verifications = 0;  // of the request's own proposals so far

  // The estimated chance a proposal is kept, in [0, 1].
  float acceptance() const { return kept / trials; }
};

// Proposals tried by a verification of `proposed` proposals of which `accepted` were
// kept: the kept ones, and the one refused if any.
int32_t tried_proposals(int32_t proposed, int32_t accepted);

// The chance a proposal is kept, over the recent verifications of all requests: kept /
// tried, each verification's counts weighing less as newer ones come, the prior counting
// as kPriorTrials trials. estimate() adds the standard error of a mean over all the
// trials seen so far (optimism while they are few, fading as they grow).
class SharedAcceptance {
 public:
  void record(int32_t proposed, int32_t accepted);
  float mean() const { return (kept_ + kPriorAcceptance * kPriorTrials) / (trials_ + kPriorTrials); }
  float estimate() const;
  int64_t trials_seen() const { return seen_; }
  // Fewer than kExplorationTrials proposals tried so far: verify them whatever they cost.
  bool exploring() const { return seen_ < kExplorationTrials; }
  static constexpr int64_t kExplorationTrials = 8;

 private:
  float kept_ = 0.0f;    // decayed sums over the verifications
  float trials_ = 0.0f;
  int64_t seen_ = 0;     // trials of all verifications, not decayed
};

// Where a request's own estimate starts and drifts back to: `shared` (as kPriorTrials
// trials) until its first verification (a request whose output must depend on its seed
// alone, see own_draft_length, keeps kPriorAcceptance instead).
void start_from_shared(DraftLengthState& state, const SharedAcceptance& shared);

// The most proposals the request may verify next step: 0 while it waits, 1 when a wait
// ends (a probe: *probe set), else max_tokens; starts a wait when its estimate has
// fallen too low.
int32_t draft_cap(DraftLengthState& state, int32_t max_tokens, bool* probe);

// The proposals worth verifying judged by the request's own estimate alone (at most
// max_tokens, each with a chance of at least one in three to be reached and kept): for a
// request whose output must not depend on what else runs (a seeded request whose
// proposals are drawn), since the engine's measurements do.
int32_t own_draft_length(const DraftLengthState& state, int32_t max_tokens);

// Records a verification: `accepted` of `proposed` (> 0) proposals were kept.
void record_draft_outcome(DraftLengthState& state, int32_t proposed, int32_t accepted);

// Records a step in which the request had proposals but none was worth a row: an
// estimate below `prior` (the shared estimate) moves a step of its way back up.
void record_draft_idle(DraftLengthState& state, float prior);

// One request's claim on the next step.
struct DraftCandidate {
  float acceptance = 0.0f;  // DraftLengthState::acceptance()
  int32_t max_tokens = 0;   // proposals it has (or may have) for the step
  // Its proposals verified whatever they cost: the one of the end of a wait, or all of
  // them while the engine explores (SharedAcceptance::exploring).
  bool probe = false;
  // Seconds its first proposal adds to the step besides its row: a draft model's
  // catch-up over the tokens it has not run for the request, spread over the steps the
  // request is expected to have left, 16 at most (a one-time cost that only pays if
  // speculating keeps paying); 0 for prompt lookup.
  double fixed_seconds = 0.0;
  int32_t chosen = 0;       // set by choose_draft_lengths
};

// A proposal's expected worth, for ordering (scratch of choose_draft_lengths).
struct DraftGain {
  float gain = 0.0f;   // acceptance^k
  bool probe = false;  // chosen whatever it costs, first
  int32_t candidate = 0;
  int32_t k = 0;
};

// Sets each candidate's `chosen` in [0, max_tokens]. n_decoding: the requests that
// decode next step (one row and one token each, proposals or not); draft_pass_seconds:
// what one draft pass costs (0 for prompt lookup).
void choose_draft_lengths(std::span<DraftCandidate> candidates, int32_t n_decoding,
                          const StepCostModel& cost, double draft_pass_seconds,
                          std::vector<DraftGain>& scratch);

}  // namespace pagoda::engine
