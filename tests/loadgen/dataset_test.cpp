#include "loadgen/dataset.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "loadgen/synthetic_prompts.h"

namespace pagoda::loadgen {
namespace {

TEST(Dataset, JsonLinesWithAndWithoutMaxTokens) {
  auto dataset = parse_dataset(
      "{\"prompt\": \"Hello there\", \"max_tokens\": 12}\n"
      "\n"
      "  {\"prompt\": \"Second\", \"other\": [1, 2]}\r\n"
      "{\"prompt\": \"Third\", \"max_tokens\": null}");
  ASSERT_TRUE(dataset.ok()) << dataset.status().message();
  EXPECT_EQ(dataset->format, "jsonl");
  ASSERT_EQ(dataset->entries.size(), 3u);
  EXPECT_EQ(dataset->entries[0].prompt, "Hello there");
  EXPECT_EQ(dataset->entries[0].max_tokens, 12);
  EXPECT_EQ(dataset->entries[1].prompt, "Second");
  EXPECT_FALSE(dataset->entries[1].max_tokens.has_value());
  EXPECT_FALSE(dataset->entries[2].max_tokens.has_value());
}

TEST(Dataset, JsonLinesErrorsNameTheLine) {
  auto bad_json = parse_dataset("{\"prompt\": \"a\"}\n{\"prompt\": \n");
  ASSERT_FALSE(bad_json.ok());
  EXPECT_NE(bad_json.status().message().find("line 2"), std::string::npos)
      << bad_json.status().message();
  auto no_prompt = parse_dataset("{\"prompt\": \"a\"}\n{\"text\": \"b\"}\n");
  ASSERT_FALSE(no_prompt.ok());
  EXPECT_NE(no_prompt.status().message().find("line 2"), std::string::npos);
  EXPECT_NE(no_prompt.status().message().find("\"prompt\""), std::string::npos);
  for (const char* max_tokens : {"0", "-3", "1.5", "\"8\"", "99999999999"}) {
    auto bad =
        parse_dataset(std::string("{\"prompt\": \"a\", \"max_tokens\": ") + max_tokens + "}");
    ASSERT_FALSE(bad.ok()) << max_tokens;
    EXPECT_NE(bad.status().message().find("max_tokens"), std::string::npos);
  }
}

TEST(Dataset, ShareGptTakesFirstTwoTurnsAndSkipsShortConversations) {
  auto dataset = parse_dataset(R"([
    {"id": "a", "conversations": [{"from": "human", "value": "What is 2+2?"},
                                  {"from": "gpt", "value": "It is 4."},
                                  {"from": "human", "value": "And 3+3?"}]},
    {"id": "b", "conversations": [{"from": "human", "value": "Only one turn"}]},
    {"id": "c", "conversations": [{"from": "human", "value": ""}, {"from": "gpt", "value": "x"}]},
    {"id": "d", "conversations": [{"role": "user", "content": "Hi"},
                                  {"role": "assistant", "content": "Hello!"}]}
  ])");
  ASSERT_TRUE(dataset.ok()) << dataset.status().message();
  EXPECT_EQ(dataset->format, "sharegpt");
  EXPECT_EQ(dataset->skipped, 2u);
  ASSERT_EQ(dataset->entries.size(), 2u);
  EXPECT_EQ(dataset->entries[0].prompt, "What is 2+2?");
  EXPECT_EQ(dataset->entries[0].reference_reply, "It is 4.");
  EXPECT_FALSE(dataset->entries[0].max_tokens.has_value());
  EXPECT_EQ(dataset->entries[1].prompt, "Hi");
  EXPECT_EQ(dataset->entries[1].reference_reply, "Hello!");
}

TEST(Dataset, JsonArrayOfPromptObjectsAndItsErrors) {
  auto dataset = parse_dataset(R"([{"prompt": "a", "max_tokens": 3}, {"prompt": "b"}])");
  ASSERT_TRUE(dataset.ok());
  EXPECT_EQ(dataset->format, "json");
  ASSERT_EQ(dataset->entries.size(), 2u);
  EXPECT_EQ(dataset->entries[0].max_tokens, 3);

  auto not_object = parse_dataset(R"([{"prompt": "a"}, 7])");
  ASSERT_FALSE(not_object.ok());
  EXPECT_NE(not_object.status().message().find("entry 1"), std::string::npos);
  EXPECT_FALSE(parse_dataset(R"([{"conversations": "nope"}])").ok());
  EXPECT_FALSE(parse_dataset("[{\"prompt\": ").ok());
  EXPECT_FALSE(parse_dataset("  \n ").ok());
}

TEST(Dataset, LoadsFromAFileAndReportsAMissingOne) {
  const std::string path = ::testing::TempDir() + "/loadgen_dataset.jsonl";
  {
    std::ofstream file(path);
    file << "{\"prompt\": \"from a file\", \"max_tokens\": 5}\n";
  }
  auto dataset = load_dataset_file(path);
  ASSERT_TRUE(dataset.ok());
  ASSERT_EQ(dataset->entries.size(), 1u);
  EXPECT_EQ(dataset->entries[0].prompt, "from a file");
  std::remove(path.c_str());
  auto missing = load_dataset_file(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kIo);
}

TEST(Dataset, SampleIsSeededCoversEveryEntryAndRepeatsWhenShort) {
  std::vector<DatasetEntry> entries;
  for (int i = 0; i < 10; ++i) entries.push_back({std::to_string(i), std::nullopt, ""});
  const auto a = sample_entries(entries, 25, 5);
  const auto b = sample_entries(entries, 25, 5);
  ASSERT_EQ(a.size(), 25u);
  std::set<std::string> first_round;
  for (size_t i = 0; i < 10; ++i) first_round.insert(a[i].prompt);
  EXPECT_EQ(first_round.size(), 10u);  // a permutation before anything repeats
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].prompt, b[i].prompt);
  const auto other = sample_entries(entries, 10, 6);
  bool differs = false;
  for (size_t i = 0; i < 10; ++i) differs |= other[i].prompt != a[i].prompt;
  EXPECT_TRUE(differs);
  EXPECT_TRUE(sample_entries({}, 4, 1).empty());
}

