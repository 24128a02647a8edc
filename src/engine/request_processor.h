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
#include <vector>

#include "backend/backend.h"
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
  //
  // With proposals (speculative decoding), `logits` holds 1 + drafts.size() rows
  // ([rows][n_vocab]): row i follows the request's tokens and drafts[0, i). Each row is
  // sampled exactly as it would be without speculation (the same stages, the grammar's
  // mask, the penalties of the tokens before it, the next draw of the request's
  // generator), and verification goes on while the token drawn equals the proposal. So
  // the tokens kept are those decoding one at a time gives, draw for draw: for greedy,
  // the argmax; when sampling, drawing from p and keeping the proposal when the draw
  // lands on it is the rejection rule for a point-mass proposal (kept with chance p(d);
  // otherwise the draw is distributed as p without d, renormalised).
  //
  // `draft_probs` ([drafts.size()][n_vocab], or empty): the distribution q a draft model
  // drew each proposal from. With it, proposal d is kept with chance min(1, p(d) / q(d))
  // and a rejected one is replaced by a draw from max(0, p - q) renormalised (the
  // standard rule: the tokens kept are distributed as the model's own, though not draw
  // for draw as without speculation); p is the distribution sample() draws from.
  Status sample(std::span<const float> logits, std::span<const int32_t> drafts = {},
                std::span<const float> draft_probs = {});
  // Whether the next token, and with `n_drafts` proposals the one after each, may be
  // chosen where the logits are (RunnerSequence::token_on_device): no grammar, and what
  // the sampler allows (Sampler::samples_on_device, verifies_on_device; proposals drawn
  // by a draft model, whose rejection rule needs the whole distributions, are the
  // caller's to keep on the host). device_sampling() then gives the rows, one a logit
  // row, appending their adjustments to `adjustments`, with the uniforms a draw needs
  // taken from the request's generator now (Sampler::device_sampling).
  bool token_on_device_suffices(int32_t n_drafts = 0) const {
    return !grammar_ && (n_drafts == 0 ? sampler_.samples_on_device() : sampler_.verifies_on_device());
  }
  void device_sampling(std::vector<LogitAdjustment>& adjustments, std::span<RowSampling> rows) {
    sampler_.device_sampling(adjustments, rows);
  }
  // sample() for such a request given the tokens chosen where the logits are, one a row
  // (-1 for none, which fails as sample() does), with their log-probabilities where the
  // request asks for them (`logprobs`, one a row, or empty): verification takes row i
  // while the token of row i - 1 equals proposal i - 1, as sample() does. A row left to
  // the host (kLeftToHost) is sampled from its logits (`logits`: [rows][n_vocab], whose
  // other rows need not hold anything), with the uniform device_sampling() took.
  Status take_device_tokens(std::span<const int32_t> tokens, std::span<const int32_t> drafts,
                            std::span<const RowLogprobs> logprobs, std::span<const float> logits);
  Expected<RequestOutput> emit(bool context_full);
  // emit() for every token sample() kept, in order, up to the first that finishes the
  // request. `context_room`: tokens the request may still gain before it holds
  // max_model_len (the token that fills it is the last).
  Expected<RequestOutput> emit_tokens(int32_t context_room);

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
  // Takes `drawn` as the request's next token: the grammar and the penalties see it and
  // sampled_ keeps it.
  Status keep(const SampledToken& drawn);
  // sample() with draft_probs: the rejection rule, row by row.
  Status verify_sampled_drafts(std::span<const float> logits, size_t n_vocab,
                               std::span<const int32_t> drafts, std::span<const float> draft_probs);

  RequestId id_;
  int32_t n_prompt_tokens_;
  Sampler sampler_;
  StopChecker stop_;
  tokenizer::StreamingDetokenizer detokenizer_;
  std::optional<OutputGrammar> grammar_;  // empty: free text
  std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();
  double queued_seconds_ = -1.0;  // set by mark_scheduled
  bool sent_first_output_ = false;
  // sample()'s tokens (with log-probabilities when asked), until emit() takes them; the
  // capacity is kept between steps.
  std::vector<TokenLogprobs> sampled_;
  bool has_sampled_ = false;
  std::vector<float> target_probs_;  // [n_vocab] scratch of the rejection rule: p
  std::vector<float> residual_;      // [n_vocab] scratch: max(0, p - q)
};

}  // namespace pagoda::engine
