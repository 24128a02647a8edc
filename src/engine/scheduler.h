#pragma once
// Continuous batching (DESIGN.md invariant 2): each step, every running request moves
// num_computed_tokens toward num_tokens under a token budget. Running requests go first
// (decodes and unfinished prompt chunks, in order), then waiting ones are admitted by
// priority and arrival while budget, the running cap and KV blocks allow; a prompt
// larger than what is left of the budget is prefilled in chunks over several steps.
// Prefix-cache hits start a request at its first uncached token. When the KV blocks run
// out for a running request, the lowest-priority, latest-arrived running request is
// preempted (its blocks freed, num_computed_tokens back to 0, back to the waiting queue
// with its generated tokens kept) and later recomputed, giving the same result.
//
// Policy details:
//  - Both queues are kept in (priority, arrival) order, so the running request to
//    preempt is always the last one, and earlier (more important) running requests get
//    the step's budget first. Preemption only happens among running requests: a newly
//    arrived request of higher priority waits for a free slot and free blocks, it does
//    not evict running work (vLLM's default). A step that preempted admits nobody, so a
//    request that just lost its blocks is not readmitted into the same shortage.
//  - Admission stops at the first waiting request the KV blocks cannot hold: a lower
//    priority request never overtakes a higher one that is waiting for blocks. The one
//    exception is an `n` completion (`parent` set) waiting for its parent's prompt: it
//    is skipped, since it waits for its parent, not for resources.
//  - An `n` completion starts from its parent's blocks once the parent has computed all
//    but the last prompt token (KvCacheManager::fork, num_computed_tokens =
//    n_prompt_tokens - 1): it recomputes the last prompt token into its own copy of the
//    block holding it, which gives it its own logits. A child whose parent is not
//    running any more (finished, aborted, preempted) is admitted like any request; the
//    prefix cache then finds what its parent left.
//  - Speculation: a running request's proposals (Request::draft_tokens) run in the same
//    step as its last token, as many as the budget and the context leave room for;
//    update() keeps the accepted ones and gives back the blocks written past them.
//  - Context: no position at or past max_model_len is ever scheduled. add() rejects
//    prompts that leave no room for one generated token, and the engine finishes a
//    request ("length") when num_tokens reaches max_model_len, so in practice positions
//    [0, max_model_len - 1) are computed at most (the last token is sampled, never run).
//  - The KV pool must hold at least one request's worst case (see add()); the engine
//    should size it for one max_model_len request, then add() never refuses for blocks.
// Not thread-safe: the engine thread owns it.

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "engine/request.h"
#include "engine/scheduler_output.h"
#include "kv/kv_cache_manager.h"

namespace pagoda::engine {

struct SchedulerConfig {
  int32_t max_batched_tokens = 512;  // tokens per step, all requests together (>= 1)
  int32_t max_running = 64;          // requests holding KV at once (>= 1)
  int32_t max_model_len = 2048;      // tokens per request, prompt and output (the context, >= 2)

  // Fails on values out of the ranges above (the constructor clamps them instead).
  Status validate() const;
};

struct SchedulerStats {
  int64_t n_preemptions = 0;  // since start
  // Tokens run that were not single-token decodes: prompt chunks (prefix-cache hits
  // excluded), a forked child's recomputed last prompt token, and generated tokens
  // recomputed after a preemption. Counted when schedule() returns them.
  int64_t n_prefilled_tokens = 0;
  // Tokens run as single-token steps of a generated token (position >= n_prompt_tokens),
  // and the proposals scheduled beside such a token.
  int64_t n_decoded_tokens = 0;
  // Speculative decoding, counted by update(): proposals verified, and of them those
  // kept; request-steps that verified at least one proposal.
  int64_t n_draft_tokens = 0;
  int64_t n_accepted_draft_tokens = 0;
  int64_t n_speculative_steps = 0;
  // The kept share of the proposals verified, and proposals kept per verifying
  // request-step (0 before any).
  double acceptance_rate() const {
    return n_draft_tokens > 0 ? static_cast<double>(n_accepted_draft_tokens) / static_cast<double>(n_draft_tokens) : 0.0;
  }
  double mean_accepted_length() const {
    return n_speculative_steps > 0
               ? static_cast<double>(n_accepted_draft_tokens) / static_cast<double>(n_speculative_steps)
               : 0.0;
  }
  // The prefix cache as admissions used it: one query per admission of a waiting
  // request (first admission or resume), not per lookup, since a request that cannot
  // get blocks is looked up again every step until it can.
  kv::PrefixCacheStats prefix_cache;
};

class Scheduler {
 public:
  // `config` should pass validate(); out-of-range values are raised to their minimum.
  // The manager must outlive the scheduler and hold no table of the scheduler's ids.
  Scheduler(SchedulerConfig config, kv::KvCacheManager& kv);

