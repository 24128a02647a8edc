#pragma once
// POST /tokenize and POST /detokenize, as vLLM serves them.
//
//   /tokenize   {"prompt": "text", "add_special_tokens": true}
//           or  {"messages": [...], "add_generation_prompt": true, "add_special_tokens": false,
//                "chat_template_kwargs": {...}}        (plus "model", "return_token_strs")
//            -> {"count": 3, "max_model_len": 2048, "tokens": [1, 15043, 29991],
//                "token_strs": null}                   (a list of piece texts when asked)
//   /detokenize {"tokens": [1, 15043]} -> {"prompt": "<s> Hello"}
//
// Same validation rules and error shapes as the completion endpoints (openai_request.h).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/openai/api_error.h"
#include "server/openai/openai_request.h"

namespace pagoda::server {

struct TokenizeRequest {
  std::string model;
  // Exactly one of the two forms: text, or a conversation to render with the chat
  // template first (messages validated and normalised as for chat completions).
  std::optional<std::string> prompt;
  Json messages;  // null unless the chat form
  // Add the model's BOS/EOS as encoding plain text would. Default: true for a prompt,
  // false for messages (the template writes its own special tokens).
  bool add_special_tokens = true;
  bool add_generation_prompt = true;           // chat form only
  Json chat_template_kwargs = Json::object();  // chat form only
  bool return_token_strs = false;              // also list each token's text
};

struct DetokenizeRequest {
  std::string model;
  std::vector<int32_t> tokens;  // checked against the vocabulary
};

ApiResult<TokenizeRequest> parse_tokenize_request(std::string_view body);
ApiResult<DetokenizeRequest> parse_detokenize_request(std::string_view body, int32_t n_vocab);

// `token_strs` null: "token_strs": null; else one text per token (same length as tokens).
std::string tokenize_body(std::span<const int32_t> tokens, int32_t max_model_len,
                          const std::vector<std::string>* token_strs = nullptr);
std::string detokenize_body(std::string_view prompt);

}  // namespace pagoda::server
