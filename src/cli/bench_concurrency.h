#pragma once
// pagoda bench --concurrency N: an in-process serving benchmark of the Engine. Requests
// of synthetic random prompts (seeded; no control or end-of-generation ids) each
// generate exactly --gen-len tokens (end-of-generation ignored); N of them are in flight
// at once, a new one submitted as soon as one finishes, until --num-requests are done.
// Reports output tokens per second over the whole run and per-request latencies: time
// to first token (TTFT), end to end, and time per output token after the first.
//
// With --shared-prefix-len L every prompt is the same L tokens followed by --prompt-len
// tokens of its own. The first request runs alone until its first token (it computes
// and caches the prefix); then the others are submitted, and the report compares its
// TTFT with theirs.
//
// With --json-schema (or --grammar-file) every request samples under that constraint:
// run with and without it to see what constrained decoding costs. With
// --speculative-ngram or --speculative-model the engine speculates; the report adds the
// proposals verified and kept. --prompt-file gives real prompts (say, "repeat this
// code"), on which prompt lookup finds what to propose.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend_options.h"
#include "cli/grammar_args.h"
#include "cli/speculative_args.h"
#include "core/status.h"

namespace pagoda::cli {

struct ConcurrencyBenchArgs {
  int concurrency = 0;           // requests in flight; 0: not this benchmark
  int num_requests = 0;          // 0: as many as the concurrency
  int prompt_len = 128;          // tokens of each prompt after the shared prefix
  int gen_len = 128;             // tokens each request generates
  int shared_prefix_len = 0;     // tokens every prompt starts with
  int max_batched_tokens = 512;  // tokens per engine step
  int max_running = 0;           // requests holding KV at once; 0: the concurrency
  uint64_t kv_cache_memory = 0;  // bytes; 0: a share of the available memory
  std::string kv_cache_type = "f16";
  uint64_t seed = 1234;
  // Sampling temperature of every request; 0: greedy. Request i draws with seed + i, so
  // runs make the same tokens.
  float temperature = 0.0f;
  // Truncation of every request's draws (sampling_params.h's meanings; off by default).
  int top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  bool host_sampling = false;  // every token on the host's sampler (EngineConfig::tokens_on_device off)
  // Every request's output constrained (--grammar-file, --json-schema[-file]): a
  // request then ends early where its grammar is complete.
  GrammarArgs grammar;
  // Real prompts instead of random ones (--prompt-file, repeatable): each file's text is
  // one user message rendered through the model's chat template; request i takes file
  // i % count and stops at its end-of-generation token or --gen-len. The longest sets
  // prompt_len (and the context), in place of --prompt-len and --shared-prefix-len.
  std::vector<std::string> prompt_files;
  SpeculativeArgs speculative;
};

// Registers --concurrency and the options above on `pagoda bench`.
void add_concurrency_options(CLI::App& command, ConcurrencyBenchArgs& args);

// Runs the benchmark on `model_path` on the backend `backend` chooses and prints a text
// summary, or one JSON object when `json`.
Status run_concurrency_bench(const std::string& model_path, const backend::BackendOptions& backend, bool json,
                             const ConcurrencyBenchArgs& args);

}  // namespace pagoda::cli
