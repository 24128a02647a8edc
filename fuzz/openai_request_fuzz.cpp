// Parses arbitrary bytes as the body of every JSON endpoint (chat completions,
// completions, tokenize, detokenize). Nothing may crash, leak or throw: a bad body is an
// ApiError with status 400, a message and an error body that is valid JSON; an accepted
// one holds only values the API allows.

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>

#include "server/openai/openai_request.h"
#include "server/openai/tokenize_api.h"

namespace {

using pagoda::server::ApiError;
using pagoda::server::ApiResult;
using pagoda::server::GenerationOptions;
using pagoda::server::Json;

constexpr int32_t kVocab = 512;  // like the smallest test models

[[noreturn]] void fail(const char* message) {
  std::fprintf(stderr, "openai_request_fuzz: %s\n", message);
  std::abort();
}

void check_error(const ApiError& error) {
  if (error.status != 400 || error.message.empty())
    fail("an error that is not a 400 with a message");
  const Json body = Json::parse(pagoda::server::error_body(error), nullptr, false);
  if (!body.is_object() || !body.contains("error")) fail("an error body that is not JSON");
}

// Every accepted value is one the API allows.
void check_options(const GenerationOptions& options) {
  const auto& sampling = options.sampling;
  if (!(sampling.temperature >= 0.0f && sampling.temperature <= 2.0f)) fail("temperature");
  if (!(sampling.top_p > 0.0f && sampling.top_p <= 1.0f)) fail("top_p");
  if (!(sampling.min_p >= 0.0f && sampling.min_p <= 1.0f)) fail("min_p");
  if (!(sampling.repetition_penalty > 0.0f) || std::isinf(sampling.repetition_penalty)) {
    fail("repetition_penalty");
  }
  if (std::abs(sampling.presence_penalty) > 2.0f || std::abs(sampling.frequency_penalty) > 2.0f) {
    fail("penalties");
  }
  if (sampling.top_k < 0 || sampling.top_logprobs < 0 || sampling.top_logprobs > 20) fail("top_k");
  for (const auto& [token, bias] : sampling.logit_bias) {
    if (token < 0 || token >= kVocab || !(std::abs(bias) <= 100.0f)) fail("logit_bias");
  }
  if (options.n < 1 || options.n > 128) fail("n");
  if (options.max_tokens &&
      (*options.max_tokens < 1 || options.stop.max_tokens != *options.max_tokens)) {
    fail("max_tokens");
  }
  if (options.stop.stop_strings.size() > 4) fail("too many stop strings");
  for (const std::string& stop : options.stop.stop_strings) {
    if (stop.empty()) fail("an empty stop string");
  }
  if (options.include_usage && !options.stream) fail("include_usage without stream");
}

void check_messages(const Json& messages) {
  if (!messages.is_array() || messages.empty()) fail("messages not a non-empty array");
  for (const Json& message : messages) {
    if (!message.is_object()) fail("a message that is not an object");
    const auto role = message.find("role");
    if (role == message.end() || !role->is_string()) fail("a message without a role");
    const auto content = message.find("content");
    if (content == message.end() || !(content->is_string() || content->is_null())) {
      fail("content not normalised to a string or null");
    }
  }
  (void)messages.dump();  // throws (and so fails) on invalid UTF-8
}

template <typename T>
bool accepted(const ApiResult<T>& result) {
  if (!result.ok()) check_error(result.error());
  return result.ok();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);

  auto chat = pagoda::server::parse_chat_completion_request(body, kVocab);
  if (accepted(chat)) {
    check_options(chat->options);
    check_messages(chat->messages);
    if (!chat->chat_template_kwargs.is_object()) fail("chat_template_kwargs");
  }

  auto completion = pagoda::server::parse_completion_request(body, kVocab);
  if (accepted(completion)) {
    check_options(completion->options);
    if (completion->prompts.empty()) fail("no prompt");
    for (const auto& prompt : completion->prompts) {
      if (const auto* ids = std::get_if<std::vector<int32_t>>(&prompt)) {
        if (ids->empty()) fail("an empty token prompt");
        for (const int32_t id : *ids) {
          if (id < 0 || id >= kVocab) fail("a token id outside the vocabulary");
        }
      } else if (std::get<std::string>(prompt).empty()) {
        fail("an empty text prompt");
      }
    }
  }

  auto tokenize = pagoda::server::parse_tokenize_request(body);
  if (accepted(tokenize) && !tokenize->prompt && tokenize->messages.empty())
    fail("nothing to tokenize");

  auto detokenize = pagoda::server::parse_detokenize_request(body, kVocab);
  if (accepted(detokenize)) {
    for (const int32_t id : detokenize->tokens) {
      if (id < 0 || id >= kVocab) fail("a detokenize id outside the vocabulary");
    }
  }
  return 0;
}
