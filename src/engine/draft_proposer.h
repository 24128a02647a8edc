#pragma once
// Speculative decoding with a draft model: a smaller model of the same vocabulary, run
// by the same engine on the same backend, proposes each request's next tokens. Its
// paged KV cache is its own storage indexed by the target's block tables (the same
// block ids, so its blocks are allocated, shared, copied on write, cached and freed with
// the target's and cost nothing to manage). Each step, before the target's forward pass:
//
//  1. one pass over every scheduled request catches the draft's K/V up with the tokens
//     the target computes this step (prompt chunks included), plus the one position it
//     may trail by (a kept last proposal it never ran); a request verifying k
//     proposals this step gets its first proposal from that pass's last row;
//  2. k - 1 more passes of one token per such request give the rest.
//
// A greedy request's proposals are the draft's most likely tokens (a point-mass
// proposal), kept exactly as far as the target's own choices agree. A sampled request's
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
  // scheduled request with n_draft_tokens > 0 and moves draft_computed_tokens.
  Status propose(const SchedulerOutput& plan, Scheduler& scheduler, const kv::KvCacheManager& kv);

 private:
  DraftProposer(std::unique_ptr<backend::KvStorage> storage, ModelRunner runner);
  // Proposal `index` of `request` from the draft's next-token logits ([n_vocab]).
  Status choose(Request& request, size_t index, std::span<const float> logits);

  std::unique_ptr<backend::KvStorage> storage_;
  ModelRunner runner_;
  std::vector<RunnerSequence> sequences_;  // [requests of a pass]
  std::vector<Request*> proposing_;        // [requests with proposals to fill], in pass 1's order
};

}  // namespace pagoda::engine