  // Queues a new request (status kWaiting, num_computed_tokens 0, arrival stamped
  // here). Fails (InvalidArgument) when it could never run: a null request, an id
  // already queued, no tokens, n_prompt_tokens outside [1, tokens.size()], more than
  // max_model_len - 1 tokens (no room left to generate one), a worst case needing more
  // KV blocks than the pool has (the K/V of min(n_prompt + stop.max_tokens,
  // max_model_len) - 1 positions), a parent that is itself, or a queued parent with
  // another prompt or cache salt.
  Status add(std::unique_ptr<Request> request);
  // What add() would refuse `request` for, without taking it.
  Status check_new_request(const Request& request) const;
  // Decides the next step; empty when nothing can run.
  SchedulerOutput schedule();
  // Applies a finished step: every scheduled request's num_computed_tokens advances by
  // its n_tokens less the proposals it did not keep, kept proposals and sampled tokens
  // are appended (one sampled token per request with `samples`), the KV blocks past a
  // request's kept tokens go back to the pool, its proposals are cleared, and newly full
  // blocks go to the prefix cache. Ids that are no longer queued (finished since
  // schedule()) are skipped, and so is an entry already applied, or a token for a
  // request that still has tokens to compute.
  void update(const SchedulerOutput& output, std::span<const SampledTokenUpdate> sampled);
  // Ends a request, waiting or running: its blocks return to the pool at once. Returns
  // it (status kFinished), or nullptr for an unknown id.
  std::unique_ptr<Request> finish(RequestId id);

  Request* find(RequestId id);
  const Request* find(RequestId id) const;
  int32_t n_waiting() const;
  int32_t n_running() const;
  bool has_requests() const;
  std::vector<RequestId> request_ids() const;  // waiting and running, in ascending order
  const SchedulerStats& stats() const;
  const SchedulerConfig& config() const;

 private:
  // How a waiting `n` completion relates to its parent right now.
  enum class ParentLink { kNone, kWaitForParent, kFork };
  enum class Admission { kAdmitted, kSkipped, kNoBlocks };

  int32_t schedule_running(SchedulerOutput& output, int32_t budget);
  bool allocate_or_preempt(Request& request, int32_t n_tokens, SchedulerOutput& output);
  void preempt(Request& request, SchedulerOutput& output);
  void admit_waiting(SchedulerOutput& output, int32_t budget);
  Admission admit(Request& request, int32_t budget, SchedulerOutput& output);
  Admission admit_forked(Request& child, SchedulerOutput& output);
  ParentLink parent_link(const Request& child) const;
  // Tokens `request` may run from position `from`: up to its last known token and never
  // past the context.
  int32_t runnable_tokens(const Request& request, int32_t from) const;
  // Tokens `request` runs this step within `budget`, its proposals included (trimmed to
  // what fits).
  int32_t runnable_with_drafts(Request& request, int32_t budget) const;
  void push_scheduled(SchedulerOutput& output, const Request& request, int32_t n_tokens);
  void count_step(const SchedulerOutput& output);

  SchedulerConfig config_;
  kv::KvCacheManager& kv_;
  SchedulerStats stats_;
  uint64_t next_arrival_ = 0;
  std::unordered_map<RequestId, std::unique_ptr<Request>> requests_;
  std::vector<Request*> running_;  // in scheduling order: (priority, arrival)
  std::vector<Request*> waiting_;  // sorted by (priority, arrival)
};

}  // namespace pagoda::engine
