#pragma once
// Prompt datasets read from a file, in one of two shapes (told apart by the first
// character that is not white space):
//   JSONL: one object per line, {"prompt": "...", "max_tokens": 128}, max_tokens
//          optional (a JSON array of such objects is read the same way);
//   ShareGPT: a JSON array of {"conversations": [{"from": "human", "value": "..."},
//          {"from": "gpt", "value": "..."}, ...]}; the first turn is the prompt and the
//          second the reference reply, whose length in tokens is how much to generate.
//          Conversations with fewer than two non-empty turns are skipped.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace pagoda::loadgen {

struct DatasetEntry {
  std::string prompt;
  std::optional<int32_t> max_tokens;  // as the file gives it (JSONL); > 0
  std::string reference_reply;        // ShareGPT's first reply; empty otherwise
};

struct Dataset {
  std::string format;                 // "jsonl" | "json" | "sharegpt"
  std::vector<DatasetEntry> entries;  // in file order
  size_t skipped = 0;                 // ShareGPT conversations too short to use
};

// Parses a dataset file's text. Malformed JSON or a field of the wrong type is an
// InvalidArgument naming the line (JSONL) or the array index.
Expected<Dataset> parse_dataset(std::string_view text);
Expected<Dataset> load_dataset_file(const std::string& path);

// `count` entries drawn from `entries` by a seeded shuffle of the whole set, repeated
// (shuffled again) while more are needed. Empty when `entries` is.
std::vector<DatasetEntry> sample_entries(const std::vector<DatasetEntry>& entries, size_t count,
                                         uint64_t seed);

// A token count for a text without a tokenizer: one token per 4 bytes (the usual
// rate of English under current vocabularies), at least 1.
int32_t estimate_token_count(std::string_view text);

}  // namespace pagoda::loadgen
