#pragma once
// Sends one benchmark request and times its streamed response.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <string>

#include "loadgen/bench_prompt.h"
#include "loadgen/http_client.h"
#include "loadgen/openai_stream.h"
#include "loadgen/request_record.h"

namespace pagoda::loadgen {

struct RequestTarget {
  std::string endpoint;  // "/v1/completions" or "/v1/chat/completions" (before the url's prefix)
  ApiKind kind = ApiKind::kCompletions;
  std::string model;
  std::chrono::milliseconds timeout{std::chrono::hours(6)};  // for the whole request
};

// Runs `prompt` against `target` through `client`. Failures of any kind (transport,
// HTTP status, an error in the stream, no text at all) are recorded, never thrown.
// `run_start` is the origin of the record's send_time_s.
asio::awaitable<RequestRecord> run_request(HttpClient& client, const RequestTarget& target,
                                           const BenchPrompt& prompt, Clock::time_point run_start);

}  // namespace pagoda::loadgen
