#pragma once
// The prompts of a run, ready to send: synthetic ones of a given token length, or
// entries of a dataset file, with the token counts the server's /tokenize gives
// when it has one (estimates otherwise).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "loadgen/bench_prompt.h"
#include "loadgen/load_runner.h"

namespace pagoda::loadgen {

struct PromptSourceOptions {
  size_t count = 100;                 // prompts to make
  int32_t prompt_tokens = 128;        // synthetic prompt length
  int32_t max_tokens = 128;           // tokens to generate, when nothing else says
  bool max_tokens_overrides = false;  // true: max_tokens even for dataset entries
  std::string dataset_path;           // empty: synthetic prompts
  uint64_t seed = 0;
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};  // per /tokenize call
};

struct PromptSet {
  std::vector<BenchPrompt> prompts;
  TokenCountSource token_counts = TokenCountSource::kEstimate;
  std::string description;  // "synthetic, 128 prompt tokens (1.00 per word, measured by /tokenize)"
  std::string note;         // why counts are estimates, when a /tokenize call failed; else ""
};

// For a dataset entry, tokens to generate: the override, else the entry's
// max_tokens, else its reference reply's length, else the default.
Expected<PromptSet> make_prompts(const ServerTarget& server, const PromptSourceOptions& options);

}  // namespace pagoda::loadgen
