#pragma once
// The generation flags `pagoda run` and `pagoda chat` share: model, context, batch size,
// sampling and stop conditions, an output constraint (cli/grammar_args.h), speculative
// decoding (cli/speculative_args.h), and the backend's (cli/backend_args.h).

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend_options.h"
#include "cli/grammar_args.h"
#include "cli/speculative_args.h"
#include "engine/sampling_params.h"
#include "engine/stop_checker.h"

namespace pagoda::cli {

struct GenerationArgs {
  std::string model_path;
  int32_t context = 0;       // 0: the model's training context, at most 4096
  int32_t batch_size = 512;  // prompt tokens per forward pass
  int32_t max_tokens = -1;   // -1: until the context is full or the model stops
  engine::SamplingParams sampling;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  backend::BackendOptions backend;
  GrammarArgs grammar;
  SpeculativeArgs speculative;

  GenerationArgs() {
    // llama.cpp's defaults, so that the same flags give comparable output.
    sampling.temperature = 0.8f;
    sampling.top_k = 40;
    sampling.top_p = 0.95f;
    sampling.min_p = 0.05f;
  }

  engine::SamplingParams sampling_params() const;
  // Stop conditions for a context of n_ctx tokens (max_tokens -1 becomes n_ctx).
  engine::StopConditions stop_conditions(int32_t n_ctx) const;
  // The context to allocate for a model trained on n_ctx_train tokens.
  int32_t context_size(int32_t n_ctx_train) const;
};

// The flags above and the backend's.
void add_generation_options(CLI::App& command, GenerationArgs& args);

}  // namespace pagoda::cli
