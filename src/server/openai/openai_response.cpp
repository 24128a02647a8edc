// Whole responses (chat completion, completion, models) and what every body shares.

#include "server/openai/openai_response.h"

#include <random>
#include <utility>

#include "server/openai/openai_response_parts.h"

namespace pagoda::server {
namespace {

Json finish_reason_json(std::string_view reason) {
  return reason.empty() ? Json(nullptr) : Json(std::string(reason));
}

Json chat_choice_json(const ResponseContext& context, const CompletionChoiceResult& choice) {
  Json message = Json::object();
  message["role"] = "assistant";
  if (choice.tool_calls.empty() || !choice.text.empty()) {
    message["content"] = choice.text;
  } else {
    message["content"] = nullptr;
  }
  if (!choice.tool_calls.empty()) {
    Json calls = Json::array();
    for (const ToolCallResult& call : choice.tool_calls) {
      Json function = Json::object();
      function["name"] = call.name;
      function["arguments"] = call.arguments;
      Json entry = Json::object();
      entry["id"] = call.id;
      entry["type"] = "function";
      entry["function"] = std::move(function);
      calls.push_back(std::move(entry));
    }
    message["tool_calls"] = std::move(calls);
  }
  Json result = Json::object();
  result["index"] = choice.index;
  result["message"] = std::move(message);
  result["logprobs"] =
      context.logprobs ? chat_logprobs_json(choice.logprobs, context.token_text) : Json(nullptr);
  result["finish_reason"] = finish_reason_json(choice.finish_reason);
  return result;
}

Json completion_choice_json(const ResponseContext& context, const CompletionChoiceResult& choice) {
  Json result = Json::object();
  result["text"] = choice.text;
  result["index"] = choice.index;
  int32_t text_offset = 0;
  result["logprobs"] =
      context.logprobs ? completion_logprobs_json(choice.logprobs, context.token_text, text_offset)
                       : Json(nullptr);
  result["finish_reason"] = finish_reason_json(choice.finish_reason);
  return result;
}

Json model_card_json(const ModelCard& model) {
  Json card = Json::object();
  card["id"] = model.id;
  card["object"] = "model";
  card["created"] = model.created;
  card["owned_by"] = model.owned_by;
  card["max_model_len"] = model.max_model_len;
  return card;
}

}  // namespace

std::string dump_json(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json response_envelope(const ResponseContext& context, std::string_view object) {
  Json body = Json::object();
  body["id"] = context.id;
  body["object"] = std::string(object);
  body["created"] = context.created;
  body["model"] = context.model;
  return body;
}

Json usage_json(const Usage& usage) {
  Json details = Json::object();
  details["cached_tokens"] = usage.cached_prompt_tokens;
  Json result = Json::object();
  result["prompt_tokens"] = usage.prompt_tokens;
  result["completion_tokens"] = usage.completion_tokens;
  result["total_tokens"] = int64_t(usage.prompt_tokens) + usage.completion_tokens;
  result["prompt_tokens_details"] = std::move(details);
  return result;
}

std::string response_id(std::string_view prefix, uint64_t random_high, uint64_t random_low) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(prefix);
  for (const uint64_t word : {random_high, random_low}) {
    for (int shift = 60; shift >= 0; shift -= 4) id += kHex[(word >> shift) & 0xF];
  }
  return id;
}

std::string random_response_id(std::string_view prefix) {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  const uint64_t high = generator();
  return response_id(prefix, high, generator());
}

std::string chat_completion_body(const ResponseContext& context,
                                 std::span<const CompletionChoiceResult> choices,
                                 const Usage& usage) {
  Json body = response_envelope(context, "chat.completion");
  body["system_fingerprint"] = nullptr;
  Json list = Json::array();
  for (const CompletionChoiceResult& choice : choices)
    list.push_back(chat_choice_json(context, choice));
  body["choices"] = std::move(list);
  body["usage"] = usage_json(usage);
  return dump_json(body);
}

std::string completion_body(const ResponseContext& context,
                            std::span<const CompletionChoiceResult> choices, const Usage& usage) {
  Json body = response_envelope(context, "text_completion");
  body["system_fingerprint"] = nullptr;
  Json list = Json::array();
  for (const CompletionChoiceResult& choice : choices) {
    list.push_back(completion_choice_json(context, choice));
  }
  body["choices"] = std::move(list);
  body["usage"] = usage_json(usage);
  return dump_json(body);
}

std::string models_body(std::span<const ModelCard> models) {
  Json data = Json::array();
  for (const ModelCard& model : models) data.push_back(model_card_json(model));
  Json body = Json::object();
  body["object"] = "list";
  body["data"] = std::move(data);
  return dump_json(body);
}

std::string model_body(const ModelCard& model) {
  return dump_json(model_card_json(model));
}

}  // namespace pagoda::server
