#include "cli/generation_args.h"

#include <algorithm>
#include <string>

#include "cli/backend_args.h"

namespace pagoda::cli {

void add_generation_options(CLI::App& command, GenerationArgs& args) {
  command.add_option("-m,--model", args.model_path, "GGUF model file")->required();
  command
      .add_option("-n,--n-predict", args.max_tokens, "Tokens to generate at most (-1: no limit)")
      ->capture_default_str();
  command
      .add_option("-c,--ctx-size", args.context,
                  "Context size in tokens (0: the model's, at most 4096)")
      ->capture_default_str();
  command.add_option("-b,--batch-size", args.batch_size, "Prompt tokens per forward pass")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  engine::SamplingParams& s = args.sampling;
  command.add_option("--temp", s.temperature, "Temperature (0: greedy)")->capture_default_str();
  command.add_option("--top-k", s.top_k, "Top-k (0: off)")->capture_default_str();
  command.add_option("--top-p", s.top_p, "Top-p (1: off)")->capture_default_str();
  command.add_option("--min-p", s.min_p, "Min-p (0: off)")->capture_default_str();
  command.add_option("--repeat-penalty", s.repetition_penalty, "Repetition penalty (1: off)")
      ->capture_default_str();
  command
      .add_option("--repeat-last-n", s.repetition_window,
                  "Tokens the repetition penalty looks back over (0: off, -1: all)")
      ->capture_default_str();
  command.add_option("--presence-penalty", s.presence_penalty, "Presence penalty")
      ->capture_default_str();
  command.add_option("--frequency-penalty", s.frequency_penalty, "Frequency penalty")
      ->capture_default_str();
  command.add_option("-s,--seed", args.seed, "Random seed (default: random)");
  command.add_option("--stop", args.stop, "Stop string (repeatable)");
  command.add_flag("--ignore-eos", args.ignore_eos,
                   "Keep generating past end-of-generation tokens");
  add_grammar_options(command, args.grammar);
  add_speculative_options(command, args.speculative);
  add_backend_options(command, args.backend);
}

engine::SamplingParams GenerationArgs::sampling_params() const {
  engine::SamplingParams params = sampling;
  params.seed = seed;
  return params;
}

engine::StopConditions GenerationArgs::stop_conditions(int32_t n_ctx) const {
  engine::StopConditions conditions;
  conditions.max_tokens = max_tokens < 0 ? n_ctx : max_tokens;
  conditions.stop_strings = stop;
  conditions.ignore_eog = ignore_eos;
  return conditions;
}

int32_t GenerationArgs::context_size(int32_t n_ctx_train) const {
  if (context > 0) return context;
  return std::min(n_ctx_train > 0 ? n_ctx_train : 4096, 4096);
}

}  // namespace pagoda::cli
