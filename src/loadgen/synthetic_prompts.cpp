#include "loadgen/synthetic_prompts.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <random>

namespace pagoda::loadgen {
namespace {

// Common English nouns and adjectives. Each is one token, after a space, in the
// vocabularies of GPT-2, Llama 3, Qwen 2 and SmolLM2: the 227 words of the list
// tokenize to 227 tokens in each.
constexpr std::string_view kPromptWords[] = {
    "time",       "year",       "people",       "way",          "day",        "man",
    "thing",      "woman",      "life",         "child",        "world",      "school",
    "state",      "family",     "student",      "group",        "country",    "problem",
    "hand",       "part",       "place",        "case",         "week",       "company",
    "system",     "program",    "question",     "work",         "government", "number",
    "night",      "point",      "home",         "water",        "room",       "mother",
    "area",       "money",      "story",        "fact",         "month",      "lot",
    "right",      "study",      "book",         "eye",          "job",        "word",
    "business",   "issue",      "side",         "kind",         "head",       "house",
    "service",    "friend",     "father",       "power",        "hour",       "game",
    "line",       "end",        "member",       "law",          "car",        "city",
    "community",  "name",       "president",    "team",         "minute",     "idea",
    "kid",        "body",       "information",  "back",         "parent",     "face",
    "others",     "level",      "office",       "door",         "health",     "person",
    "art",        "war",        "history",      "party",        "result",     "change",
    "morning",    "reason",     "research",     "girl",         "moment",     "air",
    "teacher",    "force",      "education",    "foot",         "boy",        "age",
    "policy",     "music",      "market",       "sense",        "nation",     "plan",
    "college",    "interest",   "death",        "experience",   "effect",     "class",
    "control",    "care",       "field",        "development",  "role",       "effort",
    "rate",       "heart",      "drug",         "show",         "leader",     "light",
    "voice",      "wife",       "police",       "mind",         "price",      "report",
    "decision",   "son",        "view",         "relationship", "town",       "road",
    "arm",        "difference", "value",        "building",     "action",     "model",
    "season",     "society",    "tax",          "director",     "position",   "player",
    "record",     "paper",      "space",        "ground",       "form",       "event",
    "official",   "matter",     "center",       "couple",       "site",       "project",
    "activity",   "star",       "table",        "need",         "court",      "oil",
    "situation",  "cost",       "industry",     "figure",       "street",     "image",
    "phone",      "data",       "picture",      "practice",     "piece",      "land",
    "product",    "doctor",     "wall",         "patient",      "worker",     "news",
    "test",       "movie",      "north",        "love",         "support",    "technology",
    "step",       "baby",       "computer",     "type",         "attention",  "film",
    "tree",       "source",     "organization", "hair",         "window",     "evidence",
    "population", "truth",      "song",         "army",         "hospital",   "church",
    "river",      "garden",     "bird",         "horse",        "green",      "small",
    "large",      "happy",      "quick",        "bright",       "warm",       "cold",
    "early",      "late",       "open",         "simple",       "strong",
};

}  // namespace

const char* token_count_source_name(TokenCountSource source) {
  return source == TokenCountSource::kTokenizeEndpoint ? "tokenize" : "estimate";
}

std::span<const std::string_view> prompt_words() {
  return kPromptWords;
}

std::string word_list_text() {
  std::string text;
  for (std::string_view word : kPromptWords) {
    if (!text.empty()) text.push_back(' ');
    text.append(word);
  }
  return text;
}

WordTokenRate measured_word_token_rate(int32_t word_list_tokens) {
  WordTokenRate rate;
  rate.tokens_per_word = static_cast<double>(std::max(word_list_tokens, 1)) /
                         static_cast<double>(std::size(kPromptWords));
  rate.source = TokenCountSource::kTokenizeEndpoint;
  return rate;
}

std::vector<BenchPrompt> synthetic_prompts(size_t count, int32_t prompt_tokens, int32_t max_tokens,
                                           const WordTokenRate& rate, uint64_t seed) {
  const double tokens_per_word = rate.tokens_per_word > 0.0 ? rate.tokens_per_word : 1.0;
  const auto n_words = static_cast<size_t>(
      std::max(1.0, std::round(static_cast<double>(prompt_tokens) / tokens_per_word)));
  std::mt19937_64 generator(seed);
  std::vector<BenchPrompt> prompts(count);
  for (BenchPrompt& prompt : prompts) {
    prompt.text.reserve(n_words * 8);
    for (size_t i = 0; i < n_words; ++i) {
      if (i > 0) prompt.text.push_back(' ');
      // Modulo bias over 2^64 draws is below 1e-16: immaterial here.
      prompt.text.append(kPromptWords[generator() % std::size(kPromptWords)]);
    }
    prompt.max_tokens = max_tokens;
    prompt.prompt_tokens =
        static_cast<int32_t>(std::lround(static_cast<double>(n_words) * tokens_per_word));
  }
  return prompts;
}

}  // namespace pagoda::loadgen
