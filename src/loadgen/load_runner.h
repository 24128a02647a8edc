#pragma once
// A benchmark run: every prompt sent as its own streamed request, on a schedule
// (Poisson arrivals at a rate, or all at once), with at most `concurrency` in flight;
// one thread and one io_context drive all of them.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/status.h"
#include "loadgen/bench_prompt.h"
#include "loadgen/request_record.h"
#include "loadgen/request_runner.h"
#include "loadgen/server_url.h"

namespace pagoda::loadgen {

struct ServerTarget {
  ServerUrl url;
  std::string api_key;  // sent as a Bearer token when not empty
};

struct RunProgress {
  size_t total = 0;
  size_t finished = 0;  // failed ones included
  size_t failed = 0;
  double elapsed_s = 0.0;
};

struct RunOptions {
  RequestTarget request;
  double request_rate = std::numeric_limits<double>::infinity();  // requests per second
  size_t concurrency = 0;  // most requests in flight; 0: no cap
  uint64_t seed = 0;       // of the arrival schedule
  // Called on the run's thread after each request finishes (and once at the start).
  std::function<void(const RunProgress&)> on_progress;
};

struct RunResult {
  std::vector<RequestRecord> records;  // [prompts], in prompt order
  double duration_s = 0.0;             // first send to last response
  size_t connections_opened = 0;       // TCP connections the run needed (keep-alive reuse)
};

// Runs every prompt and returns what each request saw. Errors only for bad options
// (a rate that is not > 0); failed requests are in the records.
Expected<RunResult> run_load(const ServerTarget& server, const std::vector<BenchPrompt>& prompts,
                             const RunOptions& options);

}  // namespace pagoda::loadgen
