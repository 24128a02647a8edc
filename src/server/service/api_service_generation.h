#pragma once
// One generation request, from tokenized prompts to the HTTP response: its engine
// requests (n completions of each prompt), the outputs gathered through an
// EngineBridge, and either one whole response or a stream of server-sent events, in
// OpenAI's shapes (chat or completions). Choices are indexed prompt-major: choice
// i * n + j is completion j of prompt i.
//
// A client that leaves (Exchange::on_disconnect, or a refused write) aborts every
// engine request at once. A server that shuts down aborts the ones still running past
// the grace period through ActiveGenerations; they end with finish_reason "abort".
// An engine failure (an output with an error) is a 500 for a whole response, and an
// error event for a stream that has started.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/engine.h"
#include "server/http/http_exchange.h"
#include "server/metrics/metrics.h"
#include "server/openai/openai_request.h"
#include "server/openai/openai_response.h"
#include "server/tools/tool_family.h"

namespace pagoda::server {

enum class ApiFlavor { kChat, kCompletion };

// Every generation in flight, so that a shutdown can end them all.
class ActiveGenerations {
 public:
  // Registers an abort callback; returns a key for remove().
  uint64_t add(std::function<void()> abort);
  void remove(uint64_t key);
  void abort_all();  // calls every registered callback (outside the lock)
  std::size_t size() const;

 private:
  mutable std::mutex mutex_;
  uint64_t next_key_ = 0;
  std::unordered_map<uint64_t, std::function<void()>> aborts_;
};

// One request's count in the metrics (requests_total by route and status), taken once,
// right before the request's last write: a client that has its whole response also
// finds it counted in /metrics.
class RequestCount {
 public:
  RequestCount(ServerMetrics& metrics, std::string_view label) : metrics_(metrics), label_(label) {}
  void record(int status) {
    if (recorded_) return;
    recorded_ = true;
    metrics_.record_request(label_, status);
  }
  bool recorded() const { return recorded_; }

 private:
  ServerMetrics& metrics_;
  std::string_view label_;  // a route label: static text
  bool recorded_ = false;
};

struct PromptJob {
  std::vector<int32_t> tokens;  // BOS included as the model wants
  int32_t max_tokens = 0;       // resolved against the context
  std::string echo;             // completions with echo: the text sent before the output
};

struct GenerationJob {
  ApiFlavor flavor = ApiFlavor::kChat;
  // Chat with tools the model may call: its output is read in the family's call syntax
  // (message.tool_calls, finish_reason "tool_calls", streamed tool-call deltas).
  std::optional<tools::ToolFamily> tool_family;
  std::vector<PromptJob> prompts;  // >= 1
  GenerationOptions options;       // sampling, stop strings, n, stream, include_usage
  ResponseContext context;         // id, created, model, logprobs, token text
};

// What the request amounted to, for the metrics and the access log.
struct GenerationOutcome {
  int status = 0;  // the HTTP status sent (200 also for a stream cut short)
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  int32_t cached_prompt_tokens = 0;
  double ttft_seconds = -1.0;  // from arrival to the first generated token; < 0: none
  // Speculative decoding, all choices together: proposals verified, and of them kept.
  int64_t proposed_tokens = 0;
  int64_t accepted_tokens = 0;
};

struct GenerationServices {
  engine::Engine* engine = nullptr;
  ServerMetrics* metrics = nullptr;
  ActiveGenerations* active = nullptr;
  RequestCount* count = nullptr;  // this request's; recorded before the last write
};

// Runs `job` on `exchange` (which must not have replied yet). `arrival`: when the
// request arrived, for the latencies.
asio::awaitable<GenerationOutcome> run_generation(Exchange& exchange, GenerationJob job,
                                                  GenerationServices services,
                                                  std::chrono::steady_clock::time_point arrival);

}  // namespace pagoda::server
