#include "loadgen/dataset.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

namespace pagoda::loadgen {
namespace {

using Json = nlohmann::json;

// Parses JSON text; the parser's message (with its byte offset) becomes the error.
Expected<Json> parse_json(std::string_view text, const std::string& where) {
  Json value = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    try {  // parse again only to learn what is wrong; nothing leaves this function
      const Json unreachable = Json::parse(text);
      (void)unreachable;
    } catch (const Json::parse_error& error) {
      return invalid_argument(where + ": invalid JSON: " + error.what());
    }
    return invalid_argument(where + ": invalid JSON");
  }
  return value;
}

// {"prompt": "...", "max_tokens": N}
Expected<DatasetEntry> prompt_entry(const Json& item, const std::string& where) {
  if (!item.is_object()) return invalid_argument(where + ": expected an object");
  const auto prompt = item.find("prompt");
  if (prompt == item.end() || !prompt->is_string())
    return invalid_argument(where + ": \"prompt\" must be a string");
  DatasetEntry entry;
  entry.prompt = prompt->get<std::string>();
  if (const auto max_tokens = item.find("max_tokens");
      max_tokens != item.end() && !max_tokens->is_null()) {
    if (!max_tokens->is_number_integer() || max_tokens->get<int64_t>() < 1 ||
        max_tokens->get<int64_t>() > std::numeric_limits<int32_t>::max())
      return invalid_argument(where + ": \"max_tokens\" must be a positive integer");
    entry.max_tokens = static_cast<int32_t>(max_tokens->get<int64_t>());
  }
  return entry;
}

// The text of one ShareGPT turn ("value", or "content" as some exports name it).
std::string turn_text(const Json& turn) {
  if (!turn.is_object()) return {};
  for (const char* key : {"value", "content"}) {
    const auto text = turn.find(key);
    if (text != turn.end() && text->is_string()) return text->get<std::string>();
  }
  return {};
}

// A ShareGPT conversation, or nothing when it has fewer than two non-empty turns.
Expected<std::optional<DatasetEntry>> conversation_entry(const Json& item,
                                                         const std::string& where) {
  const Json& turns = item["conversations"];
  if (!turns.is_array()) return invalid_argument(where + ": \"conversations\" must be an array");
  if (turns.size() < 2) return std::optional<DatasetEntry>();
  DatasetEntry entry;
  entry.prompt = turn_text(turns[0]);
  entry.reference_reply = turn_text(turns[1]);
  if (entry.prompt.empty() || entry.reference_reply.empty()) return std::optional<DatasetEntry>();
  return std::optional<DatasetEntry>(std::move(entry));
}

Expected<Dataset> parse_json_array(const Json& items) {
  Dataset dataset;
  dataset.format = "json";
  for (size_t i = 0; i < items.size(); ++i) {
    const Json& item = items[i];
    const std::string where = "dataset entry " + std::to_string(i);
    if (item.is_object() && item.contains("conversations")) {
      dataset.format = "sharegpt";
      PAGODA_ASSIGN_OR_RETURN(std::optional<DatasetEntry> entry, conversation_entry(item, where));
      if (entry)
        dataset.entries.push_back(std::move(*entry));
      else
        ++dataset.skipped;
      continue;
    }
    PAGODA_ASSIGN_OR_RETURN(DatasetEntry entry, prompt_entry(item, where));
    dataset.entries.push_back(std::move(entry));
  }
  return dataset;
}

Expected<Dataset> parse_jsonl(std::string_view text) {
  Dataset dataset;
  dataset.format = "jsonl";
  size_t line_number = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = "dataset line " + std::to_string(line_number);
    PAGODA_ASSIGN_OR_RETURN(const Json item, parse_json(line, where));
    PAGODA_ASSIGN_OR_RETURN(DatasetEntry entry, prompt_entry(item, where));
    dataset.entries.push_back(std::move(entry));
  }
  return dataset;
}

}  // namespace

Expected<Dataset> parse_dataset(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return invalid_argument("dataset is empty");
  if (text[first] != '[') return parse_jsonl(text);
  PAGODA_ASSIGN_OR_RETURN(const Json items, parse_json(text, "dataset"));
  return parse_json_array(items);
}

Expected<Dataset> load_dataset_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return io_error("cannot open dataset '" + path + "'");
  std::ostringstream contents;
  contents << file.rdbuf();
  if (file.bad()) return io_error("cannot read dataset '" + path + "'");
  auto dataset = parse_dataset(contents.str());
  if (!dataset.ok())
    return Status(dataset.status().code(), path + ": " + dataset.status().message());
  return dataset;
}

std::vector<DatasetEntry> sample_entries(const std::vector<DatasetEntry>& entries, size_t count,
                                         uint64_t seed) {
  std::vector<DatasetEntry> sample;
  if (entries.empty()) return sample;
  sample.reserve(count);
  std::mt19937_64 generator(seed);
  std::vector<size_t> order(entries.size());
  while (sample.size() < count) {
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    for (size_t i = order.size() - 1; i > 0; --i)  // Fisher-Yates, our own for portability
      std::swap(order[i], order[generator() % (i + 1)]);
    for (size_t i = 0; i < order.size() && sample.size() < count; ++i)
      sample.push_back(entries[order[i]]);
  }
  return sample;
}

int32_t estimate_token_count(std::string_view text) {
  const size_t tokens = (text.size() + 3) / 4;
  return static_cast<int32_t>(std::clamp<size_t>(tokens, 1, std::numeric_limits<int32_t>::max()));
}

}  // namespace pagoda::loadgen
