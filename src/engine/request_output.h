#pragma once
// What the engine tells a request's owner after each step that touched it, and the sink
// that receives it (DESIGN.md: StepOutput goes up, one plain message per boundary).

#include <cstdint>
#include <string>
#include <vector>

#include "engine/stop_checker.h"
#include "sampling/logprobs.h"

namespace pagoda::engine {

using RequestId = uint64_t;

// The log-probability of one generated token and of the most likely alternatives.
using TokenLogprob = pagoda::TokenLogprob;  // sampling/logprobs.h's, under the engine's name

struct TokenLogprobs {
  int32_t token = 0;
  float logprob = 0.0f;            // natural log, of the raw logits' softmax
  std::vector<TokenLogprob> top;   // [top_logprobs], most likely first
};

struct RequestOutput {
  RequestId id = 0;
  std::vector<int32_t> new_tokens;       // tokens generated this step (usually one)
  std::string text;                      // text now safe to show (may be empty)
  std::vector<TokenLogprobs> logprobs;   // one per new token, when the request asked
  FinishReason finish = FinishReason::kNone;  // kNone while it runs; kAbort when aborted
  int32_t n_prompt_tokens = 0;
  int32_t n_generated_tokens = 0;        // so far, new_tokens included
  int32_t n_cached_prompt_tokens = 0;    // prompt tokens found in the prefix cache
  // On a request's first output only (else -1): seconds from Engine::add to the start of
  // the first step that scheduled it, the time it waited in the queue.
  double queued_seconds = -1.0;
  // Speculative decoding so far: proposals verified for the request, and of them those
  // kept (on every output of a step that sampled for it).
  int64_t n_proposed_tokens = 0;
  int64_t n_accepted_tokens = 0;
  std::string error;                     // set (with finish kAbort) when the engine failed it
};

// Receives a request's outputs, in order, on the engine thread: it must not block (push
// to a queue, a socket's strand, ...). The last output has finish != kNone.
class RequestSink {
 public:
  virtual ~RequestSink() = default;
  virtual void on_output(RequestOutput output) = 0;
};

}  // namespace pagoda::engine