TEST(Dataset, TokenEstimateIsFourBytesPerToken) {
  EXPECT_EQ(estimate_token_count(""), 1);
  EXPECT_EQ(estimate_token_count("abcd"), 1);
  EXPECT_EQ(estimate_token_count("abcde"), 2);
  EXPECT_EQ(estimate_token_count(std::string(400, 'x')), 100);
}

int word_count(const std::string& text) {
  std::istringstream words(text);
  int n = 0;
  for (std::string word; words >> word;) ++n;
  return n;
}

TEST(SyntheticPrompts, WordCountFollowsTheMeasuredRate) {
  const auto one_per_word = synthetic_prompts(4, 128, 16, WordTokenRate{}, 1);
  ASSERT_EQ(one_per_word.size(), 4u);
  for (const BenchPrompt& p : one_per_word) {
    EXPECT_EQ(word_count(p.text), 128);
    EXPECT_EQ(p.prompt_tokens, 128);
    EXPECT_EQ(p.max_tokens, 16);
  }
  // A vocabulary that splits each word in 4 (as a tiny one does): a quarter the words.
  const std::string list = word_list_text();
  const WordTokenRate rate = measured_word_token_rate(4 * word_count(list));
  EXPECT_DOUBLE_EQ(rate.tokens_per_word, 4.0);
  EXPECT_EQ(rate.source, TokenCountSource::kTokenizeEndpoint);
  const auto four_per_word = synthetic_prompts(2, 128, 16, rate, 1);
  EXPECT_EQ(word_count(four_per_word[0].text), 32);
  EXPECT_EQ(four_per_word[0].prompt_tokens, 128);
}

TEST(SyntheticPrompts, SeededAndDistinct) {
  const auto a = synthetic_prompts(8, 64, 4, WordTokenRate{}, 11);
  const auto b = synthetic_prompts(8, 64, 4, WordTokenRate{}, 11);
  const auto c = synthetic_prompts(8, 64, 4, WordTokenRate{}, 12);
  std::set<std::string> texts;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].text, b[i].text);
    texts.insert(a[i].text);
  }
  EXPECT_EQ(texts.size(), a.size());
  EXPECT_NE(a[0].text, c[0].text);
  for (const auto& word : prompt_words()) EXPECT_EQ(word.find(' '), std::string_view::npos);
  EXPECT_EQ(word_count(word_list_text()), static_cast<int>(prompt_words().size()));
}

}  // namespace
}  // namespace pagoda::loadgen
