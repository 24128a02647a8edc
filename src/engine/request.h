#pragma once
// A request's logical state, and nothing else (DESIGN.md invariant 1): token ids, how
// many of them have K/V in the cache, sampling and stop parameters, priority, arrival
// order, where its outputs go and what makes them (its sampler, detokenizer and stop
// checker). The scheduler owns it: one record per request, found by id. Its KV blocks are the KvCacheManager's table under
// the same id; no device memory belongs to a request.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "engine/draft_length.h"
#include "engine/request_output.h"
#include "engine/request_processor.h"
#include "engine/sampler.h"
#include "engine/sampling_params.h"
#include "engine/stop_checker.h"

namespace pagoda::engine {

enum class RequestStatus {
  kWaiting,   // not admitted yet, or preempted (its KV dropped; recomputed on resume)
  kRunning,   // holds KV blocks and is scheduled each step
  kFinished,  // done (stop, length or abort); its blocks are back in the pool
};

struct Request {
  RequestId id = 0;
  std::vector<int32_t> tokens;  // prompt then generated ids
  int32_t n_prompt_tokens = 0;
  // Leading tokens whose K/V are in the cache; moves toward tokens.size() every step
  // the request is scheduled (DESIGN.md invariant 2), back to 0 when preempted.
  int32_t num_computed_tokens = 0;

  SamplingParams sampling;
  StopConditions stop;
  int32_t priority = 0;  // lower values are scheduled first (and preempted last)
  // Order of arrival, stamped by Scheduler::add: first come, first served within a priority.
  uint64_t arrival = 0;
  uint64_t cache_salt = 0;  // extra key of its prefix-cache blocks (0: shared with all)
  // One of n completions of a prompt: it waits until `parent` has computed all but the
  // last prompt token, then starts from the parent's blocks (copy on write).
  std::optional<RequestId> parent;

  // Speculative decoding: proposed tokens after `tokens`, run by the next step beside
  // the last token and kept only as far as the target's own choices agree (never part of
  // `tokens` before that). Empty when the request has no proposal this step.
  std::vector<int32_t> draft_tokens;
  // Proposals the draft declined this step (its chance for the next one below
  // SpeculativeConfig::draft_p_min): planned, never verified, counted as refused by the
  // acceptance estimate.
  int32_t n_declined_drafts = 0;
  bool speculative = true;  // the request lets the engine speculate (when it is configured to)
  DraftLengthState draft_length;
  // With a draft model: leading positions whose K/V the draft holds (its own cache, in the
  // same blocks). It trails num_computed_tokens by at most one (a last proposal that was
  // kept but never run by the draft); back to 0 when preempted.
  int32_t draft_computed_tokens = 0;
  // A sampled request's draft proposals are drawn from the draft's distribution, kept
  // here for verification ([draft_tokens.size()][n_vocab]); empty for a greedy request,
  // whose proposals are the draft's most likely tokens. The draft's own sampler (the
  // request's temperature and truncation, no penalties or bias, its own generator) is
  // made at the first proposal.
  std::vector<float> draft_probs;
  std::optional<Sampler> draft_sampler;
  int64_t n_proposed_tokens = 0;  // proposals verified so far
  int64_t n_accepted_tokens = 0;  // of which kept

  RequestStatus status = RequestStatus::kWaiting;
  int32_t n_preemptions = 0;
  // Prompt tokens it did not compute at its first admission: found in the prefix cache,
  // or shared with its parent (n_prompt_tokens - 1 for a forked `n` completion).
  int32_t n_cached_prompt_tokens = 0;
  std::shared_ptr<RequestSink> sink;
  // Turns its logits into outputs (the engine's; empty where a test drives the
  // scheduler alone).
  std::optional<RequestProcessor> processor;

  int32_t num_tokens() const { return static_cast<int32_t>(tokens.size()); }
  int32_t n_generated() const { return num_tokens() - n_prompt_tokens; }
  std::span<const int32_t> prompt() const { return std::span(tokens).first(n_prompt_tokens); }
  std::span<const int32_t> generated() const { return std::span(tokens).subspan(n_prompt_tokens); }
};

}  // namespace pagoda::engine
