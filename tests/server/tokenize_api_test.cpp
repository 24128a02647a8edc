// /tokenize and /detokenize bodies, as vLLM and llama-server accept and answer them.

#include "server/openai/tokenize_api.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "openai_test_util.h"

namespace pagoda::server {
namespace {

using testing::IsBadRequest;
using testing::Keys;
using testing::kVocab;
using testing::ParseJson;

TEST(TokenizeApi, APromptAddsSpecialTokensByDefault) {
  auto request = parse_tokenize_request(R"({"model": "m", "prompt": "Hello world"})");
  ASSERT_TRUE(request.ok()) << request.error().message;
  EXPECT_EQ(request->model, "m");
  EXPECT_EQ(request->prompt, std::optional<std::string>("Hello world"));
  EXPECT_TRUE(request->messages.is_null());
  EXPECT_TRUE(request->add_special_tokens);
  EXPECT_FALSE(request->return_token_strs);
  EXPECT_TRUE(parse_tokenize_request(R"({"prompt": ""})").ok());  // nothing to tokenize is fine
}

TEST(TokenizeApi, MessagesLeaveSpecialTokensToTheTemplate) {
  auto request = parse_tokenize_request(R"({"messages": [{"role": "developer",
      "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
      "add_generation_prompt": false, "chat_template_kwargs": {"x": 1},
      "return_token_strs": true})");
  ASSERT_TRUE(request.ok()) << request.error().message;
  EXPECT_FALSE(request->prompt.has_value());
  EXPECT_EQ(request->messages, ParseJson(R"([{"role": "system", "content": "a\nb"}])"));
  EXPECT_FALSE(request->add_special_tokens);
  EXPECT_FALSE(request->add_generation_prompt);
  EXPECT_EQ(request->chat_template_kwargs, ParseJson(R"({"x": 1})"));
  EXPECT_TRUE(request->return_token_strs);
  EXPECT_TRUE(parse_tokenize_request(R"({"messages": [{"role": "user", "content": "a"}],
                                 "add_special_tokens": true})")
                  ->add_special_tokens);
}

TEST(TokenizeApi, ExactlyOneOfPromptAndMessages) {
  EXPECT_TRUE(IsBadRequest(parse_tokenize_request(R"({"model": "m"})"), "prompt",
                           "missing_required_parameter"));
  EXPECT_TRUE(IsBadRequest(
      parse_tokenize_request(R"({"prompt": "a", "messages": [{"role": "user", "content": "b"}]})"),
      "messages", "invalid_value"));
}

TEST(TokenizeApi, FieldsAreCheckedAsForCompletions) {
  EXPECT_TRUE(IsBadRequest(parse_tokenize_request(R"({"prompt": 5})"), "prompt", "invalid_type"));
  EXPECT_TRUE(
      IsBadRequest(parse_tokenize_request(R"({"messages": [{"role": "x", "content": ""}]})"),
                   "messages[0].role", "invalid_value"));
  EXPECT_TRUE(
      IsBadRequest(parse_tokenize_request(R"({"messages": []})"), "messages", "empty_array"));
  EXPECT_TRUE(IsBadRequest(parse_tokenize_request(R"({"prompt": "a", "add_special_tokens": 1})"),
                           "add_special_tokens", "invalid_type"));
  EXPECT_TRUE(IsBadRequest(parse_tokenize_request("{"), ""));
}

TEST(TokenizeApi, DetokenizeTakesTokenIdsOfTheVocabulary) {
  auto request = parse_detokenize_request(R"({"model": "m", "tokens": [1, 999, 0]})", kVocab);
  ASSERT_TRUE(request.ok()) << request.error().message;
  EXPECT_EQ(request->tokens, (std::vector<int32_t>{1, 999, 0}));
  EXPECT_TRUE(parse_detokenize_request(R"({"tokens": []})", kVocab)->tokens.empty());
  EXPECT_TRUE(IsBadRequest(parse_detokenize_request(R"({"tokens": [1, 1000]})", kVocab),
                           "tokens[1]", "invalid_value"));
  EXPECT_TRUE(IsBadRequest(parse_detokenize_request(R"({"tokens": ["a"]})", kVocab), "tokens[0]",
                           "invalid_type"));
  EXPECT_TRUE(IsBadRequest(parse_detokenize_request(R"({"tokens": "1 2"})", kVocab), "tokens",
                           "invalid_type"));
  EXPECT_TRUE(IsBadRequest(parse_detokenize_request(R"({})", kVocab), "tokens",
                           "missing_required_parameter"));
}

