#pragma once
// OpenAI response bodies, exactly as OpenAI shapes them (and vLLM where OpenAI says
// nothing), for whole responses and for the payloads of server-sent events.
//
// Chat completion (whole):
//   {"id":"chatcmpl-..","object":"chat.completion","created":1700000000,"model":"m",
//    "choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"logprobs":null,
//                "finish_reason":"stop"}],
//    "usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11,
//             "prompt_tokens_details":{"cached_tokens":0}},
//    "system_fingerprint":null}
// Chat stream, per choice: a role chunk (delta {"role":"assistant","content":""}), content
// chunks (delta {"content":".."}, with logprobs when asked), a finish chunk (delta {} and
// the finish reason); then, when stream_options.include_usage is set, one usage chunk
// with "choices": [] (and every other chunk carries "usage": null). Chunks have no
// system_fingerprint (as vLLM). The transport writes `data: <payload>` and `data: [DONE]`.
// Completions (object "text_completion") have the same envelope, choices
// {"text","index","logprobs","finish_reason"}, and logprobs
//   {"tokens":[..],"token_logprobs":[..],"top_logprobs":[{"<token>":logprob,..}],
//    "text_offset":[..]}   (offsets in code points of the choice's text, as OpenAI's).
// Chat logprobs: {"content":[{"token":"Hi","logprob":-0.1,"bytes":[72,105],
//                             "top_logprobs":[{"token":..,"logprob":..,"bytes":[..]}]}]}.
//
// Tool calls (chat): message {"role":"assistant","content":null,"tool_calls":[{"id":"call_..",
// "type":"function","function":{"name":"f","arguments":"{\"a\": 1}"}}]} (content null when
// the answer is only calls), finish_reason "tool_calls". Streamed, a call comes as
// delta {"tool_calls":[{"index":0,"id":"call_..","type":"function","function":{"name":"f",
// "arguments":""}}]} and then deltas {"tool_calls":[{"index":0,"function":{"arguments":".."}}]}.
//
// finish_reason is "stop", "length", "tool_calls", or "abort" for a request ended from outside (the
// client left, the server shut down, the engine failed it), as vLLM sends it.
// Log-probabilities of -inf are written as -9999.0 (JSON has no infinity; vLLM's value).
// Text that is not valid UTF-8 (a token that is part of a character) is written with
// U+FFFD in its place; `bytes` keeps the exact bytes. Nothing here throws.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/request_output.h"

namespace pagoda::server {

// A token id -> its text (the tokenizer's piece, possibly part of a UTF-8 character).
using TokenText = std::function<std::string(int32_t token)>;

// What every body and chunk of one request shares.
struct ResponseContext {
  std::string id;              // "chatcmpl-<32 hex>" / "cmpl-<32 hex>" (see random_response_id)
  int64_t created = 0;         // unix seconds, the same in every chunk
  std::string model;           // the served model's name
  bool logprobs = false;       // the request asked for log-probabilities (else "logprobs": null)
  bool include_usage = false;  // streaming with stream_options.include_usage
  TokenText token_text;        // needed only when `logprobs`
};

// One function call the model made (OpenAI's message.tool_calls[i]).
struct ToolCallResult {
  std::string id;         // "call_<24 letters and digits>"
  std::string name;       // function.name
  std::string arguments;  // function.arguments: JSON text
};

// One piece of a streamed call (delta.tool_calls[0]). The first piece of a call has its
// id and name (and arguments ""); later pieces have only arguments.
struct ToolCallChunk {
  int call_index = 0;  // the call's place in the choice's calls
  std::string id;      // first piece only ("" otherwise)
  std::string name;    // first piece only
  std::string arguments;
};

// The outcome of one choice.
struct CompletionChoiceResult {
  int index = 0;
  std::string text;           // chat: the message content; completions: the text (with
                              // echo, the prompt's text first)
  std::string finish_reason;  // "stop" | "length" | "abort"
  std::vector<engine::TokenLogprobs> logprobs;  // one per generated token, when asked
  std::vector<int32_t> tokens;                  // the generated token ids
  // chat: the calls the model made; with calls, an empty `text` is written as null.
  std::vector<ToolCallResult> tool_calls;
};

struct Usage {
  int32_t prompt_tokens = 0;         // counted once per prompt, whatever n is
  int32_t completion_tokens = 0;     // over all choices
  int32_t cached_prompt_tokens = 0;  // prompt tokens found in the prefix cache
};

// "chatcmpl-" + 32 lowercase hex digits of `random_high`, `random_low`.
std::string response_id(std::string_view prefix, uint64_t random_high, uint64_t random_low);
// The same with fresh random bits (a thread-local generator seeded from std::random_device).
std::string random_response_id(std::string_view prefix);

// Whole responses.
std::string chat_completion_body(const ResponseContext& context,
                                 std::span<const CompletionChoiceResult> choices,
                                 const Usage& usage);
std::string completion_body(const ResponseContext& context,
                            std::span<const CompletionChoiceResult> choices, const Usage& usage);

// Chat streaming payloads (the JSON of one `data:` line).
std::string chat_role_chunk(const ResponseContext& context, int index);
std::string chat_content_chunk(const ResponseContext& context, int index, std::string_view text,
                               std::span<const engine::TokenLogprobs> logprobs = {});
std::string chat_tool_call_chunk(const ResponseContext& context, int index,
                                 const ToolCallChunk& call);
std::string chat_finish_chunk(const ResponseContext& context, int index,
                              std::string_view finish_reason);
std::string chat_usage_chunk(const ResponseContext& context, const Usage& usage);

// Completions streaming payloads. `text_offset` (per choice, 0 at the start) is where
// the next token's text starts, in code points of the choice's text: the chunk's
// logprobs offsets start there, and it is advanced past the text of every token whose
// logprobs the chunk carries.
std::string completion_text_chunk(const ResponseContext& context, int index, std::string_view text,
                                  std::span<const engine::TokenLogprobs> logprobs,
                                  int32_t& text_offset);
std::string completion_finish_chunk(const ResponseContext& context, int index,
                                    std::string_view finish_reason);
std::string completion_usage_chunk(const ResponseContext& context, const Usage& usage);

// GET /v1/models and /v1/models/{id}.
struct ModelCard {
  std::string id;
  int64_t created = 0;  // unix seconds
  std::string owned_by = "pagoda";
  int32_t max_model_len = 0;  // vLLM's extension: the context length
};
// {"object":"list","data":[{"id":..,"object":"model","created":..,"owned_by":..,
//  "max_model_len":..}]}
std::string models_body(std::span<const ModelCard> models);
std::string model_body(const ModelCard& model);

// Number of code points in UTF-8 text (bytes that are not continuation bytes).
int32_t utf8_length(std::string_view text);

}  // namespace pagoda::server
