// Chat messages: checked as OpenAI checks them, then normalised for chat templates.

#include <array>
#include <string_view>

#include "server/openai/openai_request_parts.h"

namespace pagoda::server {
namespace {

constexpr std::array<std::string_view, 5> kRoles = {"system", "developer", "user", "assistant",
                                                    "tool"};
// Content part types of other modalities: refused with a clear "not supported".
constexpr std::array<std::string_view, 7> kMediaParts = {
    "image_url", "input_image", "image", "input_audio", "audio_url", "video_url", "file"};

template <size_t N>
bool contains(const std::array<std::string_view, N>& values, std::string_view value) {
  for (std::string_view candidate : values) {
    if (candidate == value) return true;
  }
  return false;
}

std::optional<ApiError> check_role(const Json& message, const std::string& param) {
  const auto role = message.find("role");
  if (role == message.end() || role->is_null()) return missing_parameter(param + ".role");
  if (!role->is_string()) return invalid_type(param + ".role", "a string", *role);
  if (!contains(kRoles, role->get_ref<const std::string&>())) {
    return invalid_value(param + ".role",
                         "Invalid value: '" + role->get<std::string>() +
                             "'. Supported values are: 'system', 'developer', 'user', "
                             "'assistant', and 'tool'.");
  }
  return std::nullopt;
}

// The text of a list of content parts, joined by "\n" (as vLLM flattens them for
// templates that take string content). Only text parts are accepted.
ApiResult<std::string> join_text_parts(const Json& parts, const std::string& param) {
  if (parts.empty()) return empty_array(param);
  std::string text;
  for (size_t j = 0; j < parts.size(); ++j) {
    const Json& part = parts[j];
    const std::string part_param = param + "[" + std::to_string(j) + "]";
    if (!part.is_object()) return invalid_type(part_param, "an object", part);
    const auto type = part.find("type");
    if (type == part.end() || type->is_null()) return missing_parameter(part_param + ".type");
    if (!type->is_string()) return invalid_type(part_param + ".type", "a string", *type);
    const std::string& kind = type->get_ref<const std::string&>();
    if (kind != "text") {
      std::string why = contains(kMediaParts, kind)
                            ? "Content parts of type '" + kind +
                                  "' are not supported: this server runs text-only models."
                            : "Invalid value: '" + kind + "'. Supported values are: 'text'.";
      return invalid_value(part_param + ".type", why);
    }
    const auto part_text = part.find("text");
    if (part_text == part.end() || part_text->is_null()) {
      return missing_parameter(part_param + ".text");
    }
    if (!part_text->is_string()) return invalid_type(part_param + ".text", "a string", *part_text);
    if (j > 0) text += '\n';
    text += part_text->get_ref<const std::string&>();
  }
  return text;
}

bool has_tool_calls(const Json& message) {
  const auto calls = message.find("tool_calls");
  return calls != message.end() && !calls->is_null();
}

// content: a string, a list of text parts (joined in place), or null / absent for an
// assistant turn that calls tools.
std::optional<ApiError> normalize_content(Json& message, const std::string& param) {
  const bool is_assistant = message["role"] == "assistant";
  const auto content = message.find("content");
  if (content == message.end() || content->is_null()) {
    if (is_assistant && has_tool_calls(message)) {
      if (content == message.end()) message["content"] = nullptr;
      return std::nullopt;
    }
    return missing_parameter(param + ".content");
  }
  if (content->is_string()) return std::nullopt;
  if (!content->is_array()) {
    return invalid_type(param + ".content", "a string or an array of content parts", *content);
  }
  ApiResult<std::string> text = join_text_parts(*content, param + ".content");
  if (!text.ok()) return std::move(text).error();
  *content = std::move(text).value();
  return std::nullopt;
}

// tool_calls: [{"id": "..", "type": "function", "function": {"name": "..", "arguments": ..}}]
std::optional<ApiError> check_tool_calls(const Json& message, const std::string& param) {
  if (!has_tool_calls(message)) return std::nullopt;
  const Json& calls = *message.find("tool_calls");
  if (!calls.is_array()) return invalid_type(param, "an array", calls);
  for (size_t k = 0; k < calls.size(); ++k) {
    const std::string call_param = param + "[" + std::to_string(k) + "]";
    if (!calls[k].is_object()) return invalid_type(call_param, "an object", calls[k]);
    const auto function = calls[k].find("function");
    if (function == calls[k].end() || function->is_null()) {
      return missing_parameter(call_param + ".function");
    }
    if (!function->is_object())
      return invalid_type(call_param + ".function", "an object", *function);
    const auto name = function->find("name");
    if (name == function->end() || name->is_null()) {
      return missing_parameter(call_param + ".function.name");
    }
    if (!name->is_string()) return invalid_type(call_param + ".function.name", "a string", *name);
  }
  return std::nullopt;
}

std::optional<ApiError> check_optional_string(const Json& message, const char* key,
                                              const std::string& param) {
  const auto value = message.find(key);
  if (value == message.end() || value->is_null() || value->is_string()) return std::nullopt;
  return invalid_type(param + "." + key, "a string", *value);
}

std::optional<ApiError> normalize_message(Json& message, const std::string& param) {
  if (!message.is_object()) return invalid_type(param, "an object", message);
  if (auto error = check_role(message, param)) return error;
  if (auto error = normalize_content(message, param)) return error;
  if (auto error = check_optional_string(message, "name", param)) return error;
  if (auto error = check_optional_string(message, "tool_call_id", param)) return error;
  if (auto error = check_tool_calls(message, param + ".tool_calls")) return error;
  if (message["role"] == "developer") message["role"] = "system";
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> normalize_messages(Json& messages, const std::string& param) {
  if (messages.is_null()) return missing_parameter(param);
  if (!messages.is_array()) return invalid_type(param, "an array", messages);
  if (messages.empty()) return empty_array(param);
  for (size_t i = 0; i < messages.size(); ++i) {
    if (auto error = normalize_message(messages[i], param + "[" + std::to_string(i) + "]")) {
      return error;
    }
  }
  return std::nullopt;
}

}  // namespace pagoda::server
