#pragma once
// One access-log line per answered HTTP request, text or JSON:
//
//   text: 3f9c2a1e7b4d POST /v1/chat/completions 200 127.0.0.1:53214 prompt_tokens=12
//         completion_tokens=34 ttft=0.123s latency=1.234s bytes=5678
//   json: {"request_id":"3f9c2a1e7b4d","method":"POST","path":"/v1/chat/completions",
//          "status":200,"remote":"127.0.0.1:53214","prompt_tokens":12,
//          "completion_tokens":34,"ttft_s":0.123,"latency_s":1.234,"bytes":5678}
//
// (each on one line). Fields that do not apply (no generation: tokens and ttft) are left
// out; a request the engine speculated for adds spec_proposed=N spec_accepted=M
// ("spec_proposed", "spec_accepted"). Prompts are private: the prompt appears only when the server runs with
// --log-prompts. Everything a client controls (path, request id, prompt) is escaped, so a
// line can never be split or forged.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace pagoda::server {

enum class LogFormat { kText, kJson };

struct AccessRecord {
  std::string request_id;
  std::string method;           // "POST"
  std::string path;             // the request target as received
  int status = 0;               // HTTP status sent
  std::string remote;           // "address:port" of the client
  std::optional<int64_t> prompt_tokens;      // generation requests only
  std::optional<int64_t> completion_tokens;  // all choices together
  std::optional<double> ttft_seconds;        // to the first generated token
  // Speculative decoding (requests that verified proposals): proposals verified, kept.
  std::optional<int64_t> proposed_tokens;
  std::optional<int64_t> accepted_tokens;
  double latency_seconds = 0.0;              // arrival to last byte
  size_t bytes_sent = 0;                     // body bytes
  std::string prompt;           // the prompt text; logged only with log_prompts
};

std::string format_access_line(const AccessRecord& record, LogFormat format, bool log_prompts);

}  // namespace pagoda::server
