// EngineCore's proposals for speculative decoding: after a step, each request it sampled
// for that still runs gets the next step's proposals, as many as its adaptive draft
// length allows (draft_length.h) and never past its max_tokens or the context. Prompt
// lookup writes them at once; a draft model gets placeholders, which the scheduler sizes
// to its budget and the DraftProposer fills before the target's pass.
#include <algorithm>

#include "engine/engine_core.h"

namespace pagoda::engine {
namespace {

// A draft model's proposal not made yet (never run: the DraftProposer replaces it).
constexpr int32_t kPendingDraftToken = -1;

}  // namespace

void EngineCore::propose_drafts(const SchedulerOutput& plan) {
  if (!ngram_ && !draft_) return;
  const int32_t max_drafts = config_.speculative.max_draft_tokens();
  const int32_t n_decoding = scheduler_.n_running();
  for (const ScheduledRequest& entry : plan.scheduled) {
    if (!entry.samples) continue;
    Request* request = scheduler_.find(entry.id);
    if (request == nullptr || request->status != RequestStatus::kRunning) continue;
    // The draft's K/V past what the target kept is stale.
    request->draft_computed_tokens = std::min(request->draft_computed_tokens, request->num_computed_tokens);
    if (!request->speculative || request->num_computed_tokens != request->num_tokens() - 1) continue;
    // The last token sampled and every kept proposal must fit the context and max_tokens.
    const int32_t room = std::min({max_drafts,
                                   config_.scheduler.max_model_len - 1 - request->num_tokens(),
                                   request->stop.max_tokens - request->n_generated() - 1});
    const int32_t n_drafts = next_draft_length(request->draft_length, room, n_decoding);
    if (n_drafts <= 0) continue;
    if (ngram_) {
      ngram_->propose(request->tokens, n_drafts, request->draft_tokens);
    } else {
      request->draft_tokens.assign(static_cast<size_t>(n_drafts), kPendingDraftToken);
    }
  }
}

}  // namespace pagoda::engine
