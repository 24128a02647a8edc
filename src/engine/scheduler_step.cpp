// One scheduling step: running requests first (in queue order, preempting from the
// back when the KV blocks run out), then waiting requests by priority and arrival.
#include <algorithm>
#include <cstddef>
#include <span>

#include "engine/scheduler.h"
#include "engine/scheduler_queue.h"

namespace pagoda::engine {
namespace {

int32_t ceil_div(int32_t a, int32_t b) {
  return (a + b - 1) / b;
}

// The child may reuse the parent's K/V of positions [0, child.n_prompt_tokens - 1).
bool shares_prompt_prefix(const Request& parent, const Request& child) {
  const int32_t n_shared = child.n_prompt_tokens - 1;
  return parent.cache_salt == child.cache_salt && parent.num_tokens() >= n_shared &&
         std::ranges::equal(std::span(parent.tokens).first(n_shared),
                            std::span(child.tokens).first(n_shared));
}

}  // namespace

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput output;
  const int32_t budget = schedule_running(output, config_.max_batched_tokens);
  if (output.preempted.empty()) admit_waiting(output, budget);
  output.block_copies = kv_.take_copies();
  count_step(output);
  return output;
}

int32_t Scheduler::runnable_tokens(const Request& request, int32_t from) const {
  return std::min(request.num_tokens() - from, config_.max_model_len - from);
}

void Scheduler::push_scheduled(SchedulerOutput& output, const Request& request, int32_t n_tokens) {
  const int32_t first = request.num_computed_tokens;
  const auto n_drafts = static_cast<int32_t>(request.draft_tokens.size());
  output.scheduled.push_back({.id = request.id,
                              .first_position = first,
                              .n_tokens = n_tokens,
                              .n_draft_tokens = n_drafts,
                              .samples = first + n_tokens == request.num_tokens() + n_drafts});
  output.n_tokens += n_tokens;
}

// Proposals run after the last known token, never past the context (see the header),
// as many as the budget leaves room for: those cut are dropped.
int32_t Scheduler::runnable_with_drafts(Request& request, int32_t budget) const {
  const int32_t from = request.num_computed_tokens;
  const int32_t known = runnable_tokens(request, from);
  if (request.draft_tokens.empty()) return std::min(known, budget);
  const int32_t room = config_.max_model_len - 1 - request.num_tokens();
  const int32_t n_drafts = std::clamp(std::min(budget - known, room), 0,
                                      static_cast<int32_t>(request.draft_tokens.size()));
  request.draft_tokens.resize(static_cast<size_t>(n_drafts));
  return std::min(known, budget) + n_drafts;
}

// Returns the budget left.
int32_t Scheduler::schedule_running(SchedulerOutput& output, int32_t budget) {
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Request& request = *running_[i];
    const int32_t n_tokens = runnable_with_drafts(request, budget);
    if (n_tokens <= 0) continue;  // at the context's end: the engine finishes it
    // Victims come from the back of the queue, so a preempted request was never
    // scheduled earlier in this step; when the victim is `request` itself, it was the
    // last one left and the loop ends.
    if (!allocate_or_preempt(request, n_tokens, output)) break;
    push_scheduled(output, request, n_tokens);
    budget -= n_tokens;
  }
  return budget;
}

bool Scheduler::allocate_or_preempt(Request& request, int32_t n_tokens, SchedulerOutput& output) {
  while (!kv_.allocate(request.id, request.num_computed_tokens, n_tokens)) {
    Request& victim = *running_.back();
    preempt(victim, output);
    if (&victim == &request) return false;
  }
  return true;
}

// Preemption by recompute: the K/V is dropped (its full blocks stay in the prefix
// cache until evicted, so the recompute is often mostly hits) and the request waits
// again at its original place in the order, keeping its generated tokens.
void Scheduler::preempt(Request& request, SchedulerOutput& output) {
  remove_from(running_, &request);
  kv_.free(request.id);
  request.num_computed_tokens = 0;
  request.draft_tokens.clear();
  request.draft_computed_tokens = 0;
  request.status = RequestStatus::kWaiting;
  ++request.n_preemptions;
  ++stats_.n_preemptions;
  insert_in_order(waiting_, &request);
  output.preempted.push_back(request.id);
}

