#include "tokenizer/chat_template.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "jinja/json.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::tokenizer {

const std::string_view kChatMLTemplate =
    "{%- for message in messages %}\n"
    "    {{- '<|im_start|>' + message['role'] + '\\n' }}\n"
    "    {%- if message['content'] is string %}\n"
    "        {{- message['content'] }}\n"
    "    {%- elif message['content'] is iterable %}\n"
    "        {%- for part in message['content'] if part['type'] == 'text' %}\n"
    "            {{- part['text'] }}\n"
    "        {%- endfor %}\n"
    "    {%- endif %}\n"
    "    {{- '<|im_end|>\\n' }}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|im_start|>assistant\\n' }}\n"
    "{%- endif %}\n";

nlohmann::ordered_json to_json(std::span<const ChatMessage> messages) {
  nlohmann::ordered_json array = nlohmann::ordered_json::array();
  for (const ChatMessage& message : messages) {
    nlohmann::ordered_json object = nlohmann::ordered_json::object();
    object["role"] = message.role;
    object["content"] =
        message.content ? nlohmann::ordered_json(*message.content) : nlohmann::ordered_json();
    if (message.name) object["name"] = *message.name;
    if (!message.tool_calls.is_null()) object["tool_calls"] = message.tool_calls;
    if (message.tool_call_id) object["tool_call_id"] = *message.tool_call_id;
    array.push_back(std::move(object));
  }
  return array;
}

Expected<ChatTemplate> ChatTemplate::parse(std::string_view source) {
  PAGODA_ASSIGN_OR_RETURN(jinja::Template tmpl, jinja::Template::parse(source));
  return ChatTemplate(std::string(source), std::move(tmpl));
}

Expected<std::string> ChatTemplate::render(const nlohmann::ordered_json& messages,
                                           bool add_generation_prompt,
                                           const nlohmann::ordered_json& extra,
                                           const ChatRenderOptions& options) const {
  if (!messages.is_array()) return invalid_argument("chat template: messages must be a JSON array");
  for (const auto& message : messages) {
    if (!message.is_object())
      return invalid_argument("chat template: each message must be a JSON object");
  }
  if (!extra.is_object() && !extra.is_null()) {
    return invalid_argument("chat template: extra variables must be a JSON object");
  }
  std::vector<std::pair<std::string, jinja::Value>> variables;
  PAGODA_ASSIGN_OR_RETURN(jinja::Value messages_value, jinja::from_json(messages));
  variables.emplace_back("messages", std::move(messages_value));
  variables.emplace_back("add_generation_prompt", jinja::Value(add_generation_prompt));
  // transformers always passes these two, None when the caller has none.
  variables.emplace_back("tools", jinja::Value(jinja::None{}));
  variables.emplace_back("documents", jinja::Value(jinja::None{}));
  if (extra.is_object()) {
    for (const auto& item : extra.items()) {
      const std::string& key = item.key();
      PAGODA_ASSIGN_OR_RETURN(jinja::Value converted, jinja::from_json(item.value()));
      auto existing = std::find_if(variables.begin(), variables.end(),
                                   [&](const auto& v) { return v.first == key; });
      if (existing != variables.end()) {
        existing->second = std::move(converted);
      } else {
        variables.emplace_back(key, std::move(converted));
      }
    }
  }
  jinja::RenderOptions render_options;
  render_options.limits = options.limits;
  render_options.now = options.now;
  return template_.render(variables, render_options);
}

Expected<std::string> ChatTemplate::render(std::span<const ChatMessage> messages,
                                           bool add_generation_prompt,
                                           const nlohmann::ordered_json& extra,
                                           const ChatRenderOptions& options) const {
  return render(to_json(messages), add_generation_prompt, extra, options);
}

Expected<ChatTemplateChoice> chat_template_for_model(const gguf::Reader& reader,
                                                     std::string_view name) {
  const std::string key =
      name.empty() ? "tokenizer.chat_template" : "tokenizer.chat_template." + std::string(name);
  if (reader.has(key)) {
    PAGODA_ASSIGN_OR_RETURN(std::string source, reader.get<std::string>(key));
    return ChatTemplateChoice{std::move(source), key, false};
  }
  if (!name.empty())
    return not_found(reader.name() + ": no chat template named '" + std::string(name) + "' (" +
                     key + ")");
  spdlog::warn("{}: no chat template in the model (tokenizer.chat_template): using the {} default",
               reader.name(), kChatMLTemplateName);
  return ChatTemplateChoice{std::string(kChatMLTemplate), std::string(kChatMLTemplateName), true};
}

nlohmann::ordered_json special_token_variables(const Tokenizer& tokenizer) {
  nlohmann::ordered_json variables = nlohmann::ordered_json::object();
  if (tokenizer.bos() != kNoToken)
    variables["bos_token"] = std::string(tokenizer.token_text(tokenizer.bos()));
  if (tokenizer.eos() != kNoToken)
    variables["eos_token"] = std::string(tokenizer.token_text(tokenizer.eos()));
  return variables;
}

}  // namespace pagoda::tokenizer
