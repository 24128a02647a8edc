// pagoda bench-serve [--url URL] [--concurrency N] [--num-prompts N] [--request-rate R]
//                    [--prompt-len P] [--gen-len G | --dataset FILE] [--json]
// A load generator for any OpenAI-compatible server (Pagoda, llama.cpp's llama-server,
// vLLM), measuring what vLLM's `bench serve` measures: request and token throughput,
// time to first token, time per output token, inter-token and end-to-end latency.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/loaded_model.h"
#include "loadgen/benchmark_metrics.h"
#include "loadgen/benchmark_report.h"
#include "loadgen/load_runner.h"
#include "loadgen/progress_bar.h"
#include "loadgen/prompt_source.h"
#include "loadgen/server_queries.h"
#include "loadgen/synthetic_prompts.h"

namespace pagoda::cli {
namespace {

using namespace loadgen;

struct BenchServeArgs {
  std::string url = "http://127.0.0.1:8080";
  std::string endpoint = "/v1/completions";
  std::string model;  // empty: the first of GET /v1/models
  size_t concurrency = 0;
  size_t num_prompts = 100;
  std::string request_rate = "inf";
  int32_t prompt_len = 128;
  int32_t gen_len = 128;
  bool gen_len_given = false;
  std::string dataset;
  uint64_t seed = 0;
  std::string api_key;
  bool json = false;
  bool progress = false;
  double timeout_s = 600.0;
};

Expected<double> parse_rate(const std::string& text) {
  if (text == "inf" || text == "infinity") return std::numeric_limits<double>::infinity();
  char* end = nullptr;
  const double rate = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(rate > 0.0) || std::isinf(rate))
    return invalid_argument("--request-rate: '" + text + "' is not a rate above 0 or 'inf'");
  return rate;
}

// One short request before the run, as vLLM's benchmark sends: a wrong url, model,
// endpoint or key stops here with the server's own message.
Status check_server(const ServerTarget& server, const RequestTarget& request, uint64_t seed) {
  const std::vector<BenchPrompt> probe =
      synthetic_prompts(1, 16, 4, WordTokenRate{}, seed ^ 0x9e3779b97f4a7c15ull);
  RunOptions options;
  options.request = request;
  PAGODA_ASSIGN_OR_RETURN(const RunResult result, run_load(server, probe, options));
  const RequestRecord& record = result.records.front();
  if (!record.success) return invalid_argument("the initial test request failed: " + record.error);
  return Status::ok_status();
}

Status bench_serve(const BenchServeArgs& args) {
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(args.timeout_s * 1e3));
  PAGODA_ASSIGN_OR_RETURN(const double rate, parse_rate(args.request_rate));
  ServerTarget server;
  PAGODA_ASSIGN_OR_RETURN(server.url, parse_server_url(args.url));
  server.api_key = args.api_key;
  RunOptions options;
  options.request.endpoint = args.endpoint.starts_with('/') ? args.endpoint : "/" + args.endpoint;
  options.request.kind = api_kind_of_endpoint(options.request.endpoint);
  options.request.timeout = timeout;
  options.request.model = args.model;
  if (options.request.model.empty()) {
    PAGODA_ASSIGN_OR_RETURN(options.request.model, first_model_id(server, timeout));
  }
  options.request_rate = rate;
  options.concurrency = args.concurrency;
  options.seed = args.seed;

  PromptSourceOptions source{args.num_prompts, args.prompt_len, args.gen_len, args.gen_len_given,
                             args.dataset,     args.seed,       timeout};
  PAGODA_ASSIGN_OR_RETURN(const PromptSet prompts, make_prompts(server, source));
  if (!prompts.note.empty()) std::fprintf(stderr, "pagoda: note: %s\n", prompts.note.c_str());
  PAGODA_TRY(check_server(server, options.request, args.seed));

  ProgressBar bar(stderr);
  if (args.progress || isatty(STDERR_FILENO))
    options.on_progress = [&bar](const RunProgress& progress) { bar.update(progress); };
  PAGODA_ASSIGN_OR_RETURN(const RunResult result, run_load(server, prompts.prompts, options));
  bar.finish();

  const BenchmarkMetrics metrics = compute_metrics(result.records, result.duration_s);
  const ReportSettings settings{server.url.to_string(),
                                options.request.endpoint,
                                options.request.model,
                                prompts.description,
                                prompts.prompts.size(),
                                args.concurrency,
                                rate,
                                args.seed,
                                prompts.token_counts,
                                result.connections_opened};
  const std::string report =
      args.json ? json_report(metrics, settings) : text_report(metrics, settings);
  std::fputs(report.c_str(), stdout);
  if (metrics.successful_requests == 0) return io_error("every request failed");
  return Status::ok_status();
}

void add_options(CLI::App& command, BenchServeArgs& args) {
  command.add_option("--url", args.url, "Server base URL (http only)")->capture_default_str();
  command.add_option("--endpoint", args.endpoint, "/v1/completions or /v1/chat/completions")
      ->capture_default_str();
  command.add_option("--model", args.model,
                     "Model name to send (default: the first of /v1/models)");
  command.add_option("-c,--concurrency", args.concurrency, "Most requests in flight (0: no cap)")
      ->capture_default_str();
  command.add_option("-n,--num-prompts", args.num_prompts, "Requests to send")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command
      .add_option("--request-rate", args.request_rate,
                  "Requests per second, Poisson arrivals; inf sends all at once")
      ->capture_default_str();
  command.add_option("-p,--prompt-len", args.prompt_len, "Synthetic prompt length in tokens")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command
      .add_option("-g,--gen-len,--output-len", args.gen_len,
                  "Tokens to generate per request (sent with ignore_eos); overrides the dataset's")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command
      .add_option("--dataset", args.dataset,
                  "Prompts from a file: JSONL {\"prompt\", \"max_tokens\"} or ShareGPT JSON")
      ->check(CLI::ExistingFile);
  command.add_option("--seed", args.seed, "Seed of the prompts and the arrival schedule")
      ->capture_default_str();
  command.add_option("--api-key", args.api_key, "Sent as a Bearer token")
      ->envname("OPENAI_API_KEY");
  command.add_flag("--json", args.json, "Print the results as one JSON object");
  command.add_flag("--progress", args.progress,
                   "Show the progress bar even when stderr is no terminal");
  command.add_option("--timeout", args.timeout_s, "Seconds a request may take")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
}

}  // namespace

void add_bench_serve_command(CLI::App& app) {
  auto args = std::make_shared<BenchServeArgs>();
  CLI::App* command = app.add_subcommand(
      "bench-serve", "Load-test an OpenAI-compatible server (throughput, TTFT, TPOT, ITL)");
  add_options(*command, *args);
  command->callback([args, command] {
    args->gen_len_given = command->count("--gen-len") > 0;
    const Status status = bench_serve(*args);
    if (!status.ok()) report_error(status.message());
  });
}

}  // namespace pagoda::cli
