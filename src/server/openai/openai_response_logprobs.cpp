// Log-probabilities in OpenAI's two shapes: chat (a list of token objects) and legacy
// completions (parallel lists).

#include <charconv>
#include <cmath>
#include <system_error>

#include "server/openai/openai_response_parts.h"

namespace pagoda::server {
namespace {

constexpr double kMinLogprob = -9999.0;  // what -inf (or anything below) is written as

Json chat_token_json(int32_t token, float logprob, const TokenText& text) {
  const std::string piece = text ? text(token) : std::string();
  Json entry = Json::object();
  entry["token"] = piece;
  entry["logprob"] = logprob_value(logprob);
  entry["bytes"] = bytes_json(piece);
  return entry;
}

}  // namespace

Json bytes_json(std::string_view text) {
  Json bytes = Json::array();
  for (const char c : text) bytes.push_back(static_cast<unsigned char>(c));
  return bytes;
}

double logprob_value(float logprob) {
  if (std::isnan(logprob) || !(logprob > kMinLogprob)) return kMinLogprob;
  char buffer[32];
  const auto printed = std::to_chars(buffer, buffer + sizeof buffer, logprob);
  double value = logprob;
  std::from_chars(buffer, printed.ptr, value);
  return value;
}

Json chat_logprobs_json(std::span<const engine::TokenLogprobs> logprobs, const TokenText& text) {
  Json content = Json::array();
  for (const engine::TokenLogprobs& step : logprobs) {
    Json entry = chat_token_json(step.token, step.logprob, text);
    Json top = Json::array();
    for (const engine::TokenLogprob& alternative : step.top) {
      top.push_back(chat_token_json(alternative.token, alternative.logprob, text));
    }
    entry["top_logprobs"] = std::move(top);
    content.push_back(std::move(entry));
  }
  Json result = Json::object();
  result["content"] = std::move(content);
  return result;
}

Json completion_logprobs_json(std::span<const engine::TokenLogprobs> logprobs,
                              const TokenText& text, int32_t& text_offset) {
  Json tokens = Json::array();
  Json token_logprobs = Json::array();
  Json top_logprobs = Json::array();
  Json offsets = Json::array();
  for (const engine::TokenLogprobs& step : logprobs) {
    const std::string piece = text ? text(step.token) : std::string();
    tokens.push_back(piece);
    token_logprobs.push_back(logprob_value(step.logprob));
    // Keys as they will be written, so that two tokens whose texts differ only in
    // invalid bytes do not become two equal keys.
    Json top = Json::object();
    top[valid_utf8(piece)] = logprob_value(step.logprob);
    for (const engine::TokenLogprob& alternative : step.top) {
      std::string key = valid_utf8(text ? text(alternative.token) : std::string());
      if (!top.contains(key)) top[std::move(key)] = logprob_value(alternative.logprob);
    }
    top_logprobs.push_back(std::move(top));
    offsets.push_back(text_offset);
    text_offset += utf8_length(piece);
  }
  Json result = Json::object();
  result["tokens"] = std::move(tokens);
  result["token_logprobs"] = std::move(token_logprobs);
  result["top_logprobs"] = std::move(top_logprobs);
  result["text_offset"] = std::move(offsets);
  return result;
}

std::string valid_utf8(const std::string& text) {
  bool ascii = true;
  for (const char c : text) ascii &= static_cast<unsigned char>(c) < 0x80;
  if (ascii) return text;
  // The writer's own replacement, so the result is exactly what dump_json would write.
  const Json reread = Json::parse(dump_json(Json(text)), nullptr, /*allow_exceptions=*/false);
  return reread.is_string() ? reread.get<std::string>() : std::string();
}

int32_t utf8_length(std::string_view text) {
  int32_t length = 0;
  for (const char c : text) length += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return length;
}

}  // namespace pagoda::server
