#include "server/logging/logging_access.h"

#include <cstdio>

#include <nlohmann/json.hpp>

namespace pagoda::server {
namespace {

// A value a client may have chosen, safe on one text line: printable ASCII as is
// (but '\\' and '"'), everything else as \xNN (UTF-8 text included: a log line is for
// grep, not for reading prose).
std::string escape_text(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte >= 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", byte);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

// A token field of the text form: escaped, and "-" when empty so fields keep their places.
std::string text_field(std::string_view value) {
  if (value.empty()) return "-";
  std::string escaped = escape_text(value);
  if (escaped.find(' ') != std::string::npos) return '"' + escaped + '"';
  return escaped;
}

std::string seconds_text(double s) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3fs", s);
  return buffer;
}

std::string text_line(const AccessRecord& r, bool log_prompts) {
  std::string line = text_field(r.request_id) + ' ' + text_field(r.method) + ' ' +
                     text_field(r.path) + ' ' + std::to_string(r.status) + ' ' +
                     text_field(r.remote);
  if (r.prompt_tokens) line += " prompt_tokens=" + std::to_string(*r.prompt_tokens);
  if (r.completion_tokens) line += " completion_tokens=" + std::to_string(*r.completion_tokens);
  if (r.proposed_tokens) line += " spec_proposed=" + std::to_string(*r.proposed_tokens);
  if (r.accepted_tokens) line += " spec_accepted=" + std::to_string(*r.accepted_tokens);
  if (r.ttft_seconds) line += " ttft=" + seconds_text(*r.ttft_seconds);
  line += " latency=" + seconds_text(r.latency_seconds);
  line += " bytes=" + std::to_string(r.bytes_sent);
  if (log_prompts && !r.prompt.empty()) line += " prompt=\"" + escape_text(r.prompt) + '"';
  return line;
}

std::string json_line(const AccessRecord& r, bool log_prompts) {
  nlohmann::ordered_json j;
  j["request_id"] = r.request_id;
  j["method"] = r.method;
  j["path"] = r.path;
  j["status"] = r.status;
  j["remote"] = r.remote;
  if (r.prompt_tokens) j["prompt_tokens"] = *r.prompt_tokens;
  if (r.completion_tokens) j["completion_tokens"] = *r.completion_tokens;
  if (r.proposed_tokens) j["spec_proposed"] = *r.proposed_tokens;
  if (r.accepted_tokens) j["spec_accepted"] = *r.accepted_tokens;
  if (r.ttft_seconds) j["ttft_s"] = *r.ttft_seconds;
  j["latency_s"] = r.latency_seconds;
  j["bytes"] = r.bytes_sent;
  if (log_prompts && !r.prompt.empty()) j["prompt"] = r.prompt;
  // Invalid UTF-8 from a client becomes U+FFFD instead of an exception.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string format_access_line(const AccessRecord& record, LogFormat format, bool log_prompts) {
  return format == LogFormat::kJson ? json_line(record, log_prompts) : text_line(record, log_prompts);
}

}  // namespace pagoda::server
