// Legacy completions: the four prompt forms, token ids against the vocabulary, logprobs
// and echo; and resolving max_tokens against the context.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "openai_test_util.h"
#include "server/openai/openai_request.h"

namespace pagoda::server {
namespace {

using testing::IsBadRequest;
using testing::kVocab;
using Ids = std::vector<int32_t>;

ApiResult<CompletionRequest> Completion(std::string_view fields) {
  return parse_completion_request("{" + std::string(fields) + "}", kVocab);
}

TEST(OpenAICompletionRequest, AStringPromptIsOnePrompt) {
  auto request = Completion(R"("model": "m", "prompt": "Once upon a time", "max_tokens": 16)");
  ASSERT_TRUE(request.ok()) << request.error().message;
  ASSERT_EQ(request->prompts.size(), 1u);
  EXPECT_EQ(std::get<std::string>(request->prompts[0]), "Once upon a time");
  EXPECT_EQ(request->model, "m");
  EXPECT_EQ(request->options.max_tokens, std::optional<int32_t>(16));
  EXPECT_FALSE(request->options.sampling.logprobs);
  EXPECT_FALSE(request->options.echo);
}

TEST(OpenAICompletionRequest, AListOfStringsIsOnePromptEach) {
  auto request = Completion(R"("prompt": ["a", "b", "c"])");
  ASSERT_TRUE(request.ok());
  ASSERT_EQ(request->prompts.size(), 3u);
  EXPECT_EQ(std::get<std::string>(request->prompts[2]), "c");
}

TEST(OpenAICompletionRequest, AListOfTokenIdsIsOnePrompt) {
  auto request = Completion(R"("prompt": [1, 999, 0, 5.0])");
  ASSERT_TRUE(request.ok()) << request.error().message;
  ASSERT_EQ(request->prompts.size(), 1u);
  EXPECT_EQ(std::get<Ids>(request->prompts[0]), (Ids{1, 999, 0, 5}));
}

TEST(OpenAICompletionRequest, AListOfTokenListsIsOnePromptEach) {
  auto request = Completion(R"("prompt": [[1, 2], [3]])");
  ASSERT_TRUE(request.ok());
  ASSERT_EQ(request->prompts.size(), 2u);
  EXPECT_EQ(std::get<Ids>(request->prompts[0]), (Ids{1, 2}));
  EXPECT_EQ(std::get<Ids>(request->prompts[1]), (Ids{3}));
}

TEST(OpenAICompletionRequest, TokenIdsMustBeInTheVocabulary) {
  auto outside = Completion(R"("prompt": [1, 1000])");
  ASSERT_TRUE(IsBadRequest(outside, "prompt[1]", "invalid_value"));
  EXPECT_EQ(outside.error().message,
            "Invalid 'prompt[1]': token id 1000 is outside the vocabulary (ids 0 to 999).");
  EXPECT_TRUE(
      IsBadRequest(Completion(R"("prompt": [[1], [2, -1]])"), "prompt[1][1]", "invalid_value"));
  EXPECT_TRUE(IsBadRequest(Completion(R"("prompt": [1, 2.5])"), "prompt[1]", "invalid_type"));
  EXPECT_TRUE(IsBadRequest(Completion(R"("prompt": [1, 1e300])"), "prompt[1]"));
  EXPECT_TRUE(IsBadRequest(Completion(R"("prompt": [18446744073709551615])"), "prompt[0]"));
}

TEST(OpenAICompletionRequest, PromptFormsCannotBeMixed) {
  EXPECT_TRUE(IsBadRequest(Completion(R"("prompt": ["a", 1])"), "prompt[1]", "invalid_type"));
  EXPECT_TRUE(IsBadRequest(Completion(R"("prompt": [1, "a"])"), "prompt[1]", "invalid_type"));
  EXPECT_TRUE(IsBadRequest(Completion(R"("prompt": [[1], 2])"), "prompt[1]", "invalid_type"));
  EXPECT_TRUE(
      IsBadRequest(Completion(R"("prompt": [{"text": "a"}])"), "prompt[0]", "invalid_type"));
  EXPECT_TRUE(IsBadRequest(Completion(R"("prompt": true)"), "prompt", "invalid_type"));
}

TEST(OpenAICompletionRequest, PromptsMustNotBeEmpty) {
  auto missing = Completion(R"("model": "m")");
  ASSERT_TRUE(IsBadRequest(missing, "prompt", "missing_required_parameter"));
  EXPECT_EQ(missing.error().message, "Missing required parameter: 'prompt'.");
  EXPECT_TRUE(IsBadRequest(Completion(R"("prompt": null)"), "prompt"));
  EXPECT_TRUE(IsBadRequest(Completion(R"("prompt": "")"), "prompt", "empty_string"));
  EXPECT_TRUE(IsBadRequest(Completion(R"("prompt": [])"), "prompt", "empty_array"));
  EXPECT_TRUE(IsBadRequest(Completion(R"("prompt": ["a", ""])"), "prompt[1]", "empty_string"));
  EXPECT_TRUE(IsBadRequest(Completion(R"("prompt": [[1], []])"), "prompt[1]", "empty_array"));
}

TEST(OpenAICompletionRequest, LogprobsIsTheNumberOfAlternatives) {
  auto request = Completion(R"("prompt": "a", "logprobs": 3)");
  ASSERT_TRUE(request.ok());
  EXPECT_TRUE(request->options.sampling.logprobs);
  EXPECT_EQ(request->options.sampling.top_logprobs, 3);
  auto chosen_only = Completion(R"("prompt": "a", "logprobs": 0)");
  ASSERT_TRUE(chosen_only.ok());
  EXPECT_TRUE(chosen_only->options.sampling.logprobs);
  EXPECT_EQ(chosen_only->options.sampling.top_logprobs, 0);
  EXPECT_FALSE(Completion(R"("prompt": "a", "logprobs": null)")->options.sampling.logprobs);
  EXPECT_TRUE(IsBadRequest(Completion(R"("prompt": "a", "logprobs": 6)"), "logprobs",
                           "integer_above_max_value"));
  EXPECT_TRUE(
      IsBadRequest(Completion(R"("prompt": "a", "logprobs": true)"), "logprobs", "invalid_type"));
}

TEST(OpenAICompletionRequest, EchoIsSupportedButNotWithLogprobs) {
  auto request = Completion(R"("prompt": "a", "echo": true)");
  ASSERT_TRUE(request.ok());
  EXPECT_TRUE(request->options.echo);
  auto both = Completion(R"("prompt": "a", "echo": true, "logprobs": 1)");
  ASSERT_TRUE(IsBadRequest(both, "echo", "unsupported_parameter"));
  EXPECT_TRUE(IsBadRequest(Completion(R"("prompt": "a", "echo": "yes")"), "echo", "invalid_type"));
}

TEST(OpenAICompletionRequest, SuffixIsRefusedRatherThanIgnored) {
  EXPECT_TRUE(IsBadRequest(Completion(R"("prompt": "a", "suffix": "b")"), "suffix",
                           "unsupported_parameter"));
  EXPECT_TRUE(Completion(R"("prompt": "a", "suffix": null)").ok());
}

TEST(OpenAICompletionRequest, BestOfIsAcceptedOnlyWhereItReturnsEveryCandidate) {
  auto same = Completion(R"("prompt": "a", "n": 3, "best_of": 3)");
  ASSERT_TRUE(same.ok()) << same.error().message;
  EXPECT_EQ(same->options.n, 3);
  EXPECT_TRUE(Completion(R"("prompt": "a", "best_of": 1)").ok());
  EXPECT_TRUE(Completion(R"("prompt": "a", "best_of": null)").ok());
  EXPECT_TRUE(IsBadRequest(Completion(R"("prompt": "a", "best_of": 2)"), "best_of", "unsupported_parameter"));
  EXPECT_TRUE(IsBadRequest(Completion(R"("prompt": "a", "n": 3, "best_of": 2)"), "best_of", "invalid_value"));
  EXPECT_TRUE(IsBadRequest(Completion(R"("prompt": "a", "best_of": 0)"), "best_of", "integer_below_min_value"));
  EXPECT_TRUE(IsBadRequest(Completion(R"("prompt": "a", "best_of": "2")"), "best_of", "invalid_type"));
}

TEST(OpenAICompletionRequest, SharedFieldsAreCheckedAsForChat) {
  auto request = Completion(R"("prompt": "a", "n": 2, "stop": "\n", "seed": 7,
      "stream": true, "stream_options": {"include_usage": true}, "temperature": 0)");
  ASSERT_TRUE(request.ok()) << request.error().message;
  EXPECT_EQ(request->options.n, 2);
  EXPECT_EQ(request->options.stop.stop_strings, std::vector<std::string>{"\n"});
  EXPECT_TRUE(request->options.include_usage);
  EXPECT_TRUE(request->options.sampling.greedy());
  EXPECT_TRUE(IsBadRequest(Completion(R"("prompt": "a", "top_p": 2)"), "top_p"));
  EXPECT_TRUE(IsBadRequest(Completion(R"("prompt": "a", "stream_options": {})"), "stream_options"));
  EXPECT_TRUE(
      IsBadRequest(Completion(R"("prompt": "a", "logit_bias": {"5000": 1})"), "logit_bias"));
}

TEST(ResolveMaxTokens, WithoutMaxTokensTheRestOfTheContextIsUsed) {
  auto tokens = resolve_max_tokens(std::nullopt, 100, 2048);
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ(*tokens, 1948);
}

TEST(ResolveMaxTokens, ARequestThatFillsTheContextExactlyFits) {
  auto tokens = resolve_max_tokens(48, 2000, 2048);
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ(*tokens, 48);
}

TEST(ResolveMaxTokens, PromptPlusMaxTokensOverTheContextIsRefusedInOpenAIWords) {
  auto tokens = resolve_max_tokens(100, 2000, 2048);
  ASSERT_TRUE(IsBadRequest(tokens, "messages", "context_length_exceeded"));
  EXPECT_EQ(tokens.error().message,
            "This model's maximum context length is 2048 tokens. However, you requested 2100 "
            "tokens (2000 in the messages, 100 in the completion). Please reduce the length of "
            "the messages or completion.");
  auto huge = resolve_max_tokens(INT32_MAX, 10, 2048, "prompt");
  ASSERT_TRUE(IsBadRequest(huge, "prompt", "context_length_exceeded"));
  EXPECT_NE(huge.error().message.find("you requested 2147483657 tokens (10 in the prompt"),
            std::string::npos);
}

TEST(ResolveMaxTokens, APromptThatFillsTheContextLeavesNoRoom) {
  auto full = resolve_max_tokens(std::nullopt, 2048, 2048, "prompt");
  ASSERT_TRUE(IsBadRequest(full, "prompt", "context_length_exceeded"));
  EXPECT_EQ(full.error().message,
            "This model's maximum context length is 2048 tokens. However, you requested 2048 "
            "tokens in the prompt, which leaves no room for the completion. Please reduce the "
            "length of the prompt.");
  EXPECT_TRUE(
      IsBadRequest(resolve_max_tokens(1, 5000, 2048), "messages", "context_length_exceeded"));
}

}  // namespace
}  // namespace pagoda::server
