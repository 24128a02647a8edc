#pragma once
// Chat templates: a conversation -> the prompt text a model was trained on, by
// rendering the model's own `tokenizer.chat_template` (Jinja) with our interpreter,
// exactly as Hugging Face transformers' apply_chat_template renders it.
//
//   PAGODA_ASSIGN_OR_RETURN(auto choice, tokenizer::chat_template_for_model(reader));  // logs
//   which PAGODA_ASSIGN_OR_RETURN(auto tmpl, tokenizer::ChatTemplate::parse(choice.source));
//   nlohmann::ordered_json extra = tokenizer::special_token_variables(tokenizer);
//   PAGODA_ASSIGN_OR_RETURN(std::string prompt, tmpl.render(messages,
//   /*add_generation_prompt=*/true, extra));
//
// Messages are JSON objects as the OpenAI API sends them: "role", "content" (a string,
// null, or a list of parts such as {"type": "text", "text": "..."}), and whatever else
// a template reads ("name", "tool_calls", "tool_call_id"). Objects keep their key
// order, which tojson shows: parse requests with nlohmann::ordered_json to keep the
// client's order, as Python's json module does.

#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "gguf/reader.h"
#include "jinja/template.h"

namespace pagoda::tokenizer {

class Tokenizer;

// The template of a model that ships none: ChatML (<|im_start|>role\ncontent<|im_end|>).
// Content given as a list of parts contributes its text parts.
extern const std::string_view kChatMLTemplate;
constexpr std::string_view kChatMLTemplateName = "ChatML";

// One message, for callers that build conversations in C++ rather than JSON.
struct ChatMessage {
  std::string role;
  std::optional<std::string> content;  // nullopt: JSON null (an assistant turn of tool calls)
  std::optional<std::string> name;
  nlohmann::ordered_json tool_calls;  // null, or an array of {"type", "function": {...}}
  std::optional<std::string> tool_call_id;
};
nlohmann::ordered_json to_json(std::span<const ChatMessage> messages);

struct ChatRenderOptions {
  jinja::RenderLimits limits;
  std::optional<std::time_t> now;  // what strftime_now() sees; the clock when unset
};

class ChatTemplate {
 public:
  // Errors: "template syntax error, line N: ...".
  static Expected<ChatTemplate> parse(std::string_view source);

  // Renders with the variables transformers passes: messages, add_generation_prompt,
  // tools and documents (None unless `extra` sets them), plus every key of `extra`
  // (bos_token, eos_token, tools, date_string, enable_thinking, ...). Errors: a
  // message from the template's raise_exception() as it is, or "template error, line
  // N: ..."; kInvalidArgument for messages that are not an array of objects or an
  // `extra` that is not an object; kResourceExhausted past a render limit.
  Expected<std::string> render(
      const nlohmann::ordered_json& messages, bool add_generation_prompt,
      const nlohmann::ordered_json& extra = nlohmann::ordered_json::object(),
      const ChatRenderOptions& options = {}) const;
  Expected<std::string> render(
      std::span<const ChatMessage> messages, bool add_generation_prompt,
      const nlohmann::ordered_json& extra = nlohmann::ordered_json::object(),
      const ChatRenderOptions& options = {}) const;

  const std::string& source() const { return source_; }

 private:
  ChatTemplate(std::string source, jinja::Template tmpl)
      : source_(std::move(source)), template_(std::move(tmpl)) {}

  std::string source_;
  jinja::Template template_;
};

// Which template a model renders with, and where it came from.
struct ChatTemplateChoice {
  std::string source;  // the Jinja text
  std::string name;    // "tokenizer.chat_template", "tokenizer.chat_template.tool_use", or "ChatML"
  bool is_default = false;  // the model has none: ChatML
};

// The model's `tokenizer.chat_template` (or, given a name, `tokenizer.chat_template.<name>`);
// without one, ChatML, and a warning in the log saying so. Errors: the key holds
// something other than a string, or the named template does not exist.
Expected<ChatTemplateChoice> chat_template_for_model(const gguf::Reader& reader,
                                                     std::string_view name = {});

// bos_token and eos_token as the template sees them: the text of the vocabulary's BOS
// and EOS tokens (absent when the vocabulary has none).
nlohmann::ordered_json special_token_variables(const Tokenizer& tokenizer);

}  // namespace pagoda::tokenizer
