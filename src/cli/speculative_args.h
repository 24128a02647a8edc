#pragma once
// The speculative-decoding flags `pagoda run`, `chat` and `bench` share (serve has the
// same names in its settings table): --speculative-ngram [--speculative-ngram-min N
// --speculative-ngram-max N], --speculative-model FILE, --num-speculative-tokens K,
// --no-speculative-adaptive.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "core/status.h"
#include "engine/speculative_config.h"

namespace pagoda::cli {

struct SpeculativeArgs {
  bool ngram = false;
  std::string draft_model_path;
  int32_t num_tokens = 0;  // 0: the method's default
  int32_t ngram_min = 2;
  int32_t ngram_max = 4;
  bool adaptive = true;
  float draft_p_min = 0.0f;

  // The engine's settings; fails when both methods are asked for, or on values out of
  // range.
  Expected<engine::SpeculativeConfig> config() const;
};

void add_speculative_options(CLI::App& command, SpeculativeArgs& args);

}  // namespace pagoda::cli
