// PromptBuilder: chat templates rendered and tokenized with BOS exactly once, template
// errors as 400s on "messages", completion prompts tokenized as `pagoda run` does.
#include "server/service/api_service_prompt.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "gguf/reader.h"
#include "test_data.h"

namespace pagoda::server {
namespace {

const std::string kStories = pagoda::testing::model_path("stories260K.gguf");
const std::string kGpt2 = pagoda::testing::model_path("rand-gpt2-Q8_0.gguf");

tokenizer::Tokenizer load_tokenizer(const std::string& path) {
  Expected<gguf::Reader> reader = gguf::Reader::open(path);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  Expected<tokenizer::Tokenizer> tokenizer = tokenizer::Tokenizer::from_gguf(*reader);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  return std::move(*tokenizer);
}

tokenizer::ChatTemplate parse(std::string_view source) {
  Expected<tokenizer::ChatTemplate> parsed = tokenizer::ChatTemplate::parse(source);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  return std::move(*parsed);
}

Json conversation() {
  return Json::parse(R"([{"role": "system", "content": "Be brief."},
                         {"role": "user", "content": "Once upon a time"}])");
}

long count_of(const std::vector<int32_t>& tokens, int32_t token) {
  return std::count(tokens.begin(), tokens.end(), token);
}

TEST(PromptBuilder, TemplateThatWritesBosGetsItOnce) {
  const tokenizer::Tokenizer tokenizer = load_tokenizer(kStories);
  ASSERT_TRUE(tokenizer.add_bos());
  const PromptBuilder prompts(
      tokenizer, parse("{{ bos_token }}{% for m in messages %}{{ m.role }}: {{ m.content }}\n"
                       "{% endfor %}"));
  const ApiResult<std::string> rendered = prompts.render_chat(conversation(), true, Json::object());
  ASSERT_TRUE(rendered.ok()) << rendered.error().message;
  EXPECT_EQ(*rendered, "<s>system: Be brief.\nuser: Once upon a time\n");
  const std::vector<int32_t> tokens = prompts.tokenize_chat(*rendered);
  ASSERT_FALSE(tokens.empty());
  EXPECT_EQ(tokens.front(), tokenizer.bos());
  EXPECT_EQ(count_of(tokens, tokenizer.bos()), 1);
  EXPECT_EQ(tokens, tokenizer.encode(*rendered, /*add_special=*/false, /*parse_special=*/true));
}

TEST(PromptBuilder, TemplateWithoutBosGetsTheModelsBos) {
  const tokenizer::Tokenizer tokenizer = load_tokenizer(kStories);
  const PromptBuilder prompts(tokenizer,
                              parse("{% for m in messages %}{{ m.content }} {% endfor %}"));
  const ApiResult<std::string> rendered = prompts.render_chat(conversation(), true, Json::object());
  ASSERT_TRUE(rendered.ok());
  std::vector<int32_t> expected = tokenizer.encode(*rendered, false, true);
  expected.insert(expected.begin(), tokenizer.bos());
  EXPECT_EQ(prompts.tokenize_chat(*rendered), expected);
}

TEST(PromptBuilder, ModelWithoutBosGetsNone) {
  PAGODA_SKIP_IF_MISSING(kGpt2);
  const tokenizer::Tokenizer tokenizer = load_tokenizer(kGpt2);
  ASSERT_FALSE(tokenizer.add_bos());
  const PromptBuilder prompts(tokenizer,
                              parse("{% for m in messages %}{{ m.content }}\n{% endfor %}"));
  const ApiResult<std::string> rendered =
      prompts.render_chat(conversation(), false, Json::object());
  ASSERT_TRUE(rendered.ok());
  const std::vector<int32_t> tokens = prompts.tokenize_chat(*rendered);
  EXPECT_EQ(tokens, tokenizer.encode(*rendered, false, true));
  EXPECT_EQ(count_of(tokens, tokenizer.bos()), 0);
}

TEST(PromptBuilder, CompletionPromptsAreTokenizedAsPagodaRun) {
  const tokenizer::Tokenizer tokenizer = load_tokenizer(kStories);
  const PromptBuilder prompts(tokenizer, parse("{{ messages }}"));
  EXPECT_EQ(prompts.tokenize_text("Once upon a time"),
            tokenizer.encode("Once upon a time", /*add_special=*/true, /*parse_special=*/true));
  EXPECT_EQ(prompts.tokenize_text("Once", /*add_special=*/false),
            tokenizer.encode("Once", false, true));
  const std::vector<int32_t> ids = tokenizer.encode("Once upon a time", false, true);
  EXPECT_EQ(prompts.prompt_text(PromptInput(ids)), tokenizer.decode(ids));
  EXPECT_EQ(prompts.prompt_text(PromptInput(std::string("as given"))), "as given");
}

TEST(PromptBuilder, TemplateErrorsAre400sOnMessages) {
  const tokenizer::Tokenizer tokenizer = load_tokenizer(kStories);
  const PromptBuilder prompts(
      tokenizer, parse("{% if messages[0].role == 'system' %}{{ raise_exception('System role "
                       "not supported') }}{% endif %}"));
  const ApiResult<std::string> rendered = prompts.render_chat(conversation(), true, Json::object());
  ASSERT_FALSE(rendered.ok());
  EXPECT_EQ(rendered.error().status, 400);
  EXPECT_EQ(rendered.error().param, "messages");
  EXPECT_NE(rendered.error().message.find("System role not supported"), std::string::npos)
      << rendered.error().message;
}

TEST(PromptBuilder, TemplateKwargsAreVariablesButCannotReplaceTheConversation) {
  const tokenizer::Tokenizer tokenizer = load_tokenizer(kStories);
  const PromptBuilder prompts(
      tokenizer,
      parse("{{ enable_thinking }} {{ messages | length }} {{ add_generation_prompt }}"));
  const Json kwargs =
      Json::parse(R"({"enable_thinking": false, "messages": [], "add_generation_prompt": false})");
  const ApiResult<std::string> rendered = prompts.render_chat(conversation(), true, kwargs);
  ASSERT_TRUE(rendered.ok()) << rendered.error().message;
  EXPECT_EQ(*rendered, "False 2 True");
}

}  // namespace
}  // namespace pagoda::server
