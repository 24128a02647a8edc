#pragma once
// Drives a Scheduler the way the engine does (schedule, run, update, finish the done
// ones) with the FakeRunner for a model, and checks the scheduler's invariants after
// every schedule(). Breaches are collected as text, so a test can print them all.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/scheduler.h"
#include "fake_runner.h"
#include "kv/kv_cache_manager.h"

namespace pagoda::engine::testing {

inline constexpr int32_t kFakeVocab = 1000;

// What a test asks for; make_request() turns it into a Request.
struct RequestSpec {
  RequestId id = 0;
  std::vector<int32_t> prompt;
  int32_t max_tokens = 8;
  int32_t priority = 0;
  uint64_t seed = 0;  // the fake runner's sampling depends on it (and the tokens), not the id
  uint64_t cache_salt = 0;
  std::optional<RequestId> parent = std::nullopt;
};

inline std::unique_ptr<Request> make_request(const RequestSpec& spec) {
  auto request = std::make_unique<Request>();
  request->id = spec.id;
  request->tokens = spec.prompt;
  request->n_prompt_tokens = static_cast<int32_t>(spec.prompt.size());
  request->stop.max_tokens = spec.max_tokens;
  request->priority = spec.priority;
  request->sampling.seed = spec.seed;
  request->cache_salt = spec.cache_salt;
  request->parent = spec.parent;
  return request;
}

class SchedulerDriver {
 public:
  SchedulerDriver(SchedulerConfig config, int32_t n_blocks, int32_t block_size,
                  bool prefix_cache = true)
      : kv(n_blocks, block_size, prefix_cache),
        scheduler(config, kv),
        runner(scheduler, kv, kFakeVocab) {}

  Status add(const RequestSpec& spec) {
    Status status = scheduler.add(make_request(spec));
    if (status.ok()) live_.insert(spec.id);
    return status;
  }

  // One engine step; returns what the scheduler decided.
  SchedulerOutput step() {
    running_before_ = running_ids();
    SchedulerOutput output = scheduler.schedule();
    check_invariants(output);
    outputs.push_back(output);
    const std::vector<SampledTokenUpdate> sampled = runner.execute(output);
    scheduler.update(output, sampled);
    for (const ScheduledRequest& entry : output.scheduled) {
      const Request* request = scheduler.find(entry.id);
      if (entry.samples && request != nullptr && done(*request)) finish(entry.id);
    }
    ++n_steps;
    return output;
  }

  // Steps until no request is left; false when max_steps did not suffice.
  bool run_until_idle(int max_steps = 10000) {
    for (int i = 0; i < max_steps && scheduler.has_requests(); ++i) step();
    return !scheduler.has_requests();
  }

  // Ends a request as the engine does (done, or aborted); keeps it for inspection.
  std::unique_ptr<Request>& finish(RequestId id) {
    live_.erase(id);
    return finished[id] = scheduler.finish(id);
  }

  // Every finished request's tokens, prompt and output.
  std::map<RequestId, std::vector<int32_t>> finished_tokens() const {
    std::map<RequestId, std::vector<int32_t>> tokens;
    for (const auto& [id, request] : finished) {
      if (request != nullptr) tokens[id] = request->tokens;
    }
    return tokens;
  }

  kv::KvCacheManager kv;
  Scheduler scheduler;
  FakeRunner runner;
  std::map<RequestId, std::unique_ptr<Request>> finished;
  std::vector<SchedulerOutput> outputs;  // every step's decision, in order
  std::vector<std::string> violations;   // invariant breaches, "step N: what"
  int n_steps = 0;

 private:
  bool done(const Request& request) const {
    return request.n_generated() >= request.stop.max_tokens ||
           request.num_tokens() >= scheduler.config().max_model_len;
  }

  void violation(const std::string& what) {
    violations.push_back("step " + std::to_string(n_steps) + ": " + what);
  }

  std::set<RequestId> running_ids() const {
    std::set<RequestId> ids;
    for (const RequestId id : live_) {
      const Request* request = scheduler.find(id);
      if (request != nullptr && request->status == RequestStatus::kRunning) ids.insert(id);
    }
    return ids;
  }

