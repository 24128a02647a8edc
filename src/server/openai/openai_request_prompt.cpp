// Completion prompts and token ids.

#include <utility>

#include "server/openai/openai_request_parts.h"

namespace pagoda::server {
namespace {

std::string element(const std::string& param, size_t i) {
  return param + "[" + std::to_string(i) + "]";
}

ApiResult<std::vector<PromptInput>> read_text_prompts(const Json& list) {
  std::vector<PromptInput> prompts;
  prompts.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    ApiResult<std::string> text = read_string(list[i], element("prompt", i));
    if (!text.ok()) return std::move(text).error();
    if (text->empty()) return empty_string(element("prompt", i));
    prompts.emplace_back(std::move(text).value());
  }
  return prompts;
}

ApiResult<std::vector<PromptInput>> read_token_prompts(const Json& list, int32_t n_vocab) {
  std::vector<PromptInput> prompts;
  prompts.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_array()) {
      return invalid_type(element("prompt", i), "an array of token ids", list[i]);
    }
    ApiResult<std::vector<int32_t>> ids = read_token_ids(list[i], element("prompt", i), n_vocab);
    if (!ids.ok()) return std::move(ids).error();
    prompts.emplace_back(std::move(ids).value());
  }
  return prompts;
}

}  // namespace

ApiResult<int32_t> read_token_id(const Json& value, const std::string& param, int32_t n_vocab) {
  if (!value.is_number()) return invalid_type(param, "an integer", value);
  ApiResult<int64_t> id = read_integer(value, param, {});
  if (!id.ok()) return std::move(id).error();
  if (*id < 0 || *id >= n_vocab) {
    return invalid_value(param, "Invalid '" + param + "': token id " + std::to_string(*id) +
                                    " is outside the vocabulary (ids 0 to " +
                                    std::to_string(int64_t(n_vocab) - 1) + ").");
  }
  return static_cast<int32_t>(*id);
}

ApiResult<std::vector<int32_t>> read_token_ids(const Json& value, const std::string& param,
                                               int32_t n_vocab) {
  if (!value.is_array()) return invalid_type(param, "an array of token ids", value);
  if (value.empty()) return empty_array(param);
  std::vector<int32_t> ids;
  ids.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    ApiResult<int32_t> id = read_token_id(value[i], element(param, i), n_vocab);
    if (!id.ok()) return std::move(id).error();
    ids.push_back(*id);
  }
  return ids;
}

ApiResult<std::vector<PromptInput>> read_prompts(const Json* prompt, int32_t n_vocab) {
  if (prompt == nullptr || prompt->is_null()) return missing_parameter("prompt");
  if (prompt->is_string()) {
    if (prompt->get_ref<const std::string&>().empty()) return empty_string("prompt");
    return std::vector<PromptInput>{prompt->get<std::string>()};
  }
  if (!prompt->is_array()) {
    return invalid_type("prompt", "a string, an array of strings or an array of token ids",
                        *prompt);
  }
  if (prompt->empty()) return empty_array("prompt");
  // The first element says which of the three list forms this is.
  const Json& first = prompt->front();
  if (first.is_string()) return read_text_prompts(*prompt);
  if (first.is_array()) return read_token_prompts(*prompt, n_vocab);
  if (first.is_number()) {
    ApiResult<std::vector<int32_t>> ids = read_token_ids(*prompt, "prompt", n_vocab);
    if (!ids.ok()) return std::move(ids).error();
    return std::vector<PromptInput>{std::move(ids).value()};
  }
  return invalid_type("prompt[0]", "a string, a token id or an array of token ids", first);
}

}  // namespace pagoda::server
