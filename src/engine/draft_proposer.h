#pragma once
// Speculative decoding with a draft model: a smaller model of the same vocabulary, run
// by the same engine on the same backend, proposes each request's next tokens. Its
// paged KV cache is its own storage indexed by the target's block tables (the same
// block ids, so its blocks are allocated, shared, copied on write and freed with the
// target's and cost nothing to manage). The draft runs only for requests that propose,
// so a batch whose requests have backed off pays nothing for it. Each step, before the
// target's forward pass:
//
//  1. one pass catches the draft's K/V of each proposing request up to its last token
//     (from Request::draft_computed_tokens: 0 for a new, preempted or forked request,
//     which never trusts K/V it did not write; it then catches up over its whole
//     context), whose row gives its first proposal; a request too far behind for the
//     pass's budget catches up in part and proposes nothing this step;
//  2. k - 1 more passes of one token per proposing request give the rest.
//
// Rows written into a block shared with other requests (a prefix, a fork) hold what
// those requests' draft computes there too, the tokens up to them being the same.
//
// A greedy request's proposals are the draft's most likely tokens (a point-mass
// proposal), kept exactly as far as the target's own choices agree. Its run of proposals
// ends at the first token the draft gives less than SpeculativeConfig::draft_p_min (its
// chance comes back with the token, RowSampling::logprobs): where the draft is unsure the
// target mostly refuses, and each proposal past the first refused one costs a row of the
// target's pass and a draft pass for nothing. The proposals it declines leave the plan
// (their blocks trimmed, listed by dropped()) and count as refused
// (Request::n_declined_drafts). A sampled request's
// are drawn from the draft's distribution at the request's temperature and truncation,
// kept in Request::draft_probs for the rejection rule (RequestProcessor::sample).

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "core/status.h"
#include "engine/engine_config.h"
#include "engine/model_runner.h"
#include "engine/scheduler.h"
#include "kv/kv_cache_manager.h"
#include "model/model.h"

namespace pagoda::engine {

class DraftProposer {
 public:
  // A draft over `draft` (loaded with config.draft_load_options() or larger; it must
  // outlive the proposer) with a KV storage of `n_blocks` blocks on `backend`.
  static Expected<std::unique_ptr<DraftProposer>> create(model::Model& draft, backend::Backend& backend,
                                                         const EngineConfig& config, int32_t n_blocks);

  // Bytes of one KV block of `draft`'s cache (what a block costs beside the target's).
  static uint64_t block_bytes(const model::Model& draft, const EngineConfig& config);

  // Runs steps 1 and 2 above for `plan` (whose block copies it applies to its storage
  // first): fills the proposals (draft_tokens, sized by the scheduler) of every
  // scheduled request with n_draft_tokens > 0 and moves draft_computed_tokens. The
  // requests it could not propose for have their proposals taken out of the plan (listed
  // by dropped(), for their KV blocks to be trimmed).
  Status propose(SchedulerOutput& plan, Scheduler& scheduler, const kv::KvCacheManager& kv);
  std::span<const RequestId> dropped() const { return dropped_; }
  int64_t n_tokens_run() const { return n_tokens_run_; }  // by the draft model, since start
  // Seconds of one pass that gives one proposal per request (a running average of the
  // passes after the first, whose catch-up varies), first timed when the proposer is
  // made (one request).
  double pass_seconds() const { return pass_seconds_; }
  // Seconds a token of catch-up costs (running average over first passes of several
  // tokens a request), first timed when the proposer is made.
  double catch_up_seconds_per_token() const { return catch_up_seconds_per_token_; }

 private:
  DraftProposer(std::unique_ptr<backend::KvStorage> storage, ModelRunner runner, float p_min);
  // Times a catch-up pass and a one-token pass on the draft's blocks (none in use yet: it
  // runs when the proposer is made), so that a first request's catch-up is priced at its
  // cost and not at a guess.
  Status measure_costs(int32_t block_size, int32_t n_blocks);
  // Proposal `index` of `request` from row `row` of a draft pass: its greedy token (a
  // greedy request's rows run token_on_device: their logits stay where they are) or a draw
  // from its logits. False where the draft declines it (a greedy token below p_min).
  Expected<bool> choose(Request& request, size_t index, const StepLogits& logits, int32_t row);
  // Proposing request i keeps its first `kept` proposals, the plan and its entry their rows.
  void decline(SchedulerOutput& plan, size_t i, int32_t kept);

  std::unique_ptr<backend::KvStorage> storage_;
  ModelRunner runner_;
  std::vector<RunnerSequence> sequences_;  // [requests of a pass]
  std::vector<Request*> proposing_;        // [requests with proposals to fill], in pass 1's order
  std::vector<ScheduledRequest*> entries_;  // [the same]: their entries in the plan
  float log_p_min_;                         // log(draft_p_min); -inf: the draft declines nothing
  std::vector<RequestId> dropped_;         // [requests whose proposals the step lost]
  int64_t n_tokens_run_ = 0;
  double pass_seconds_ = 0.0;
  double catch_up_seconds_per_token_ = 0.0;
};

}  // namespace pagoda::engine
