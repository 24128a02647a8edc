#pragma once
// OpenAI request bodies -> validated plain structs, for POST /v1/chat/completions and
// POST /v1/completions. Field rules are OpenAI's (and vLLM's for the extensions top_k,
// min_p, repetition_penalty, ignore_eos):
//   temperature [0, 2] (0 = greedy)   top_p (0, 1]           n [1, 128]
//   presence_penalty, frequency_penalty [-2, 2]              logit_bias {"<token id>": [-100, 100]}
//   logprobs: bool (chat) with top_logprobs [0, 20]; an integer [0, 5] (completions; null = off)
//   stop: a string or up to 4 non-empty strings              seed: any 64-bit signed integer
//   max_tokens, max_completion_tokens >= 1 (chat: max_completion_tokens wins)
//   top_k (-1 or 0 = off), min_p [0, 1], repetition_penalty > 0, ignore_eos
//   stream, stream_options.include_usage (stream_options only with stream = true)
//   output format, at most one of (a second is a 400 naming it):
//     response_format {"type": "text" | "json_object" | "json_schema", "json_schema":
//       {"name", "schema", "strict", "description"}}, vLLM's guided_json (a schema),
//     guided_regex, guided_choice (non-empty strings), guided_grammar (GBNF), and
//     llama-server's grammar (GBNF) and json_schema
//   chat only: tools [{"type": "function", "function": {"name", "description",
//     "parameters", "strict"}}] (names ^[a-zA-Z0-9_-]{1,64}$, unique), tool_choice
//     "none" | "auto" | "required" | {"type": "function", "function": {"name"}},
//     parallel_tool_calls (default true)
// A field that is absent or null takes its default. Unknown fields are ignored. A field
// of the wrong type or out of range is a 400 whose `param` names it, with OpenAI's
// message and code ("Invalid 'temperature': decimal above maximum value. Expected a value
// <= 2, but got 3 instead.", param "temperature", code "decimal_above_max_value").
// Bodies that are not JSON, not an object, or nested deeper than kMaxJsonDepth are 400s.
//
// Pure functions of their input; nothing throws.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/sampling_params.h"
#include "engine/stop_checker.h"
#include "server/openai/api_error.h"

namespace pagoda::server {

using Json = nlohmann::ordered_json;  // keeps the client's key order (chat templates show it)

// Arrays and objects nested deeper than this are refused (a guard for every recursive
// walk over the document later: templates, tojson, copies).
constexpr int kMaxJsonDepth = 64;

constexpr int32_t kMaxChoices = 128;           // n
constexpr int32_t kMaxTopLogprobs = 20;        // chat top_logprobs
constexpr int32_t kMaxCompletionLogprobs = 5;  // completions logprobs
constexpr int kMaxStopStrings = 4;

// What both endpoints share, validated and already in the engine's terms.
struct GenerationOptions {
  // temperature (default 1; 0 = greedy), top_p, top_k, min_p, repetition_penalty,
  // presence/frequency penalties, logit_bias (client order), seed (a negative seed s
  // becomes uint64(s), two's complement), logprobs / top_logprobs.
  engine::SamplingParams sampling;
  // stop_strings, ignore_eog (= ignore_eos). max_tokens is the request's value when it
  // gave one; otherwise it is left at the engine's default until resolve_max_tokens().
  engine::StopConditions stop;
  std::optional<int32_t> max_tokens;  // as given (chat: max_completion_tokens wins)
  int32_t n = 1;                      // completions per prompt (the service caps it further)
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool echo = false;           // completions only: the prompt text comes before the output
  std::string user;
  // vLLM's `priority`: lower values are scheduled first and preempted last (default 0).
  // Any 32-bit integer parses; the service bounds how far ahead a request may ask to go.
  int32_t priority = 0;
  // `speculative: false` keeps the engine from speculating for this request (when the
  // server speculates); the output is the same either way.
  bool speculative = true;
};

// How the output is constrained (see docs in the header's top comment). `param` is the
// request field it came from, which names it in the errors of the grammar converters
// ("response_format.json_schema.schema", "guided_json", "guided_grammar", ...).
struct TextFormat {};                  // free text: no constraint
struct JsonObjectFormat {              // any JSON object (response_format json_object)
  std::string param;
};
struct JsonSchemaFormat {              // JSON matching `schema`
  Json schema;                         // an object, or true (any JSON value)
  std::string name;                    // response_format.json_schema.name ("" otherwise)
  std::string description;
  bool strict = false;
  std::string param;
};
struct RegexFormat {                   // text matching a regular expression
  std::string pattern;
  std::string param;
};
struct ChoiceFormat {                  // exactly one of the strings
  std::vector<std::string> choices;    // >= 1, each non-empty
  std::string param;
};
struct GrammarFormat {                 // a sentence of a GBNF grammar (root rule "root")
  std::string gbnf;
  std::string param;
};
using OutputFormat = std::variant<TextFormat, JsonObjectFormat, JsonSchemaFormat, RegexFormat,
                                  ChoiceFormat, GrammarFormat>;

// One function the model may call (tools[i].function).
struct ToolFunction {
  std::string name;         // ^[a-zA-Z0-9_-]{1,64}$, unique in the request
  std::string description;  // "" when absent
  Json parameters;          // a JSON Schema object; {"type":"object","properties":{}} when absent
  bool strict = false;
};

enum class ToolChoice {
  kNone,      // no call: the tools are shown to the model (the template), never called
  kAuto,      // text, or calls
  kRequired,  // one call or more
  kFunction,  // one call of ToolsRequest::forced_function
};

struct ToolsRequest {
  std::vector<ToolFunction> functions;  // tools[i].function, in the client's order
  Json tools = Json::array();  // the client's list, as chat templates take it (`tools`)
  ToolChoice choice = ToolChoice::kNone;  // default: kAuto with tools, kNone without
  std::string forced_function;            // kFunction: the function's name
  bool parallel_tool_calls = true;

