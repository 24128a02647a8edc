#pragma once
// Prompts as the engine takes them: a conversation rendered with the model's chat
// template and tokenized, or a completion prompt tokenized, with the model's BOS token
// exactly once.
//
// BOS: a template that writes `{{ bos_token }}` itself already puts the BOS text at the
// start of the rendered prompt, and tokenizing with special tokens parsed turns that
// text into the BOS token. So a rendered conversation is tokenized without adding any
// special token, and BOS is put in front only when the model wants one and the
// template did not write it (what vLLM does with add_special_tokens=False, and llama.cpp's
// server with its double-BOS check). Completion prompts are tokenized as `pagoda run`
// tokenizes a prompt: special tokens added as the vocabulary asks, special text parsed.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/openai/api_error.h"
#include "server/openai/openai_request.h"
#include "server/tools/tool_family.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::server {

class PromptBuilder {
 public:
  // `chat_template` is the template chosen at start (the model's, an override, or ChatML).
  PromptBuilder(const tokenizer::Tokenizer& tokenizer, tokenizer::ChatTemplate chat_template);

  // The prompt text of a conversation (messages as the request parser normalised them).
  // `template_kwargs` become extra template variables (enable_thinking, ...), next to
  // bos_token and eos_token. A template error (raise_exception included) is a 400 on
  // "messages" with the template's message.
  ApiResult<std::string> render_chat(const Json& messages, bool add_generation_prompt,
                                     const Json& template_kwargs) const;

  // A rendered conversation's tokens: special text parsed, BOS once when the model
  // wants it, never EOS.
  std::vector<int32_t> tokenize_chat(std::string_view rendered) const;
  // A completion prompt's tokens (as `pagoda run`); add_special as the vocabulary asks.
  std::vector<int32_t> tokenize_text(std::string_view text, bool add_special = true) const;

  // The text of a prompt given as token ids (for echo): control tokens hidden.
  std::string prompt_text(const PromptInput& prompt) const;

  const tokenizer::Tokenizer& tokenizer() const { return *tokenizer_; }
  // How the template's model writes tool calls (from the template's source).
  tools::ToolFamily tool_family() const { return tool_family_; }

 private:
  const tokenizer::Tokenizer* tokenizer_;
  tokenizer::ChatTemplate template_;
  Json special_tokens_;  // bos_token, eos_token as the template sees them
  tools::ToolFamily tool_family_;
};

}  // namespace pagoda::server
