// pagoda serve [-m FILE] [--port 8080] ...: the OpenAI-compatible HTTP server.
//
// Start-up order: settings (flags > PAGODA_* > --config TOML > defaults), logging, the
// HTTP server (so /health answers 503 "loading" while the model loads), the model, its
// chat template, the engine, then the API goes live. SIGTERM / SIGINT (on a thread of
// their own, see serve_signals.h): stop accepting, let running requests finish for up to
// --shutdown-grace seconds (a second signal cuts that short), abort the rest, stop, exit 0.
#include <cstdio>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <ctime>
#include <memory>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "cli/loaded_model.h"
#include "cli/serve_signals.h"
#include "core/text_file.h"
#include "engine/engine.h"
#include "server/config/serve_config.h"
#include "server/http/http_server.h"
#include "server/logging/logging.h"
#include "server/metrics/metrics.h"
#include "server/service/api_service.h"
#include "server/service/api_service_gate.h"
#include "tokenizer/chat_template.h"

namespace pagoda::cli {
namespace {

using Clock = std::chrono::steady_clock;

server::HttpServerOptions http_options(const server::ServeConfig& config) {
  server::HttpServerOptions options;
  options.host = config.host;
  options.port = config.port;
  options.io_threads = config.io_threads;
  options.max_body_bytes = config.max_body_bytes;
  options.idle_timeout = config.idle_timeout;
  options.read_timeout = config.read_timeout;
  options.max_connections = config.max_connections;
  return options;
}

// The template every conversation renders with: --chat-template's file, else the model's
// own (ChatML when it has none, or when ours cannot parse it), chosen once and logged.
Expected<tokenizer::ChatTemplate> choose_chat_template(const server::ServeConfig& config,
                                                       const gguf::Reader& model_file) {
  if (!config.chat_template_file.empty()) {
    PAGODA_ASSIGN_OR_RETURN(const std::string source, read_text_file(config.chat_template_file));
    Expected<tokenizer::ChatTemplate> parsed = tokenizer::ChatTemplate::parse(source);
    if (!parsed) {
      return invalid_argument("--chat-template " + config.chat_template_file + ": " +
                              parsed.status().message());
    }
    spdlog::info("chat template: {} ({} bytes, from --chat-template)", config.chat_template_file,
                 source.size());
    return std::move(*parsed);
  }
  return model_chat_template(model_file);
}

Expected<server::ApiServiceOptions> service_options(const server::ServeConfig& config) {
  server::ApiServiceOptions options;
  PAGODA_ASSIGN_OR_RETURN(options.api_keys,
                          server::ApiKeys::load(config.api_keys, config.api_key_file));
  PAGODA_ASSIGN_OR_RETURN(options.cors, server::CorsPolicy::create(config.cors_origins));
  options.rate_limit_rpm = config.rate_limit_rpm;
  options.max_queued = static_cast<int32_t>(config.max_queued);
  options.max_priority_boost = config.max_priority_boost;
  options.log_prompts = config.log_prompts;
  options.web_ui = config.webui;
  options.metrics = config.metrics;
  options.metrics_path = config.metrics_path;
  return options;
}

// The model, its engine and the API over them: what exists once loading is done.
struct ServingStack {
  LoadedModel loaded;
  LoadedDraft draft;  // speculative decoding with a draft model; empty otherwise
  std::unique_ptr<engine::Engine> engine;
  std::unique_ptr<server::ApiService> service;
};

Expected<std::unique_ptr<ServingStack>> load_stack(const server::ServeConfig& config,
                                                   server::ApiServiceOptions options,
                                                   server::ServerMetrics& metrics) {
  auto stack = std::make_unique<ServingStack>();
  spdlog::info("loading {}", config.model_path);
  PAGODA_ASSIGN_OR_RETURN(stack->loaded,
                          load_model_file(config.model_path, config.backend,
                                          config.engine.load_options(), true));
  spdlog::info("model loaded in {:.2f} s on {}", stack->loaded.load_seconds,
               stack->loaded.backend->name());
  metrics.set_model_load_seconds(stack->loaded.load_seconds);
  PAGODA_ASSIGN_OR_RETURN(tokenizer::ChatTemplate chat_template,
                          choose_chat_template(config, *stack->loaded.file));
  if (config.engine.speculative.method == engine::SpeculativeMethod::kDraft) {
    PAGODA_ASSIGN_OR_RETURN(stack->draft,
                            load_draft_model(config.engine.speculative.draft_model_path,
                                             stack->loaded, config.engine.draft_load_options()));
  }
  PAGODA_ASSIGN_OR_RETURN(stack->engine,
                          engine::Engine::create(*stack->loaded.model, *stack->loaded.backend,
                                                 *stack->loaded.tokenizer, config.engine,
                                                 stack->draft.model.get()));
  const engine::EngineConfig& resolved = stack->engine->config();
  spdlog::info(
      "engine: {} KV blocks of {} tokens, max_model_len {}, max_running {}, "
      "max_batched_tokens {}",
      stack->engine->kv_shape().n_blocks, stack->engine->kv_shape().block_size,
      resolved.scheduler.max_model_len, resolved.scheduler.max_running,
      resolved.scheduler.max_batched_tokens);
  server::ModelInfo model{.name = config.model_name,
                          .created = static_cast<int64_t>(std::time(nullptr)),
                          .max_model_len = resolved.scheduler.max_model_len};
  stack->service = std::make_unique<server::ApiService>(*stack->engine, *stack->loaded.tokenizer,
                                                        std::move(model), std::move(chat_template),
                                                        std::move(options), metrics);
  return stack;
}

// Polls until `done()` or the deadline, or a second signal when `interruptible`.
// Returns whether done() held.
template <class Done>
bool wait_until(Done done, Clock::time_point deadline, ShutdownSignals& signals,
                bool interruptible) {
  while (!done()) {
    if (Clock::now() >= deadline || (interruptible && signals.forced())) return false;
    const Clock::time_point next = std::min(deadline, Clock::now() + std::chrono::milliseconds(10));
    if (interruptible) {
      signals.wait_forced(next);  // returns early on a second signal
    } else {
      std::this_thread::sleep_until(next);
    }
  }
  return true;
}

// Graceful stop: no new connections; running requests get the grace period; then the
// rest is aborted (their streams end with finish_reason "abort") and everything stops.
void drain_and_stop(server::HttpServer& http, ServingStack& stack,
                    const server::ServeConfig& config, ShutdownSignals& signals) {
  spdlog::info("signal {}: stopping (up to {} s for running requests)", signals.first_signal(),
               config.shutdown_grace.count());
  stack.service->set_draining();
  http.stop_accepting();
  const Clock::time_point deadline = Clock::now() + config.shutdown_grace;
  const auto idle = [&http] { return http.active_exchanges() == 0; };
  if (!wait_until(idle, deadline, signals, /*interruptible=*/true)) {
    spdlog::warn("shutdown: aborting {} requests still running", http.active_exchanges());
    stack.service->abort_all();
    // Aborted requests end within an engine step: let their replies (finish_reason
    // "abort") go out, even after a second signal.
    wait_until(idle, Clock::now() + std::chrono::seconds(2), signals, /*interruptible=*/false);
  }
  stack.engine->shutdown();  // ends whatever is left; its sinks post to the running I/O threads
  http.stop();
  spdlog::info("stopped");
}

Status serve(const CLI::App& command, const server::ServeOptions& raw) {
  ShutdownSignals signals;  // first: every thread started from here on blocks the signals
  const Clock::time_point started = Clock::now();
  PAGODA_ASSIGN_OR_RETURN(
      const server::ServeConfig config,
      server::resolve_serve_config(command, raw, server::process_environment()));
  if (raw.print_config) {
    std::fputs(server::print_serve_config(config).c_str(), stdout);
    return Status::ok_status();
  }
  server::configure_logging(config.logging());
  PAGODA_ASSIGN_OR_RETURN(server::ApiServiceOptions options, service_options(config));
  server::ServerMetrics metrics;
  server::ServiceGate gate(config.model_name, metrics, started);
  options.started = started;
  PAGODA_ASSIGN_OR_RETURN(
      std::unique_ptr<server::HttpServer> http,
      server::HttpServer::create(http_options(config), [&gate](server::Exchange& exchange) {
        return gate.handle(exchange);
      }));
  http->start();
  spdlog::info("listening on http://{}:{} (model {} loading)", config.host, http->port(),
               config.model_name);

  Expected<std::unique_ptr<ServingStack>> stack = load_stack(config, std::move(options), metrics);
  if (!stack) {
    http->stop();
    return stack.status();
  }
  gate.open(*(*stack)->service);
  spdlog::info("ready: serving {} on http://{}:{}", config.model_name, config.host, http->port());
  if (config.webui) spdlog::info("chat page: http://{}:{}/", config.host, http->port());
  signals.wait();
  drain_and_stop(*http, **stack, config, signals);
  return Status::ok_status();
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto raw = std::make_shared<server::ServeOptions>();
  CLI::App* command = app.add_subcommand("serve", "Serve the OpenAI-compatible HTTP API");
  server::add_serve_options(*command, *raw);
  command->callback([command, raw] {
    const Status status = serve(*command, *raw);
    if (!status.ok()) report_error(status.message());
  });
}

}  // namespace pagoda::cli
