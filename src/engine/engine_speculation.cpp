// EngineCore's proposals for speculative decoding: after a step, each request it sampled
// for that still runs gets the next step's proposals, as many as are worth their rows
// (draft_length.h: its acceptance, what a row costs as measured) and never past its
// max_tokens or the context. Prompt lookup writes them at once; a draft model gets
// placeholders, which the scheduler sizes to its budget and the DraftProposer fills
// before the target's pass.
#include <algorithm>

#include "engine/engine_core.h"

namespace pagoda::engine {
namespace {

// A draft model's proposal not made yet (never run: the DraftProposer replaces it).
constexpr int32_t kPendingDraftToken = -1;

// Leaves `n` proposals: the first n prompt lookup found, or n placeholders for a draft.
void keep_drafts(Request& request, bool looked_up, int32_t n) {
  if (looked_up) {
    request.draft_tokens.resize(static_cast<size_t>(n));
  } else {
    request.draft_tokens.assign(static_cast<size_t>(n), kPendingDraftToken);
  }
}

}  // namespace

double EngineCore::catch_up_charge(const Request& request, int32_t room) const {
  const int32_t lag = request.num_tokens() - 1 - request.draft_computed_tokens;
  if (lag <= 1) return 0.0;
  const double per_token = draft_->catch_up_seconds_per_token();
  // Spread over the steps left, but no more than 16 of them: the catch-up must pay back
  // soon, not in a distant future that a cost estimate off by a little would never reach.
  const double steps_left = std::clamp(room / (1.0 + request.draft_length.acceptance()), 1.0, 16.0);
  return lag * per_token / steps_left;
}

void EngineCore::limit_unmeasured_catch_ups(const StepCostModel& cost) {
  int32_t rows = scheduler_.n_running();
  for (const DraftCandidate& candidate : candidates_) rows += candidate.chosen;
  if (cost.measured(rows)) return;
  bool started = false;
  for (DraftCandidate& candidate : candidates_) {
    if (candidate.fixed_seconds <= 0.0 || candidate.chosen == 0) continue;
    if (started) candidate.chosen = 0;
    started = true;
  }
}

void EngineCore::propose_drafts(const SchedulerOutput& plan) {
  if (!ngram_ && !draft_) return;
  const int32_t max_drafts = config_.speculative.max_draft_tokens();
  const bool adaptive = config_.speculative.adaptive;
  const StepCostModel& cost = step_costs_.pricing();  // one model for the whole decision
  candidates_.clear();
  candidate_requests_.clear();
  for (const ScheduledRequest& entry : plan.scheduled) {
    if (!entry.samples) continue;
    Request* request = scheduler_.find(entry.id);
    if (request == nullptr || request->status != RequestStatus::kRunning) continue;
    // The draft's K/V past what the target kept is stale.
    request->draft_computed_tokens = std::min(request->draft_computed_tokens, request->num_computed_tokens);
    if (!request->speculative || request->num_computed_tokens != request->num_tokens() - 1) continue;
    // The last token sampled and every kept proposal must fit the context and max_tokens.
    const int32_t remaining = std::min(config_.scheduler.max_model_len - 1 - request->num_tokens(),
                                       request->stop.max_tokens - request->n_generated() - 1);
    const int32_t room = std::min(max_drafts, remaining);
    // A seeded request with drawn proposals keeps to its own history (see
    // own_draft_length): its output then depends on its seed alone.
    const bool own = draft_ && !request->sampling.greedy() && request->sampling.seed.has_value();
    if (!own) start_from_shared(request->draft_length, shared_acceptance_);
    const bool exploring = !own && shared_acceptance_.exploring();
    bool probe = false;
    int32_t available = adaptive ? draft_cap(request->draft_length, room, &probe) : room;
    if (available <= 0) continue;
    if (ngram_) {
      ngram_->propose(request->tokens, available, request->draft_tokens);
      available = static_cast<int32_t>(request->draft_tokens.size());
      if (available == 0) continue;
    }
    if (!adaptive || own) {
      keep_drafts(*request, ngram_.has_value(),
                  !adaptive || probe ? available : own_draft_length(request->draft_length, available));
      continue;
    }
    const double fixed_seconds = draft_ ? catch_up_charge(*request, remaining) : 0.0;
    // A catch-up is weighed against a step of this many requests as measured, never
    // against a guess from other sizes (a prompt step would make it look cheap).
    if (fixed_seconds > 0.0 && !cost.measured(scheduler_.n_running())) continue;
    candidates_.push_back({.acceptance = request->draft_length.acceptance(),
                           .max_tokens = available,
                           .probe = probe || exploring,
                           .fixed_seconds = fixed_seconds});
    candidate_requests_.push_back(request);
  }
  if (candidates_.empty()) return;
  choose_draft_lengths(candidates_, scheduler_.n_running(), cost, draft_ ? draft_->pass_seconds() : 0.0,
                       draft_gains_);
  limit_unmeasured_catch_ups(cost);
  for (size_t i = 0; i < candidates_.size(); ++i) {
    keep_drafts(*candidate_requests_[i], ngram_.has_value(), candidates_[i].chosen);
    if (candidates_[i].chosen == 0) record_draft_idle(candidate_requests_[i]->draft_length, shared_acceptance_.estimate());
  }
}

}  // namespace pagoda::engine
