// The questions asked before a run (model id, token counts) and the prompt source
// that uses them, against the fake server.
#include "loadgen/server_queries.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "fake_openai_server.h"
#include "loadgen/prompt_source.h"

namespace pagoda::loadgen {
namespace {

using testing::FakeOpenAiServer;
using testing::FakeServerOptions;
using namespace std::chrono_literals;

ServerTarget target_of(const FakeOpenAiServer& server) {
  ServerTarget target;
  target.url = parse_server_url(server.url()).value();
  return target;
}

TEST(ServerQueries, FirstModelId) {
  FakeServerOptions options;
  options.model = "tiny-llama";
  FakeOpenAiServer server(options);
  auto model = first_model_id(target_of(server), 5s);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ(*model, "tiny-llama");
}

TEST(ServerQueries, ModelListErrorsNameTheRequest) {
  FakeOpenAiServer server;
  ServerTarget prefixed;
  prefixed.url = parse_server_url(server.url() + "/nope").value();
  auto model = first_model_id(prefixed, 5s);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(model.status().message(),
            "GET " + server.url() + "/nope/v1/models: HTTP 404: no route /nope/v1/models");
}

TEST(ServerQueries, TokenizeCountsInOrder) {
  FakeOpenAiServer server;
  std::vector<std::string> texts;
  for (int i = 1; i <= 40; ++i)
    texts.push_back(std::string(static_cast<size_t>(2 * i), ' ') + "w" +
                    std::string(static_cast<size_t>(i), ' ') + "x");
  auto counts = tokenize_counts(target_of(server), {"a b c", "one", "x y"}, 5s, 2);
  ASSERT_TRUE(counts.ok()) << counts.status().message();
  EXPECT_EQ(*counts, (std::vector<int32_t>{3, 1, 2}));
  auto many = tokenize_counts(target_of(server), texts, 5s, 8);
  ASSERT_TRUE(many.ok());
  EXPECT_EQ(*many, std::vector<int32_t>(40, 2));
}

// Pagoda refuses a /tokenize body with both "prompt" and "content"; llama-server reads
// "content" only. One request a text, after the first text's second try.
TEST(ServerQueries, TokenizeUsesTheFieldNamesTheServerTakes) {
  for (const std::string field : {"prompt", "content"}) {
    FakeServerOptions options;
    options.tokenize_field = field;
    FakeOpenAiServer server(options);
    auto counts = tokenize_counts(target_of(server), {"a b c", "one", "x y", "p q r s"}, 5s, 1);
    ASSERT_TRUE(counts.ok()) << field << ": " << counts.status().message();
    EXPECT_EQ(*counts, (std::vector<int32_t>{3, 1, 2, 4})) << field;
    EXPECT_EQ(server.tokenize_requests(), field == "prompt" ? 4 : 5) << field;
  }
}

TEST(ServerQueries, MissingTokenizeIsNotFound) {
  FakeServerOptions options;
  options.has_tokenize = false;
  FakeOpenAiServer server(options);
  auto counts = tokenize_counts(target_of(server), {"a"}, 5s);
  ASSERT_FALSE(counts.ok());
  EXPECT_EQ(counts.status().code(), ErrorCode::kNotFound);
}

TEST(PromptSource, SyntheticPromptsMeasuredThroughTokenize) {
  FakeOpenAiServer server;  // one token per word
  PromptSourceOptions options;
  options.count = 3;
  options.prompt_tokens = 40;
  options.max_tokens = 7;
  auto set = make_prompts(target_of(server), options);
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_EQ(set->token_counts, TokenCountSource::kTokenizeEndpoint);
  EXPECT_TRUE(set->note.empty());
  EXPECT_NE(set->description.find("measured by /tokenize"), std::string::npos) << set->description;
  ASSERT_EQ(set->prompts.size(), 3u);
  EXPECT_EQ(set->prompts[0].prompt_tokens, 40);
  EXPECT_EQ(set->prompts[0].max_tokens, 7);
}

TEST(PromptSource, SyntheticPromptsEstimatedWithoutTokenize) {
  FakeServerOptions server_options;
  server_options.has_tokenize = false;
  FakeOpenAiServer server(server_options);
  PromptSourceOptions options;
  options.count = 2;
  auto set = make_prompts(target_of(server), options);
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->token_counts, TokenCountSource::kEstimate);
  EXPECT_NE(set->note.find("no /tokenize"), std::string::npos) << set->note;
  EXPECT_EQ(set->prompts[1].prompt_tokens, 128);
}

TEST(PromptSource, ShareGptReplyLengthSetsMaxTokensUnlessOverridden) {
  const std::string path = ::testing::TempDir() + "/loadgen_sharegpt.json";
  {
    std::ofstream file(path);
    file << R"([{"conversations": [{"from": "human", "value": "what is two plus two"},
                                   {"from": "gpt", "value": "it is four"}]}])";
  }
  FakeOpenAiServer server;
  PromptSourceOptions options;
  options.count = 3;  // more than the file has: the entry repeats
  options.dataset_path = path;
  auto set = make_prompts(target_of(server), options);
  ASSERT_TRUE(set.ok()) << set.status().message();
  ASSERT_EQ(set->prompts.size(), 3u);
  EXPECT_EQ(set->prompts[2].text, "what is two plus two");
  EXPECT_EQ(set->prompts[2].prompt_tokens, 5);
  EXPECT_EQ(set->prompts[2].max_tokens, 3);
  EXPECT_NE(set->description.find("sharegpt"), std::string::npos);

  options.max_tokens = 9;
  options.max_tokens_overrides = true;
  auto overridden = make_prompts(target_of(server), options);
  ASSERT_TRUE(overridden.ok());
  EXPECT_EQ(overridden->prompts[0].max_tokens, 9);
  std::remove(path.c_str());
}

TEST(PromptSource, BadSettingsAreErrors) {
  FakeOpenAiServer server;
  PromptSourceOptions options;
  options.count = 0;
  EXPECT_FALSE(make_prompts(target_of(server), options).ok());
  options.count = 1;
  options.dataset_path = "/nonexistent/prompts.jsonl";
  EXPECT_FALSE(make_prompts(target_of(server), options).ok());
}

}  // namespace
}  // namespace pagoda::loadgen
