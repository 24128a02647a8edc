#pragma once
// The engine's per-request output side: the request's own Sampler (seeded; its state
// survives preemption because it lives here, not in the KV cache), OutputGrammar (when
// the request is constrained: its mask goes to the sampler, and a completed grammar
// finishes the request with "stop"), StreamingDetokenizer and StopChecker, chained. Each step that samples for the request turns its next-token
// logits into one RequestOutput: the new token, the text now safe to show, its
// log-probabilities when asked, and the finish reason once it ends.

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "core/status.h"
#include "engine/output_grammar.h"
#include "engine/request_output.h"
#include "engine/sampler.h"
#include "engine/sampling_params.h"
#include "engine/stop_checker.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::engine {

// Generated text continues the prompt's text, spaces included; only after a prompt of
// control tokens alone (BOS) is there no text for a leading space to separate from.
tokenizer::DecodeOptions continuation_decode_options(const tokenizer::Tokenizer& tokenizer,
                                                     std::span<const int32_t> prompt);

class RequestProcessor {
 public:
  // Fails on sampling or stop parameters out of range. `tokenizer` must outlive it.
  static Expected<RequestProcessor> create(RequestId id, std::span<const int32_t> prompt,
                                           const SamplingParams& sampling,
                                           const StopConditions& stop,
                                           const tokenizer::Tokenizer& tokenizer);

  // Samples the request's next token from `logits` ([n_vocab]) and passes it through the
  // detokenizer and the stop checker. `context_full`: the request holds max_model_len
  // tokens with this one, so it is the last (finish "length" unless a stop came first).
  // Fails when the sampler does (no finite logit); the request is then to be failed.
  Expected<RequestOutput> process(std::span<const float> logits, bool context_full);
  // process() in two halves, so that the samplers of a step's requests can run on
  // several threads at once (each touches only its own request) and the rest in order:
  // sample() draws the next token and keeps it; emit() passes it on as process() does.
  // emit() after a sample() that failed, or twice, is an error.
  Status sample(std::span<const float> logits);
  Expected<RequestOutput> emit(bool context_full);

  // The last output of a request ended from outside (an abort, an engine error): text
  // still held back, finish kAbort, and `error` when the engine failed it.
  RequestOutput abort(std::string error);

  // The request's first step starts at `now` (later calls are ignored): its first output
  // reports the time since the processor was made (when the request was added).
  void mark_scheduled(std::chrono::steady_clock::time_point now);

  RequestId id() const { return id_; }
  int32_t n_generated() const { return stop_.n_generated(); }

 private:
  RequestProcessor(RequestId id, int32_t n_prompt_tokens, Sampler sampler, StopChecker stop,
                   tokenizer::StreamingDetokenizer detokenizer,
                   std::optional<OutputGrammar> grammar);
  // The next output's common fields; the first one carries the queue time.
  RequestOutput new_output();

  RequestId id_;
  int32_t n_prompt_tokens_;
  Sampler sampler_;
  StopChecker stop_;
  tokenizer::StreamingDetokenizer detokenizer_;
  std::optional<OutputGrammar> grammar_;  // empty: free text
  std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();
  double queued_seconds_ = -1.0;  // set by mark_scheduled
  bool sent_first_output_ = false;
  std::optional<SampledToken> sampled_;  // sample()'s token, until emit() takes it
};

}  // namespace pagoda::engine
