#include "server/service/api_service_prompt.h"

#include <utility>
#include <variant>

namespace pagoda::server {
namespace {

// Template variables a client may not override through chat_template_kwargs: the
// conversation itself is passed by the service.
bool is_reserved_variable(std::string_view name) {
  return name == "messages" || name == "add_generation_prompt";
}

}  // namespace

PromptBuilder::PromptBuilder(const tokenizer::Tokenizer& tokenizer,
                             tokenizer::ChatTemplate chat_template)
    : tokenizer_(&tokenizer),
      template_(std::move(chat_template)),
      special_tokens_(tokenizer::special_token_variables(tokenizer)),
      tool_family_(tools::detect_tool_family(template_.source())) {}

ApiResult<std::string> PromptBuilder::render_chat(const Json& messages, bool add_generation_prompt,
                                                  const Json& template_kwargs) const {
  Json extra = special_tokens_;
  if (template_kwargs.is_object()) {
    for (const auto& [name, value] : template_kwargs.items()) {
      if (!is_reserved_variable(name)) extra[name] = value;
    }
  }
  Expected<std::string> rendered = template_.render(messages, add_generation_prompt, extra);
  if (!rendered) {
    return bad_request("the chat template failed on these messages: " + rendered.status().message(),
                       "messages");
  }
  return std::move(*rendered);
}

std::vector<int32_t> PromptBuilder::tokenize_chat(std::string_view rendered) const {
  std::vector<int32_t> tokens =
      tokenizer_->encode(rendered, /*add_special=*/false, /*parse_special=*/true);
  const int32_t bos = tokenizer_->bos();
  if (tokenizer_->add_bos() && bos >= 0 && (tokens.empty() || tokens.front() != bos)) {
    tokens.insert(tokens.begin(), bos);
  }
  return tokens;
}

std::vector<int32_t> PromptBuilder::tokenize_text(std::string_view text, bool add_special) const {
  return tokenizer_->encode(text, add_special, /*parse_special=*/true);
}

std::string PromptBuilder::prompt_text(const PromptInput& prompt) const {
  if (const auto* text = std::get_if<std::string>(&prompt)) return *text;
  return tokenizer_->decode(std::get<std::vector<int32_t>>(prompt));
}

}  // namespace pagoda::server