TEST(TokenizeApi, ResponsesHaveVllmsShape) {
  const std::vector<int32_t> tokens = {1, 15043, 29991};
  const Json body = ParseJson(tokenize_body(tokens, 2048));
  EXPECT_EQ(body, ParseJson(R"({"count": 3, "max_model_len": 2048, "tokens": [1, 15043, 29991],
                                "token_strs": null})"));
  EXPECT_EQ(Keys(body),
            (std::vector<std::string>{"count", "max_model_len", "tokens", "token_strs"}));
  const std::vector<std::string> strs = {"<s>", "\xe2\x96\x81Hello", "!"};
  EXPECT_EQ(ParseJson(tokenize_body(tokens, 2048, &strs))["token_strs"],
            ParseJson(R"(["<s>", "\u2581Hello", "!"])"));
  EXPECT_EQ(ParseJson(tokenize_body({}, 16)),
            ParseJson(R"({"count": 0, "max_model_len": 16, "tokens": [], "token_strs": null})"));
  EXPECT_EQ(ParseJson(detokenize_body("Hello!")),
            ParseJson(R"({"prompt": "Hello!", "content": "Hello!"})"));
  EXPECT_EQ(ParseJson(detokenize_body("\xe2\x82"))["prompt"], "\xef\xbf\xbd");  // never throws
}

TEST(TokenizeApi, LlamaServersFieldNamesAndDefaults) {
  auto request = parse_tokenize_request(R"({"content": "Hello", "with_pieces": true})");
  ASSERT_TRUE(request.ok()) << request.error().message;
  EXPECT_EQ(request->prompt, std::optional<std::string>("Hello"));
  EXPECT_FALSE(request->add_special_tokens);  // llama-server adds none unless asked
  EXPECT_TRUE(request->with_pieces);
  EXPECT_TRUE(parse_tokenize_request(R"({"content": "a", "add_special": true})")->add_special_tokens);
  EXPECT_FALSE(parse_tokenize_request(R"({"prompt": "a", "add_special": false})")->add_special_tokens);
  EXPECT_FALSE(parse_tokenize_request(R"({"prompt": "a"})")->with_pieces);
  EXPECT_TRUE(IsBadRequest(parse_tokenize_request(R"({"prompt": "a", "content": "b"})"), "content",
                           "invalid_value"));
  EXPECT_TRUE(IsBadRequest(
      parse_tokenize_request(R"({"content": "a", "add_special": true, "add_special_tokens": true})"),
      "add_special", "invalid_value"));
  EXPECT_TRUE(IsBadRequest(parse_tokenize_request(R"({"content": 1})"), "content", "invalid_type"));
  EXPECT_TRUE(IsBadRequest(parse_tokenize_request(R"({"content": "a", "with_pieces": "yes"})"),
                           "with_pieces", "invalid_type"));
}

TEST(TokenizeApi, PiecesAreTextOrBytes) {
  const std::vector<int32_t> tokens = {1, 15043, 300};
  const std::vector<std::string> pieces = {"<s>", " Hello", "\xe2\x82"};  // the last: part of a character
  const Json body = ParseJson(tokenize_body(tokens, 64, nullptr, &pieces));
  EXPECT_EQ(body["tokens"], ParseJson(R"([{"id": 1, "piece": "<s>"}, {"id": 15043, "piece": " Hello"},
                                          {"id": 300, "piece": [226, 130]}])"));
  EXPECT_EQ(body["count"], 3);
}

}  // namespace
}  // namespace pagoda::server