void Scheduler::admit_waiting(SchedulerOutput& output, int32_t budget) {
  size_t i = 0;
  while (i < waiting_.size() && budget > 0 && n_running() < config_.max_running) {
    Request& request = *waiting_[i];
    const Admission admission = admit(request, budget, output);
    if (admission == Admission::kSkipped) {
      ++i;
      continue;
    }
    if (admission == Admission::kNoBlocks) break;
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(i));
    insert_in_order(running_, &request);
    budget -= output.scheduled.back().n_tokens;
  }
}

Scheduler::Admission Scheduler::admit(Request& request, int32_t budget, SchedulerOutput& output) {
  switch (parent_link(request)) {
    case ParentLink::kWaitForParent:
      return Admission::kSkipped;
    case ParentLink::kFork:
      return admit_forked(request, output);
    case ParentLink::kNone:
      break;
  }
  // A waiting request holds no blocks (preemption freed them), so it always starts
  // from the longest cached prefix: a first admission and a resume alike.
  const kv::PrefixHit hit = kv_.find_prefix(request.tokens, request.cache_salt);
  const int32_t n_tokens = std::min(runnable_tokens(request, hit.n_tokens), budget);
  if (n_tokens <= 0) return Admission::kSkipped;  // unreachable: add() leaves room
  if (!kv_.allocate(request.id, hit.n_tokens, n_tokens, hit.blocks.empty() ? nullptr : &hit)) {
    return Admission::kNoBlocks;
  }
  request.num_computed_tokens = hit.n_tokens;
  if (kv_.prefix_cache_enabled()) {
    ++stats_.prefix_cache.queries;
    stats_.prefix_cache.queried_tokens += static_cast<int64_t>(request.tokens.size());
    stats_.prefix_cache.hit_tokens += hit.n_tokens;
  }
  if (request.n_preemptions == 0) {
    request.n_cached_prompt_tokens = std::min(hit.n_tokens, request.n_prompt_tokens);
  }
  request.status = RequestStatus::kRunning;
  push_scheduled(output, request, n_tokens);
  return Admission::kAdmitted;
}

// The child takes its parent's table and recomputes its last prompt token, which
// copies the block holding it (copy on write) and gives the child its own logits.
Scheduler::Admission Scheduler::admit_forked(Request& child, SchedulerOutput& output) {
  const int32_t first = child.n_prompt_tokens - 1;
  kv_.fork(*child.parent, child.id);
  if (!kv_.allocate(child.id, first, 1)) {
    kv_.free(child.id);
    return Admission::kNoBlocks;
  }
  child.num_computed_tokens = first;
  child.n_cached_prompt_tokens = first;
  child.status = RequestStatus::kRunning;
  push_scheduled(output, child, 1);
  return Admission::kAdmitted;
}

// A child on its first admission waits for a parent that has not been admitted yet or
// has not computed all but the last prompt token; it forks from a running parent that
// has, unless the parent has moved on past the blocks of the child's first two steps
// (it would hand the child blocks it does not need yet). Otherwise it is on its own.
Scheduler::ParentLink Scheduler::parent_link(const Request& child) const {
  if (!child.parent || child.n_preemptions > 0 || child.num_tokens() != child.n_prompt_tokens) {
    return ParentLink::kNone;
  }
  const Request* parent = find(*child.parent);
  if (parent == nullptr) return ParentLink::kNone;
  if (parent->status == RequestStatus::kWaiting) {
    return parent->n_preemptions == 0 ? ParentLink::kWaitForParent : ParentLink::kNone;
  }
  if (parent->num_computed_tokens < child.n_prompt_tokens - 1) return ParentLink::kWaitForParent;
  const size_t useful_blocks =
      static_cast<size_t>(ceil_div(child.n_prompt_tokens + 1, kv_.block_size()));
  if (!kv_.has(parent->id) || kv_.block_table(parent->id).size() > useful_blocks ||
      !shares_prompt_prefix(*parent, child)) {
    return ParentLink::kNone;
  }
  return ParentLink::kFork;
}

void Scheduler::count_step(const SchedulerOutput& output) {
  for (const ScheduledRequest& entry : output.scheduled) {
    const Request& request = *find(entry.id);
    if (entry.n_tokens == 1 + entry.n_draft_tokens &&
        entry.first_position >= request.n_prompt_tokens) {
      stats_.n_decoded_tokens += entry.n_tokens;
    } else {
      stats_.n_prefilled_tokens += entry.n_tokens;
    }
  }
}

}  // namespace pagoda::engine
