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
  int32_t max_model_len = 2048;      // tokens per request, prompt and output (the context)
};

struct SchedulerStats {
  int64_t n_preemptions = 0;      // since start
  int64_t n_prefilled_tokens = 0; // prompt (and recomputed) tokens run, cache hits excluded
  int64_t n_decoded_tokens = 0;   // tokens run as single-token decode steps
};

class Scheduler {
 public:
  Scheduler(SchedulerConfig config, kv::KvCacheManager& kv);

  // Queues a new request (status kWaiting, arrival stamped here). Fails when it could
  // never run: no tokens, more than max_model_len, or more KV blocks than the pool has.
  Status add(std::unique_ptr<Request> request);
  // Decides the next step; empty when nothing can run.
  SchedulerOutput schedule();
  // Applies a finished step: every scheduled request's num_computed_tokens advances by
  // its n_tokens, sampled tokens are appended (one per request with `samples`), and
  // newly full blocks go to the prefix cache.
  void update(const SchedulerOutput& output, std::span<const SampledTokenUpdate> sampled);
  // Ends a request, waiting or running: its blocks return to the pool at once. Returns
  // it (status kFinished), or nullptr for an unknown id.
  std::unique_ptr<Request> finish(RequestId id);

  Request* find(RequestId id);
  int32_t n_waiting() const;
  int32_t n_running() const;
  bool has_requests() const;
  const SchedulerStats& stats() const;
  const SchedulerConfig& config() const;

 private:
  SchedulerConfig config_;
  kv::KvCacheManager& kv_;
  SchedulerStats stats_;
  uint64_t next_arrival_ = 0;
  std::unordered_map<RequestId, std::unique_ptr<Request>> requests_;
  std::vector<Request*> running_;  // in scheduling order
  std::vector<Request*> waiting_;  // sorted by (priority, arrival)
};

}  // namespace pagoda::engine
