#include "loadgen/prompt_source.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "loadgen/dataset.h"
#include "loadgen/server_queries.h"
#include "loadgen/synthetic_prompts.h"

namespace pagoda::loadgen {
namespace {

// Token counts of `texts` from the server, or nothing (with the reason in `note`).
std::optional<std::vector<int32_t>> measured_counts(const ServerTarget& server,
                                                    const std::vector<std::string>& texts,
                                                    std::chrono::milliseconds timeout,
                                                    std::string& note) {
  auto counts = tokenize_counts(server, texts, timeout);
  if (counts.ok()) return std::move(counts).value();
  note = counts.status().code() == ErrorCode::kNotFound
             ? "the server has no /tokenize; token counts are estimates"
             : "/tokenize failed (" + counts.status().message() + "); token counts are estimates";
  return std::nullopt;
}

Expected<PromptSet> synthetic_set(const ServerTarget& server, const PromptSourceOptions& options) {
  PromptSet set;
  WordTokenRate rate;
  if (auto counts = measured_counts(server, {word_list_text()}, options.timeout, set.note)) {
    rate = measured_word_token_rate(counts->front());
  }
  set.prompts = synthetic_prompts(options.count, options.prompt_tokens, options.max_tokens, rate,
                                  options.seed);
  set.token_counts = rate.source;
  char description[160];
  std::snprintf(
      description, sizeof description,
      "synthetic, %d prompt + %d generated tokens (%.2f tokens/word, %s)", options.prompt_tokens,
      options.max_tokens, rate.tokens_per_word,
      rate.source == TokenCountSource::kTokenizeEndpoint ? "measured by /tokenize" : "estimated");
  set.description = description;
  return set;
}

Expected<PromptSet> dataset_set(const ServerTarget& server, const PromptSourceOptions& options) {
  PAGODA_ASSIGN_OR_RETURN(const Dataset dataset, load_dataset_file(options.dataset_path));
  if (dataset.entries.empty())
    return invalid_argument(options.dataset_path + ": no usable prompt in the dataset");
  const std::vector<DatasetEntry> entries =
      sample_entries(dataset.entries, options.count, options.seed);
  // One list to measure: every prompt, then the replies that set a length.
  std::vector<std::string> texts;
  std::vector<size_t> reply_index(entries.size(), SIZE_MAX);  // into texts
  for (const DatasetEntry& entry : entries) texts.push_back(entry.prompt);
  for (size_t i = 0; i < entries.size(); ++i) {
    const DatasetEntry& entry = entries[i];
    if (options.max_tokens_overrides || entry.max_tokens || entry.reference_reply.empty()) continue;
    reply_index[i] = texts.size();
    texts.push_back(entry.reference_reply);
  }
  PromptSet set;
  std::vector<int32_t> counts;
  if (auto measured = measured_counts(server, texts, options.timeout, set.note)) {
    counts = std::move(*measured);
    set.token_counts = TokenCountSource::kTokenizeEndpoint;
  } else {
    for (const std::string& text : texts) counts.push_back(estimate_token_count(text));
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    BenchPrompt prompt{entries[i].prompt, options.max_tokens, counts[i]};
    if (!options.max_tokens_overrides && entries[i].max_tokens)
      prompt.max_tokens = *entries[i].max_tokens;
    if (reply_index[i] != SIZE_MAX) prompt.max_tokens = std::max(counts[reply_index[i]], 1);
    set.prompts.push_back(std::move(prompt));
  }
  set.description = "dataset " + options.dataset_path + " (" + dataset.format + ", " +
                    std::to_string(dataset.entries.size()) + " entries";
  if (dataset.skipped > 0) set.description += ", " + std::to_string(dataset.skipped) + " skipped";
  set.description += ")";
  return set;
}

}  // namespace

Expected<PromptSet> make_prompts(const ServerTarget& server, const PromptSourceOptions& options) {
  if (options.count == 0) return invalid_argument("the number of prompts must be at least 1");
  if (options.max_tokens < 1) return invalid_argument("the generation length must be at least 1");
  if (!options.dataset_path.empty()) return dataset_set(server, options);
  if (options.prompt_tokens < 1) return invalid_argument("the prompt length must be at least 1");
  return synthetic_set(server, options);
}

}  // namespace pagoda::loadgen
