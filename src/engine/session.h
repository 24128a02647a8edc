#pragma once
// One caller's requests, run to completion on the caller's thread by an EngineCore:
// what `pagoda run`, `chat` and `bench` use. The same engine as `serve` (scheduler,
// paged KV cache, prefix cache, model runner, request processor), stepped here instead
// of on the Engine's loop thread, with each output's text handed to a callback as soon
// as it is safe to show. A chat's earlier turns come back from the prefix cache.
//
//   auto session = Session::create(model, backend, tokenizer, config);
//   auto result = (*session)->generate(request, [](std::string_view text) { ... });

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "core/status.h"
#include "engine/engine_core.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::engine {

struct GenerationTimings {
  int32_t n_prompt_tokens = 0;  // prompt tokens computed (prefix-cache hits excluded)
  int32_t n_reused_tokens = 0;  // prompt tokens found in the prefix cache
  int32_t n_decoded = 0;        // tokens generated after the first
  double prompt_seconds = 0.0;  // from the request's start to its first token, wall time
  double decode_seconds = 0.0;  // from its first token to its last

  double prompt_tokens_per_second() const { return rate(n_prompt_tokens, prompt_seconds); }
  double decode_tokens_per_second() const { return rate(n_decoded, decode_seconds); }

 private:
  static double rate(int32_t n, double seconds) { return seconds > 0.0 ? n / seconds : 0.0; }
};

struct GenerationResult {
  std::vector<int32_t> tokens;           // generated ids (an end-of-generation token included)
  std::string text;                      // everything passed to the callback
  std::vector<TokenLogprobs> logprobs;   // one per token, when the request asked
  FinishReason finish = FinishReason::kNone;
  GenerationTimings timings;
};

class Session {
 public:
  using TextCallback = std::function<void(std::string_view delta)>;

  // See EngineCore::create (model, backend and tokenizer must outlive the session).
  static Expected<std::unique_ptr<Session>> create(model::Model& model, backend::Backend& backend,
                                                   const tokenizer::Tokenizer& tokenizer,
                                                   const EngineConfig& config,
                                                  model::Model* draft_model = nullptr);

  // Runs one request (n must be 1) until it finishes, handing each piece of new text to
  // `on_text` (may be null). Fails on a request the engine refuses (an empty prompt, one
  // that does not fit the context, bad parameters) or one it failed (a forward pass
  // error, with its message).
  Expected<GenerationResult> generate(EngineRequest request, const TextCallback& on_text);

  const EngineConfig& config() const { return core_->config(); }  // resolved
  EngineStats stats() const { return core_->stats(); }

 private:
  explicit Session(std::unique_ptr<EngineCore> core) : core_(std::move(core)) {}

  std::unique_ptr<EngineCore> core_;
};

}  // namespace pagoda::engine
