#pragma once
// A model ready to generate for `pagoda run` and `pagoda chat`: loaded with its
// tokenizer, a KV cache for the context, and the single-sequence generator over them.

#include <memory>
#include <optional>

#include "backend/backend.h"
#include "cli/generation_args.h"
#include "cli/loaded_model.h"
#include "core/status.h"
#include "engine/generator.h"

namespace pagoda::cli {

struct GenerationSession {
  LoadedModel loaded;
  std::unique_ptr<backend::KvStorage> kv;
  std::optional<engine::Generator> generator;
  int32_t n_ctx = 0;
};

// Held by pointer: the generator refers to the model, KV cache and tokenizer inside.
Expected<std::unique_ptr<GenerationSession>> open_generation_session(const GenerationArgs& args);

// "load 0.12 s | prompt 9 tokens, 812.3 tokens/s | generation 128 tokens, 95.1 tokens/s"
// on stderr.
void print_timings(double load_seconds, const engine::GenerationTimings& timings);

}  // namespace pagoda::cli
