#include "cli/speculative_args.h"

namespace pagoda::cli {

Expected<engine::SpeculativeConfig> SpeculativeArgs::config() const {
  if (ngram && !draft_model_path.empty()) {
    return invalid_argument("choose one way to speculate: --speculative-ngram or --speculative-model");
  }
  engine::SpeculativeConfig config;
  if (ngram) config.method = engine::SpeculativeMethod::kNgram;
  if (!draft_model_path.empty()) config.method = engine::SpeculativeMethod::kDraft;
  config.draft_model_path = draft_model_path;
  config.num_speculative_tokens = num_tokens;
  config.ngram_min = ngram_min;
  config.ngram_max = ngram_max;
  config.adaptive = adaptive;
  config.draft_p_min = draft_p_min;
  PAGODA_TRY(config.validate());
  return config;
}

void add_speculative_options(CLI::App& command, SpeculativeArgs& args) {
  command.add_flag("--speculative-ngram", args.ngram,
                   "Speculative decoding by prompt lookup: propose what followed the latest "
                   "earlier occurrence of the last tokens (same output, fewer steps)");
  command.add_option("--speculative-model", args.draft_model_path,
                     "Speculative decoding with a draft model: a smaller GGUF with the same "
                     "vocabulary proposes, the model verifies (same output distribution)");
  command.add_option("--num-speculative-tokens", args.num_tokens,
                     "Proposals verified per step at most (0: 3 for prompt lookup, 4 for a draft model)")
      ->capture_default_str();
  command.add_flag("!--no-speculative-adaptive", args.adaptive,
                   "Verify every proposal a request has, instead of those worth their rows "
                   "(by its acceptance and the measured cost of a step)");
  command.add_option("--speculative-p-min", args.draft_p_min,
                     "A draft model stops proposing for a greedy request at the first token it gives "
                     "less than this chance (0: never)")
      ->capture_default_str();
  command.add_option("--speculative-ngram-min", args.ngram_min, "Shortest suffix prompt lookup matches")
      ->capture_default_str();
  command.add_option("--speculative-ngram-max", args.ngram_max, "Longest suffix prompt lookup matches")
      ->capture_default_str();
}

}  // namespace pagoda::cli