  bool empty() const { return functions.empty(); }
  // Whether the model's output may hold calls (to parse and constrain).
  bool may_call() const { return !functions.empty() && choice != ToolChoice::kNone; }
};

struct ChatCompletionRequest {
  std::string model;  // empty when the client named none
  // A non-empty array of message objects, the client's keys in the client's order, with
  // role one of system, developer, user, assistant, tool, and content a string (a list
  // of text parts is joined into one string, parts separated by "\n") or null (an
  // assistant turn of tool calls). Ready for ChatTemplate::render.
  Json messages;
  GenerationOptions options;
  bool add_generation_prompt = true;
  Json chat_template_kwargs = Json::object();  // extra template variables (an object)
  OutputFormat format;                         // TextFormat unless asked
  ToolsRequest tools;
};

// One prompt: text, or token ids already checked against the vocabulary.
using PromptInput = std::variant<std::string, std::vector<int32_t>>;

struct CompletionRequest {
  std::string model;
  std::vector<PromptInput> prompts;  // >= 1; choice i*n + j is completion j of prompt i
  GenerationOptions options;
  OutputFormat format;  // TextFormat unless asked
};

// n_vocab bounds token ids in prompts and logit_bias keys (and top_logprobs).
ApiResult<ChatCompletionRequest> parse_chat_completion_request(std::string_view body,
                                                               int32_t n_vocab);
ApiResult<CompletionRequest> parse_completion_request(std::string_view body, int32_t n_vocab);

// The number of tokens to generate for a prompt of `prompt_tokens` in a context of
// `max_model_len`: the request's max_tokens, or all that is left of the context when it
// gave none. 400 (code "context_length_exceeded", param `prompt_param`) when the prompt
// alone fills the context, or prompt + max_tokens is over it:
//   "This model's maximum context length is 2048 tokens. However, you requested 2100
//    tokens (2000 in the messages, 100 in the completion). Please reduce the length of
//    the messages or completion."
// `prompt_param` is "messages" (chat) or "prompt" (completions), and names the prompt in
// the message too.
ApiResult<int32_t> resolve_max_tokens(std::optional<int32_t> max_tokens, int32_t prompt_tokens,
                                      int32_t max_model_len,
                                      std::string_view prompt_param = "messages");

}  // namespace pagoda::server
