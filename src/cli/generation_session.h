#pragma once
// A model ready to generate for `pagoda run` and `pagoda chat`: loaded with its
// tokenizer on the backend the flags choose, and an engine session over it (one request
// at a time, the KV cache sized for the context, earlier turns kept in the prefix cache).

#include <memory>

#include "cli/generation_args.h"
#include "cli/loaded_model.h"
#include "core/status.h"
#include "engine/session.h"

namespace pagoda::cli {

struct GenerationSession {
  LoadedModel loaded;
  LoadedDraft draft;  // --speculative-model; empty otherwise
  std::unique_ptr<engine::Session> session;
  int32_t n_ctx = 0;  // tokens of a request, prompt and output
  std::shared_ptr<const engine::GrammarConstraint> grammar;  // the flags' constraint, or null
};

// Held by pointer: the session refers to the model, backend and tokenizer inside.
Expected<std::unique_ptr<GenerationSession>> open_generation_session(const GenerationArgs& args);

// The request for `prompt` with the flags' sampling and stop conditions.
engine::EngineRequest generation_request(const GenerationArgs& args, const GenerationSession& session,
                                         std::vector<int32_t> prompt);

// "load 0.12 s | prompt 9 tokens, 812.3 tokens/s | generation 128 tokens, 95.1 tokens/s"
// on stderr.
void print_timings(double load_seconds, const engine::GenerationTimings& timings);
// With speculative decoding: the proposals verified and kept so far (stderr).
void print_speculation(const engine::EngineStats& stats);

}  // namespace pagoda::cli