  void check_invariants(const SchedulerOutput& output) {
    check_batch(output);
    if (!output.preempted.empty()) {
      for (const ScheduledRequest& entry : output.scheduled) {
        if (!running_before_.contains(entry.id)) violation("a step that preempts admits a request");
      }
    }
    for (const RequestId id : output.preempted) {
      const Request* request = scheduler.find(id);
      if (request == nullptr || request->status != RequestStatus::kWaiting ||
          request->num_computed_tokens != 0 || kv.has(id)) {
        violation("preempted request " + std::to_string(id) + " still holds state");
      }
    }
    check_requests(output);
    check_block_references();
  }

  void check_batch(const SchedulerOutput& output) {
    const SchedulerConfig& config = scheduler.config();
    int32_t n_tokens = 0;
    std::set<RequestId> ids;
    for (const ScheduledRequest& entry : output.scheduled) {
      const std::string name = "request " + std::to_string(entry.id);
      n_tokens += entry.n_tokens;
      if (!ids.insert(entry.id).second) violation(name + " scheduled twice");
      const Request* request = scheduler.find(entry.id);
      if (request == nullptr || request->status != RequestStatus::kRunning) {
        violation(name + " scheduled but not running");
        continue;
      }
      const int32_t end = entry.first_position + entry.n_tokens;
      if (entry.n_tokens < 1) violation(name + " scheduled for no token");
      if (entry.first_position != request->num_computed_tokens)
        violation(name + " starts off its computed tokens");
      if (end > request->num_tokens()) violation(name + " scheduled beyond its tokens");
      if (end > config.max_model_len) violation(name + " scheduled beyond the context");
      if (entry.samples != (end == request->num_tokens()))
        violation(name + " has a wrong samples flag");
      if (static_cast<int64_t>(kv.block_table(entry.id).size()) * kv.block_size() < end) {
        violation(name + "'s block table does not cover its scheduled tokens");
      }
    }
    if (n_tokens != output.n_tokens) violation("n_tokens is not the sum of the entries");
    if (n_tokens > config.max_batched_tokens) violation("token budget exceeded");
    if (scheduler.n_running() > config.max_running) violation("running cap exceeded");
  }

  void check_requests(const SchedulerOutput& output) {
    int32_t n_running = 0;
    for (const RequestId id : live_) {
      const Request* request = scheduler.find(id);
      const std::string name = "request " + std::to_string(id);
      if (request == nullptr) {
        violation(name + " lost");
      } else if (request->status == RequestStatus::kRunning) {
        ++n_running;
        if (static_cast<int64_t>(kv.block_table(id).size()) * kv.block_size() <
            request->num_computed_tokens) {
          violation(name + "'s block table does not cover its computed tokens");
        }
      } else if (request->num_computed_tokens != 0 || kv.has(id)) {
        violation(name + " waits with KV state");
      }
    }
    if (n_running != scheduler.n_running()) violation("running count disagrees with the requests");
    // With no engine-side finishing pending, an empty step while requests remain means
    // nothing will ever change: a stall.
    if (output.empty() && scheduler.has_requests())
      violation("nothing scheduled, yet requests remain");
  }

  // Each block's reference count is the number of tables holding it; the rest are free.
  void check_block_references() {
    std::unordered_map<kv::BlockId, int32_t> holders;
    for (const RequestId id : live_) {
      for (const kv::BlockId block : kv.block_table(id)) ++holders[block];
    }
    for (const auto& [block, count] : holders) {
      if (kv.pool().ref_count(block) != count)
        violation("block " + std::to_string(block) + " has a wrong count");
    }
    if (static_cast<int32_t>(holders.size()) != kv.n_blocks() - kv.n_free_blocks()) {
      violation("held blocks and free blocks do not add up");
    }
  }

  std::set<RequestId> live_;            // added, not finished
  std::set<RequestId> running_before_;  // running when the current step was scheduled
};

// Runs the requests to completion with room for everything at once: what each request
// produces when nothing constrains it, the answer every constrained run must match.
// `parent` links are dropped: a child must give what it gives as a request of its own.
inline std::map<RequestId, std::vector<int32_t>> unconstrained_tokens(
    std::vector<RequestSpec> specs, int32_t max_model_len = 4096) {
  SchedulerDriver driver(
      {.max_batched_tokens = 1 << 20, .max_running = 1 << 20, .max_model_len = max_model_len},
      /*n_blocks=*/4096, /*block_size=*/16, /*prefix_cache=*/false);
  for (RequestSpec& spec : specs) {
    spec.parent.reset();
    if (!driver.add(spec).ok()) return {};
  }
  if (!driver.run_until_idle()) return {};
  return driver.finished_tokens();
}

}  // namespace pagoda::engine::testing
