// Streaming payloads: one JSON object per server-sent event.

#include <utility>

#include "server/openai/openai_response.h"
#include "server/openai/openai_response_parts.h"

namespace pagoda::server {
namespace {

// A chunk of one choice; with include_usage every chunk but the last says "usage": null.
std::string chunk(const ResponseContext& context, std::string_view object, Json choice) {
  Json body = response_envelope(context, object);
  Json choices = Json::array();
  choices.push_back(std::move(choice));
  body["choices"] = std::move(choices);
  if (context.include_usage) body["usage"] = nullptr;
  return dump_json(body);
}

std::string usage_chunk(const ResponseContext& context, std::string_view object,
                        const Usage& usage) {
  Json body = response_envelope(context, object);
  body["choices"] = Json::array();
  body["usage"] = usage_json(usage);
  return dump_json(body);
}

Json chat_choice(int index, Json delta, Json logprobs, std::string_view finish_reason) {
  Json choice = Json::object();
  choice["index"] = index;
  choice["delta"] = std::move(delta);
  choice["logprobs"] = std::move(logprobs);
  choice["finish_reason"] =
      finish_reason.empty() ? Json(nullptr) : Json(std::string(finish_reason));
  return choice;
}

Json completion_choice(int index, std::string_view text, Json logprobs,
                       std::string_view finish_reason) {
  Json choice = Json::object();
  choice["text"] = std::string(text);
  choice["index"] = index;
  choice["logprobs"] = std::move(logprobs);
  choice["finish_reason"] =
      finish_reason.empty() ? Json(nullptr) : Json(std::string(finish_reason));
  return choice;
}

constexpr std::string_view kChatChunk = "chat.completion.chunk";
constexpr std::string_view kCompletion = "text_completion";

}  // namespace

std::string chat_role_chunk(const ResponseContext& context, int index) {
  Json delta = Json::object();
  delta["role"] = "assistant";
  delta["content"] = "";
  return chunk(context, kChatChunk, chat_choice(index, std::move(delta), nullptr, {}));
}

std::string chat_content_chunk(const ResponseContext& context, int index, std::string_view text,
                               std::span<const engine::TokenLogprobs> logprobs) {
  Json delta = Json::object();
  delta["content"] = std::string(text);
  Json logprobs_json =
      context.logprobs ? chat_logprobs_json(logprobs, context.token_text) : Json(nullptr);
  return chunk(context, kChatChunk,
               chat_choice(index, std::move(delta), std::move(logprobs_json), {}));
}

std::string chat_tool_call_chunk(const ResponseContext& context, int index,
                                 const ToolCallChunk& call) {
  Json function = Json::object();
  if (!call.id.empty()) function["name"] = call.name;
  function["arguments"] = call.arguments;
  Json entry = Json::object();
  entry["index"] = call.call_index;
  if (!call.id.empty()) {
    entry["id"] = call.id;
    entry["type"] = "function";
  }
  entry["function"] = std::move(function);
  Json calls = Json::array();
  calls.push_back(std::move(entry));
  Json delta = Json::object();
  delta["tool_calls"] = std::move(calls);
  return chunk(context, kChatChunk, chat_choice(index, std::move(delta), nullptr, {}));
}

std::string chat_finish_chunk(const ResponseContext& context, int index,
                              std::string_view finish_reason) {
  return chunk(context, kChatChunk, chat_choice(index, Json::object(), nullptr, finish_reason));
}

std::string chat_usage_chunk(const ResponseContext& context, const Usage& usage) {
  return usage_chunk(context, kChatChunk, usage);
}

std::string completion_text_chunk(const ResponseContext& context, int index, std::string_view text,
                                  std::span<const engine::TokenLogprobs> logprobs,
                                  int32_t& text_offset) {
  Json logprobs_json = nullptr;
  if (context.logprobs) {
    logprobs_json = completion_logprobs_json(logprobs, context.token_text, text_offset);
  }
  return chunk(context, kCompletion, completion_choice(index, text, std::move(logprobs_json), {}));
}

std::string completion_finish_chunk(const ResponseContext& context, int index,
                                    std::string_view finish_reason) {
  return chunk(context, kCompletion, completion_choice(index, "", nullptr, finish_reason));
}

std::string completion_usage_chunk(const ResponseContext& context, const Usage& usage) {
  return usage_chunk(context, kCompletion, usage);
}

}  // namespace pagoda::server
