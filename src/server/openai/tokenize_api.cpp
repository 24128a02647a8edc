#include "server/openai/tokenize_api.h"

#include <utility>

#include "core/unicode.h"

#include "server/openai/openai_request_parts.h"
#include "server/openai/openai_response_parts.h"

namespace pagoda::server {

ApiResult<TokenizeRequest> parse_tokenize_request(std::string_view body) {
  ApiResult<Json> document = parse_json_object(body);
  if (!document.ok()) return std::move(document).error();
  TokenizeRequest request;
  FieldReader reader(*document);
  request.model = reader.string("model").value_or("");
  request.prompt = reader.string("prompt");
  std::optional<std::string> content = reader.string("content");
  if (!reader.ok()) return reader.take_error();
  if (content && request.prompt) {
    return invalid_value("content", "Give either 'prompt' or 'content', not both.");
  }
  const bool llama_server_names = content.has_value();
  if (content) request.prompt = std::move(content);

  const bool chat = reader.find("messages") != nullptr;
  if (chat && request.prompt) {
    return invalid_value("messages", "Give either 'prompt' or 'messages', not both.");
  }
  if (!chat && !request.prompt) return missing_parameter("prompt");
  if (chat) {
    request.messages = std::move((*document)["messages"]);
    if (auto error = normalize_messages(request.messages)) return std::move(*error);
    request.add_generation_prompt = reader.boolean("add_generation_prompt").value_or(true);
    if (const Json* kwargs = reader.object("chat_template_kwargs")) {
      request.chat_template_kwargs = *kwargs;
    }
  }
  // The chat template writes its own special tokens; plain text gets the model's, except
  // under llama-server's names, whose default is none.
  const std::optional<bool> add_special_tokens = reader.boolean("add_special_tokens");
  const std::optional<bool> add_special = reader.boolean("add_special");
  if (add_special_tokens && add_special) {
    return invalid_value("add_special",
                         "Give either 'add_special_tokens' or 'add_special', not both.");
  }
  request.add_special_tokens =
      add_special_tokens.value_or(add_special.value_or(!chat && !llama_server_names));
  request.return_token_strs = reader.boolean("return_token_strs").value_or(false);
  request.with_pieces = reader.boolean("with_pieces").value_or(false);
  if (!reader.ok()) return reader.take_error();
  return request;
}

ApiResult<DetokenizeRequest> parse_detokenize_request(std::string_view body, int32_t n_vocab) {
  ApiResult<Json> document = parse_json_object(body);
  if (!document.ok()) return std::move(document).error();
  DetokenizeRequest request;
  FieldReader reader(*document);
  request.model = reader.string("model").value_or("");
  const Json* tokens = reader.array("tokens");
  if (!reader.ok()) return reader.take_error();
  if (tokens == nullptr) return missing_parameter("tokens");
  request.tokens.reserve(tokens->size());
  for (size_t i = 0; i < tokens->size(); ++i) {
    ApiResult<int32_t> id =
        read_token_id((*tokens)[i], "tokens[" + std::to_string(i) + "]", n_vocab);
    if (!id.ok()) return std::move(id).error();
    request.tokens.push_back(*id);
  }
  return request;
}

namespace {

bool is_valid_utf8(std::string_view text) {
  while (!text.empty()) {
    const int n = utf8_validate_one(text);
    if (n <= 0) return false;
    text.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// {"id": 15043, "piece": " Hello"}, or the piece's bytes as numbers when they are not
// UTF-8 on their own (a token holding part of a character).
Json token_with_piece(int32_t id, const std::string& piece) {
  Json token = Json::object();
  token["id"] = id;
  token["piece"] = is_valid_utf8(piece) ? Json(piece) : bytes_json(piece);
  return token;
}

}  // namespace

std::string tokenize_body(std::span<const int32_t> tokens, int32_t max_model_len,
                          const std::vector<std::string>* token_strs,
                          const std::vector<std::string>* pieces) {
  Json body = Json::object();
  body["count"] = tokens.size();
  body["max_model_len"] = max_model_len;
  if (pieces != nullptr) {
    Json list = Json::array();
    for (size_t i = 0; i < tokens.size(); ++i) list.push_back(token_with_piece(tokens[i], (*pieces)[i]));
    body["tokens"] = std::move(list);
  } else {
    body["tokens"] = Json(std::vector<int32_t>(tokens.begin(), tokens.end()));
  }
  body["token_strs"] = token_strs ? Json(*token_strs) : Json(nullptr);
  return dump_json(body);
}

std::string detokenize_body(std::string_view prompt) {
  Json body = Json::object();
  body["prompt"] = std::string(prompt);
  body["content"] = std::string(prompt);
  return dump_json(body);
}

}  // namespace pagoda::server
