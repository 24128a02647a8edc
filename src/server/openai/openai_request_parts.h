#pragma once
// The pieces the request parsers are made of (internal to the protocol layer): the
// options both endpoints share, chat messages, completion prompts, token ids.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/openai/openai_request.h"
#include "server/openai/openai_request_json.h"

namespace pagoda::server {

// A token id in [0, n_vocab): "Invalid 'prompt[3]': token id 70000 is outside the
// vocabulary (ids 0 to 31999)." otherwise (code invalid_value).
ApiResult<int32_t> read_token_id(const Json& value, const std::string& param, int32_t n_vocab);
// A non-empty array of token ids; elements are named param[i].
ApiResult<std::vector<int32_t>> read_token_ids(const Json& value, const std::string& param,
                                               int32_t n_vocab);

// Reads model, the sampling fields, stop, max_tokens, n, stream and stream_options, user
// and the extensions into `options`; errors go to `reader`.
void read_shared_options(FieldReader& reader, int32_t n_vocab, GenerationOptions& options,
                         std::string& model);
// The engine's own check of the finished sampling parameters, as a 400.
std::optional<ApiError> check_sampling(const GenerationOptions& options, int32_t n_vocab);

// Checks a chat conversation and puts it in the shape templates expect, in place:
// content parts joined into one string, role "developer" renamed "system" (templates
// know system prompts, not developer ones). Errors name the field ("messages[2].role").
std::optional<ApiError> normalize_messages(Json& messages, const std::string& param = "messages");

// The output format fields (response_format, guided_*, grammar, json_schema): at most
// one; errors name the field ("response_format.json_schema.schema").
ApiResult<OutputFormat> read_output_format(const Json& document);

// tools, tool_choice, parallel_tool_calls (chat). Errors name the field
// ("tools[1].function.name", "tool_choice").
ApiResult<ToolsRequest> read_tools(const Json& document);

// prompt: a string, a list of strings, a list of token ids, or a list of lists of ids.
ApiResult<std::vector<PromptInput>> read_prompts(const Json* prompt, int32_t n_vocab);

}  // namespace pagoda::server
