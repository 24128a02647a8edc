#include "server/openai/tokenize_api.h"

#include <utility>

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
  if (!reader.ok()) return reader.take_error();

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
  // The chat template writes its own special tokens; plain text gets the model's.
  request.add_special_tokens = reader.boolean("add_special_tokens").value_or(!chat);
  request.return_token_strs = reader.boolean("return_token_strs").value_or(false);
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

std::string tokenize_body(std::span<const int32_t> tokens, int32_t max_model_len,
                          const std::vector<std::string>* token_strs) {
  Json body = Json::object();
  body["count"] = tokens.size();
  body["max_model_len"] = max_model_len;
  body["tokens"] = Json(std::vector<int32_t>(tokens.begin(), tokens.end()));
  body["token_strs"] = token_strs ? Json(*token_strs) : Json(nullptr);
  return dump_json(body);
}

std::string detokenize_body(std::string_view prompt) {
  Json body = Json::object();
  body["prompt"] = std::string(prompt);
  return dump_json(body);
}

}  // namespace pagoda::server
