#pragma once
// The scheduler's decision for one step, as plain data for the ModelRunner (DESIGN.md
// invariant 3): which requests advance by how many tokens, which KV blocks must be
// copied first, and who lost its KV to make room.

#include <cstdint>
#include <vector>

#include "engine/request_output.h"
#include "kv/kv_cache_manager.h"

namespace pagoda::engine {

struct ScheduledRequest {
  RequestId id = 0;
  int32_t first_position = 0;  // its num_computed_tokens before the step
  int32_t n_tokens = 0;        // runs tokens [first_position, first_position + n_tokens)
  // Of which the request's proposals (the last n_draft_tokens rows), verified this step.
  int32_t n_draft_tokens = 0;
  // The step reaches the end of the request's known tokens: its last row needs logits
  // and a token is sampled (false for a chunk in the middle of a prompt). With
  // proposals, the last n_draft_tokens + 1 rows need logits.
  bool samples = false;
};

struct SchedulerOutput {
  std::vector<ScheduledRequest> scheduled;  // in batch order
  int32_t n_tokens = 0;                     // sum of scheduled[i].n_tokens
  std::vector<kv::BlockCopy> block_copies;  // done by the runner before the forward pass
  std::vector<RequestId> preempted;         // sent back to waiting this step, KV dropped
  bool empty() const { return scheduled.empty(); }
  // Rows whose logits the step computes: each sampling request's proposals and the row
  // before them (a prompt's last row, a decoded token's).
  int32_t rows_with_logits() const {
    int32_t rows = 0;
    for (const ScheduledRequest& entry : scheduled) rows += entry.samples ? entry.n_draft_tokens + 1 : 0;
    return rows;
  }
};

// What the engine sampled for a scheduled request (in the order of `scheduled`): the
// first n_accepted_drafts of its proposals were kept, then `token` follows them.
struct SampledTokenUpdate {
  RequestId id = 0;
  int32_t token = 0;
  int32_t n_accepted_drafts = 0;
};

}  // namespace pagoda::engine
