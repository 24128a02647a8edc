#pragma once
// The pieces response bodies are made of (internal to the protocol layer).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "server/openai/openai_request.h"
#include "server/openai/openai_response.h"

namespace pagoda::server {

// Compact JSON; text that is not valid UTF-8 gets U+FFFD in its place (never throws).
std::string dump_json(const Json& value);

// `text` with every invalid UTF-8 sequence replaced by U+FFFD, as dump_json writes it.
std::string valid_utf8(const std::string& text);

// The bytes of a token's text as a list of integers (OpenAI's logprobs `bytes`).
Json bytes_json(std::string_view text);

// {"id":..,"object":<object>,"created":..,"model":..}: the keys every body starts with.
Json response_envelope(const ResponseContext& context, std::string_view object);

// {"prompt_tokens","completion_tokens","total_tokens","prompt_tokens_details":{"cached_tokens"}}
Json usage_json(const Usage& usage);

// A log-probability as JSON writes it: the shortest decimal that reads back as the same
// float (-0.1, not -0.10000000149011612), and -9999.0 for -inf (JSON has no infinity).
double logprob_value(float logprob);

// Chat: {"content":[{"token","logprob","bytes","top_logprobs":[{"token","logprob","bytes"}]}]}
Json chat_logprobs_json(std::span<const engine::TokenLogprobs> logprobs, const TokenText& text);

// Completions: {"tokens","token_logprobs","top_logprobs":[{text: logprob}],"text_offset"}.
// Each top_logprobs entry holds the chosen token first, then the alternatives (OpenAI:
// up to logprobs + 1 entries; a text shared by two tokens keeps the first). Offsets count
// code points from `text_offset`, which is advanced past every token.
Json completion_logprobs_json(std::span<const engine::TokenLogprobs> logprobs,
                              const TokenText& text, int32_t& text_offset);

}  // namespace pagoda::server
