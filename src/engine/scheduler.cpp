// The scheduler's request lifecycle: add, update after a step, finish; the step itself
// is decided in scheduler_step.cpp.
#include "engine/scheduler.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>

#include "engine/scheduler_queue.h"

namespace pagoda::engine {
namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

std::string request_name(const Request& request) {
  return "request " + std::to_string(request.id);
}

// Positions whose K/V the request needs at most: every token but the last of its
// longest possible sequence (the last one is sampled, never run).
int64_t worst_case_positions(const Request& request, int32_t max_model_len) {
  const int64_t max_generated = std::max<int64_t>(request.stop.max_tokens, 1);
  int64_t final_length = std::max<int64_t>(request.n_prompt_tokens + max_generated,
                                           static_cast<int64_t>(request.num_tokens()) + 1);
  final_length = std::min<int64_t>(final_length, max_model_len);
  return final_length - 1;
}

}  // namespace

Status SchedulerConfig::validate() const {
  if (max_batched_tokens < 1) {
    return invalid_argument("max batched tokens must be at least 1, got " +
                            std::to_string(max_batched_tokens));
  }
  if (max_running < 1) {
    return invalid_argument("max running requests must be at least 1, got " +
                            std::to_string(max_running));
  }
  if (max_model_len < 2) {
    return invalid_argument("max model length must be at least 2 tokens, got " +
                            std::to_string(max_model_len));
  }
  return {};
}

Scheduler::Scheduler(SchedulerConfig config, kv::KvCacheManager& kv) : config_(config), kv_(kv) {
  config_.max_batched_tokens = std::max(config_.max_batched_tokens, 1);
  config_.max_running = std::max(config_.max_running, 1);
  config_.max_model_len = std::max(config_.max_model_len, 2);
}

Status Scheduler::check_new_request(const Request& request) const {
  const std::string name = request_name(request);
  if (requests_.contains(request.id)) return invalid_argument(name + " is already queued");
  if (request.tokens.empty()) return invalid_argument(name + " has no tokens");
  if (request.n_prompt_tokens < 1 || request.n_prompt_tokens > request.num_tokens()) {
    return invalid_argument(name + ": n_prompt_tokens " + std::to_string(request.n_prompt_tokens) +
                            " is outside [1, " + std::to_string(request.num_tokens()) + "]");
  }
  if (request.num_tokens() > config_.max_model_len - 1) {
    return invalid_argument(name + " has " + std::to_string(request.num_tokens()) +
                            " tokens; the context holds " + std::to_string(config_.max_model_len) +
                            " and at least one must be left to generate");
  }
  const int64_t blocks =
      ceil_div(worst_case_positions(request, config_.max_model_len), kv_.block_size());
  if (blocks > kv_.n_blocks()) {
    return invalid_argument(name + " may need " + std::to_string(blocks) +
                            " KV blocks; the cache has " + std::to_string(kv_.n_blocks()));
  }
  if (!request.parent) return {};
  if (*request.parent == request.id) return invalid_argument(name + " is its own parent");
  const Request* parent = find(*request.parent);
  if (parent != nullptr && (!std::ranges::equal(parent->prompt(), request.prompt()) ||
                            parent->cache_salt != request.cache_salt)) {
    return invalid_argument(name + ": its parent " + std::to_string(parent->id) +
                            " has another prompt or cache salt");
  }
  return {};
}

Status Scheduler::add(std::unique_ptr<Request> request) {
  if (request == nullptr) return invalid_argument("no request to add");
  PAGODA_TRY(check_new_request(*request));
  request->status = RequestStatus::kWaiting;
  request->num_computed_tokens = 0;
  request->arrival = next_arrival_++;
  Request* queued = request.get();
  requests_.emplace(queued->id, std::move(request));
  insert_in_order(waiting_, queued);
  return {};
}

void Scheduler::update(const SchedulerOutput& output, std::span<const SampledTokenUpdate> sampled) {
  for (const ScheduledRequest& entry : output.scheduled) {
    Request* request = find(entry.id);
    if (request == nullptr || request->status != RequestStatus::kRunning ||
        request->num_computed_tokens != entry.first_position) {
      continue;  // finished since, or this entry was applied already
    }
    // The proposals count once kept (below); their K/V rows past that are stale.
    request->num_computed_tokens += entry.n_tokens - entry.n_draft_tokens;
    stats_.n_draft_tokens += entry.n_draft_tokens;
    if (entry.n_draft_tokens > 0) ++stats_.n_speculative_steps;
  }
  for (const SampledTokenUpdate& token : sampled) {
    Request* request = find(token.id);
    // A token is only due once every known token has been run.
    if (request == nullptr || request->status != RequestStatus::kRunning ||
        request->num_computed_tokens != request->num_tokens()) {
      continue;
    }
    const auto n_kept = static_cast<size_t>(
        std::clamp<int32_t>(token.n_accepted_drafts, 0, static_cast<int32_t>(request->draft_tokens.size())));
    request->tokens.insert(request->tokens.end(), request->draft_tokens.begin(),
                           request->draft_tokens.begin() + static_cast<std::ptrdiff_t>(n_kept));
    request->num_computed_tokens += static_cast<int32_t>(n_kept);
    request->tokens.push_back(token.token);
    stats_.n_accepted_draft_tokens += static_cast<int64_t>(n_kept);
  }
  for (const ScheduledRequest& entry : output.scheduled) {
    Request* request = find(entry.id);
    if (request == nullptr || request->status != RequestStatus::kRunning) continue;
    if (entry.n_draft_tokens > 0) {
      request->draft_tokens.clear();
      kv_.truncate(request->id, request->num_tokens());
    }
    kv_.cache_full_blocks(request->id, request->tokens, request->num_computed_tokens,
                          request->cache_salt);
  }
}

std::unique_ptr<Request> Scheduler::finish(RequestId id) {
  const auto found = requests_.find(id);
  if (found == requests_.end()) return nullptr;
  std::unique_ptr<Request> request = std::move(found->second);
  requests_.erase(found);
  if (!remove_from(running_, request.get())) remove_from(waiting_, request.get());
  kv_.free(id);
  request->status = RequestStatus::kFinished;
  return request;
}

Request* Scheduler::find(RequestId id) {
  const auto found = requests_.find(id);
  return found == requests_.end() ? nullptr : found->second.get();
}

const Request* Scheduler::find(RequestId id) const {
  const auto found = requests_.find(id);
  return found == requests_.end() ? nullptr : found->second.get();
}

std::vector<RequestId> Scheduler::request_ids() const {
  std::vector<RequestId> ids;
  ids.reserve(requests_.size());
  for (const auto& [id, request] : requests_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

int32_t Scheduler::n_waiting() const {
  return static_cast<int32_t>(waiting_.size());
}
int32_t Scheduler::n_running() const {
  return static_cast<int32_t>(running_.size());
}
bool Scheduler::has_requests() const {
  return !requests_.empty();
}
const SchedulerStats& Scheduler::stats() const {
  return stats_;
}
const SchedulerConfig& Scheduler::config() const {
  return config_;
}

}  // namespace pagoda::engine
