#pragma once
// How many proposals a request verifies in its next step, adapted per request: a
// proposal costs a row of the target's forward pass, which is almost free while decoding
// is bound by reading the weights and is not once the batch is large. Each request keeps
// an estimate of the chance that a proposal is accepted (a running average of its
// accepted share); the k-th proposal is worth verifying when the chance that it is
// reached and accepted, acceptance^k, clears the step's bar, which rises with the number
// of requests decoding at once. A request whose estimate falls below the bar for even
// one proposal stops proposing, and tries a single one again after a wait that doubles
// each time (so a request that was hard to predict can recover, at little cost).

#include <cstdint>

namespace pagoda::engine {

struct DraftLengthState {
  float acceptance = 0.6f;  // estimated chance a proposal is accepted, in [0, 1]
  int32_t wait_steps = 0;   // steps left without proposals
  int32_t next_wait = 4;    // the wait after the next failed probe
};

// The bar a proposal's reach-and-accept chance must clear with `n_decoding` requests in
// the step.
float draft_acceptance_bar(int32_t n_decoding);

// Proposals to verify next step, in [0, max_tokens]; counts down a wait.
int32_t next_draft_length(DraftLengthState& state, int32_t max_tokens, int32_t n_decoding);

// Records a verification: `accepted` of `proposed` (> 0) proposals were kept.
void record_draft_outcome(DraftLengthState& state, int32_t proposed, int32_t accepted);

}  // namespace pagoda::engine
