#pragma once
// The OpenAI side of a benchmark request: the JSON body sent to /v1/completions or
// /v1/chat/completions (streamed, greedy, "ignore_eos" so exactly max_tokens tokens
// come back, usage asked for), and what each streamed chunk says.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "loadgen/bench_prompt.h"

namespace pagoda::loadgen {

enum class ApiKind { kCompletions, kChatCompletions };

// kChatCompletions for a path ending in "chat/completions", else kCompletions.
ApiKind api_kind_of_endpoint(std::string_view endpoint);

// The streaming request body for `prompt` (chat: one user message holding it).
std::string stream_request_body(ApiKind kind, const std::string& model, const BenchPrompt& prompt);

struct TokenUsage {
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
};

// What one server-sent event of the response carries.
struct StreamChunk {
  bool done = false;      // the "[DONE]" sentinel
  size_t text_bytes = 0;  // bytes of generated text in choice 0 (0: a role,
                          // finish or usage chunk)
  std::optional<TokenUsage> usage;
  std::optional<std::string> error;  // an error object in the stream, or unparsable data
};

// Reads the data of one event. Never throws: malformed data comes back as `error`.
StreamChunk parse_stream_event(ApiKind kind, std::string_view data);

// Reads a whole (non-streamed) response body the same way, for servers that ignore
// "stream": the text of choice 0 and the usage.
StreamChunk parse_whole_response(ApiKind kind, std::string_view body);

// The message of an OpenAI error body ({"error": {"message": ...}}, or llama.cpp's
// and others' variants), else the body itself cut to 200 bytes.
std::string error_message_of_body(std::string_view body);

}  // namespace pagoda::loadgen
