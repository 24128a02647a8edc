#pragma once
// POST /tokenize and POST /detokenize, as vLLM serves them, and with llama-server's
// field names too, so that clients of either work unchanged:
//
//   /tokenize   {"prompt": "text", "add_special_tokens": true}                 (vLLM)
//           or  {"content": "text", "add_special": false, "with_pieces": false}  (llama-server)
//           or  {"messages": [...], "add_generation_prompt": true, "add_special_tokens": false,
//                "chat_template_kwargs": {...}}        (plus "model", "return_token_strs")
//            -> {"count": 3, "max_model_len": 2048, "tokens": [1, 15043, 29991],
//                "token_strs": null}                   (a list of piece texts when asked)
//   With with_pieces, each token is {"id": 15043, "piece": " Hello"}: the text the token
//   stands for, or its bytes as a list of numbers where they are not valid UTF-8 alone.
//   The defaults follow the field names: "prompt" adds the model's special tokens unless
//   told not to (vLLM), "content" does not unless told to (llama-server).
//   /detokenize {"tokens": [1, 15043]} -> {"prompt": "<s> Hello", "content": "<s> Hello"}
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
  bool with_pieces = false;                    // tokens as {"id", "piece"} objects
};

struct DetokenizeRequest {
  std::string model;
  std::vector<int32_t> tokens;  // checked against the vocabulary
};

ApiResult<TokenizeRequest> parse_tokenize_request(std::string_view body);
ApiResult<DetokenizeRequest> parse_detokenize_request(std::string_view body, int32_t n_vocab);

// `token_strs` null: "token_strs": null; else one text per token (same length as tokens).
// `pieces` non-null: each token's bytes (same length as tokens), and "tokens" lists
// {"id", "piece"} objects.
std::string tokenize_body(std::span<const int32_t> tokens, int32_t max_model_len,
                          const std::vector<std::string>* token_strs = nullptr,
                          const std::vector<std::string>* pieces = nullptr);
// The text under both names, vLLM's "prompt" and llama-server's "content".
std::string detokenize_body(std::string_view prompt);

}  // namespace pagoda::server
