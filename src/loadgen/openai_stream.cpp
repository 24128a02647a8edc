#include "loadgen/openai_stream.h"

#include <limits>
#include <nlohmann/json.hpp>

namespace pagoda::loadgen {
namespace {

using Json = nlohmann::json;

const Json* member(const Json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

size_t string_bytes(const Json* value) {
  return value != nullptr && value->is_string() ? value->get_ref<const std::string&>().size() : 0;
}

std::optional<int32_t> count_member(const Json& object, const char* key) {
  const Json* value = member(object, key);
  if (value == nullptr || !value->is_number_integer()) return std::nullopt;
  const int64_t count = value->get<int64_t>();
  if (count < 0 || count > std::numeric_limits<int32_t>::max()) return std::nullopt;
  return static_cast<int32_t>(count);
}

std::optional<TokenUsage> usage_of(const Json& response) {
  const Json* usage = member(response, "usage");
  if (usage == nullptr || !usage->is_object()) return std::nullopt;
  const auto prompt = count_member(*usage, "prompt_tokens");
  const auto completion = count_member(*usage, "completion_tokens");
  if (!prompt || !completion) return std::nullopt;
  return TokenUsage{*prompt, *completion};
}

// Bytes of text in choice 0: "text" (completions), or the message / delta "content"
// (chat), with "reasoning_content" for servers that split reasoning from content.
size_t choice_text_bytes(ApiKind kind, const Json& response, const char* chat_field) {
  const Json* choices = member(response, "choices");
  if (choices == nullptr || !choices->is_array() || choices->empty()) return 0;
  const Json& choice = choices->front();
  if (kind == ApiKind::kCompletions) return string_bytes(member(choice, "text"));
  const Json* message = member(choice, chat_field);
  if (message == nullptr) return 0;
  return string_bytes(member(*message, "content")) +
         string_bytes(member(*message, "reasoning_content"));
}

std::string error_text(const Json& error) {
  if (error.is_string()) return error.get<std::string>();
  if (const Json* message = member(error, "message"); message && message->is_string())
    return message->get<std::string>();
  return error.dump();
}

StreamChunk parse_response(ApiKind kind, std::string_view text, const char* chat_field) {
  StreamChunk chunk;
  const Json response = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (response.is_discarded() || !response.is_object()) {
    chunk.error = "unparsable response data: " + std::string(text.substr(0, 200));
    return chunk;
  }
  if (const Json* error = member(response, "error"); error != nullptr && !error->is_null()) {
    chunk.error = error_text(*error);
    return chunk;
  }
  chunk.text_bytes = choice_text_bytes(kind, response, chat_field);
  chunk.usage = usage_of(response);
  return chunk;
}

}  // namespace

ApiKind api_kind_of_endpoint(std::string_view endpoint) {
  while (endpoint.ends_with('/')) endpoint.remove_suffix(1);
  return endpoint.ends_with("chat/completions") ? ApiKind::kChatCompletions : ApiKind::kCompletions;
}

std::string stream_request_body(ApiKind kind, const std::string& model, const BenchPrompt& prompt) {
  Json body = Json::object();
  body["model"] = model;
  if (kind == ApiKind::kChatCompletions)
    body["messages"] = Json::array({Json{{"role", "user"}, {"content", prompt.text}}});
  else
    body["prompt"] = prompt.text;
  body["max_tokens"] = prompt.max_tokens;
  body["temperature"] = 0.0;
  body["ignore_eos"] = true;
  body["stream"] = true;
  body["stream_options"] = Json{{"include_usage", true}};
  // The prompt is ours or the user's file: bad UTF-8 goes out replaced, not thrown.
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

StreamChunk parse_stream_event(ApiKind kind, std::string_view data) {
  if (data == "[DONE]") {
    StreamChunk chunk;
    chunk.done = true;
    return chunk;
  }
  return parse_response(kind, data, "delta");
}

StreamChunk parse_whole_response(ApiKind kind, std::string_view body) {
  return parse_response(kind, body, "message");
}

std::string error_message_of_body(std::string_view body) {
  const Json response = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!response.is_discarded()) {
    for (const char* key : {"error", "message", "detail"}) {
      const Json* value = member(response, key);
      if (value != nullptr && !value->is_null()) return error_text(*value);
    }
  }
  std::string text(body.substr(0, 200));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

}  // namespace pagoda::loadgen
