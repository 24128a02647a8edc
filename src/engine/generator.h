#pragma once
// Generates text for one sequence at a time: prefills the prompt in chunks of at most
// max_batch_tokens, then decodes token by token, each token going through the sampler,
// the streaming detokenizer and the stop checker, and each piece of text that is safe
// to show going to a callback as soon as it is known.
//
// The KV cache is the caller's, sized for the context; the sequence occupies its blocks
// 0, 1, 2, ... in order. Between calls the generator remembers which tokens the cache
// holds, so a prompt that extends the previous conversation (a chat) only prefills
// what is new. This is the small engine of `pagoda run` and `pagoda chat`; serving many
// requests at once is the paged, batched Engine's job.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "core/status.h"
#include "engine/sampler.h"
#include "engine/sampling_params.h"
#include "engine/sequence_batch.h"
#include "engine/stop_checker.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::engine {

struct GenerationRequest {
  std::span<const int32_t> prompt;  // token ids, BOS included when the model wants one
  SamplingParams sampling;
  StopConditions stop;
};

struct GenerationTimings {
  int32_t n_prompt_tokens = 0;  // tokens prefilled by this call
  int32_t n_reused_tokens = 0;  // prompt tokens whose K/V were already cached
  int32_t n_decoded = 0;        // tokens run one at a time after the prefill
  double prompt_seconds = 0.0;  // prefill forward passes, wall time
  double decode_seconds = 0.0;  // decode steps (forward and sampling), wall time

  double prompt_tokens_per_second() const { return rate(n_prompt_tokens, prompt_seconds); }
  double decode_tokens_per_second() const { return rate(n_decoded, decode_seconds); }

 private:
  static double rate(int32_t n, double seconds) { return seconds > 0.0 ? n / seconds : 0.0; }
};

struct GenerationResult {
  std::vector<int32_t> tokens;  // generated token ids (an end-of-generation token included)
  std::string text;             // everything passed to the callback
  FinishReason finish = FinishReason::kNone;
  GenerationTimings timings;
};

class Generator {
 public:
  // The text callback gets each new piece of output text, in order.
  using TextCallback = std::function<void(std::string_view delta)>;

  // model, kv and tokenizer must outlive the generator; kv must have the model's shape.
  // max_batch_tokens: the most tokens one forward pass takes (the model's load option).
  static Expected<Generator> create(model::Model& model, backend::KvStorage& kv,
                                    const tokenizer::Tokenizer& tokenizer,
                                    int32_t max_batch_tokens);

  // Fails on an empty prompt, a prompt that does not fit the context, bad sampling or
  // stop parameters, or a failed forward pass (then the cache is considered empty).
  // Generation also ends, with reason "length", when the context is full.
  Expected<GenerationResult> generate(const GenerationRequest& request,
                                      const TextCallback& on_text);

  int32_t context_size() const { return sequence_.capacity(); }
  // Tokens whose K/V the cache holds, in order: the prompt and the generated tokens
  // that were fed back (not the last one).
  std::span<const int32_t> cached_tokens() const { return cached_; }
  void clear_cache() { cached_.clear(); }

 private:
  Generator(model::Model& model, backend::KvStorage& kv, const tokenizer::Tokenizer& tokenizer,
            int32_t max_batch_tokens);
  // Runs `tokens` at positions [cached_.size(), ...) in chunks; appends them to cached_.
  // Leaves the last token's logits in logits_ when want_logits.
  Status feed(std::span<const int32_t> tokens, bool want_logits);
  // Samples, detokenizes and checks token after token, feeding each one back, until the
  // stop checker or a full context ends the sequence.
  Status decode(Sampler& sampler, StopChecker& stop, tokenizer::StreamingDetokenizer& detokenizer,
                const TextCallback& on_text, GenerationResult& result);
  // Drops cached tokens after the longest prefix shared with `prompt`, leaving at least
  // one prompt token to run (its logits start the generation).
  void keep_shared_prefix(std::span<const int32_t> prompt);

  model::Model* model_;
  backend::KvStorage* kv_;
  const tokenizer::Tokenizer* tokenizer_;
  int32_t max_batch_tokens_;
  ContiguousSequence sequence_;
  std::vector<int32_t> cached_;  // [<= context_size()]
  std::vector<float> logits_;    // [n_vocab]
};

}  // namespace pagoda::engine
