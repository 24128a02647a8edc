// The chat template API: rendering conversations, the ChatML default, choosing a
// model's template, and the variables transformers passes.
#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

#include "gguf/reader.h"
#include "test_data.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::tokenizer {
namespace {

using Json = nlohmann::ordered_json;

const std::string kStories = pagoda::testing::model_path("stories260K.gguf");

ChatTemplate chatml() {
  auto tmpl = ChatTemplate::parse(kChatMLTemplate);
  EXPECT_TRUE(tmpl.ok()) << tmpl.status().message();
  return std::move(tmpl).value();
}

TEST(ChatTemplate, ChatMLDefault) {
  const Json messages = Json::parse(R"([{"role": "system", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "image"}, {"type": "text", "text": " there"}]},
      {"role": "assistant", "content": null, "tool_calls": []}])");
  auto text = chatml().render(messages, true);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text,
            "<|im_start|>system\nBe brief.<|im_end|>\n"
            "<|im_start|>user\nHi there<|im_end|>\n"
            "<|im_start|>assistant\n<|im_end|>\n"
            "<|im_start|>assistant\n");
  auto without_prompt = chatml().render(Json::array({{{"role", "user"}, {"content", "x"}}}), false);
  ASSERT_TRUE(without_prompt.ok());
  EXPECT_EQ(*without_prompt, "<|im_start|>user\nx<|im_end|>\n");
}

TEST(ChatTemplate, MessagesFromStructsRenderAsTheirJson) {
  std::vector<ChatMessage> messages(2);
  messages[0].role = "user";
  messages[0].content = "What time is it?";
  messages[1].role = "assistant";
  messages[1].tool_calls =
      Json::parse(R"([{"type": "function", "function": {"name": "now", "arguments": {}}}])");
  auto tmpl = ChatTemplate::parse(
      "{% for m in messages %}{{ m.role }}:{{ m.content }}:{{ m.tool_calls | default(none) | "
      "tojson }};{% endfor %}");
  ASSERT_TRUE(tmpl.ok());
  auto text = tmpl->render(messages, false);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text,
            "user:What time is it?:null;assistant:None:[{\"type\": \"function\", \"function\": "
            "{\"name\": \"now\", \"arguments\": {}}}];");
  EXPECT_EQ(to_json(messages)[0].dump(), R"({"role":"user","content":"What time is it?"})");
}

TEST(ChatTemplate, VariablesAsTransformersPassesThem) {
  auto tmpl = ChatTemplate::parse(
      "{{ tools is none }} {{ documents is none }} {{ add_generation_prompt }} {{ bos_token }} {{ "
      "tools | tojson }}");
  ASSERT_TRUE(tmpl.ok());
  auto defaults = tmpl->render(Json::array(), true);
  ASSERT_TRUE(defaults.ok()) << defaults.status().message();
  EXPECT_EQ(*defaults, "True True True  null");
  // Keys keep the client's order, as tojson shows them.
  const Json extra =
      Json::parse(R"({"bos_token": "<s>", "tools": [{"zeta": 1, "alpha": {"b": 2, "a": 1}}]})");
  auto with_tools = tmpl->render(Json::array(), false, extra);
  ASSERT_TRUE(with_tools.ok()) << with_tools.status().message();
  EXPECT_EQ(*with_tools, "False True False <s> [{\"zeta\": 1, \"alpha\": {\"b\": 2, \"a\": 1}}]");
}

TEST(ChatTemplate, Errors) {
  auto bad = ChatTemplate::parse("{% for m in messages %}");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(
      bad.status().message(),
      "template syntax error, line 1: unexpected end of template: expected 'endfor' or 'else'");

  auto tmpl = ChatTemplate::parse(
      "{% if messages | length > 1 %}{{ raise_exception('Only one message, please.') }}{% endif "
      "%}ok");
  ASSERT_TRUE(tmpl.ok());
  auto raised = tmpl->render(
      Json::parse(R"([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])"), true);
  ASSERT_FALSE(raised.ok());
  EXPECT_EQ(raised.status().message(), "Only one message, please.");
  EXPECT_EQ(tmpl->render(Json::object(), true).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(tmpl->render(Json::array({1}), true).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(tmpl->render(Json::array(), true, Json::array()).status().code(),
            ErrorCode::kInvalidArgument);

  ChatRenderOptions tight;
  tight.limits.max_steps = 1000;
  auto loop = ChatTemplate::parse("{% for i in range(100000) %}{{ i }}{% endfor %}");
  ASSERT_TRUE(loop.ok());
  EXPECT_EQ(loop->render(Json::array(), true, Json::object(), tight).status().code(),
            ErrorCode::kResourceExhausted);
}

TEST(ChatTemplate, ModelWithoutTemplateGetsChatML) {
  auto reader = gguf::Reader::open(kStories);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto choice = chat_template_for_model(*reader);
  ASSERT_TRUE(choice.ok()) << choice.status().message();
  EXPECT_TRUE(choice->is_default);
  EXPECT_EQ(choice->name, "ChatML");
  EXPECT_EQ(choice->source, kChatMLTemplate);
  auto named = chat_template_for_model(*reader, "tool_use");
  ASSERT_FALSE(named.ok());
  EXPECT_EQ(named.status().code(), ErrorCode::kNotFound);
}

TEST(ChatTemplate, SpecialTokenVariables) {
  auto reader = gguf::Reader::open(kStories);
  ASSERT_TRUE(reader.ok());
  auto tokenizer = Tokenizer::from_gguf(*reader);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  EXPECT_EQ(special_token_variables(*tokenizer).dump(),
            R"({"bos_token":"<s>","eos_token":"</s>"})");
}

}  // namespace
}  // namespace pagoda::tokenizer
