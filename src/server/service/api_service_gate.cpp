#include "server/service/api_service_gate.h"

#include <utility>

#include "server/logging/logging.h"
#include "server/metrics/metrics_process.h"
#include "server/openai/api_error.h"
#include "server/service/health.h"
#include "server/service/router.h"

namespace pagoda::server {

ServiceGate::ServiceGate(std::string model_name, ServerMetrics& metrics,
                         std::chrono::steady_clock::time_point started)
    : model_name_(std::move(model_name)), metrics_(metrics), started_(started) {}

asio::awaitable<void> ServiceGate::handle(Exchange& exchange) {
  if (ApiService* service = service_.load(std::memory_order_acquire)) {
    co_await service->handle(exchange);
    co_return;
  }
  const auto arrival = std::chrono::steady_clock::now();
  const int status = co_await respond_loading(exchange);
  const HttpRequest& request = exchange.request();
  const std::string_view target(request.target().data(), request.target().size());
  const RouteMatch match = route(request.method(), target);
  metrics_.record_request(match.endpoint ? endpoint_label(*match.endpoint) : "unmatched", status);
  AccessRecord record;
  record.request_id = std::string(exchange.request_id());
  record.method = std::string(request.method_string());
  record.path = std::string(target);
  record.status = status;
  record.remote = std::string(exchange.remote_address());
  record.latency_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - arrival).count();
  record.bytes_sent = exchange.bytes_sent();
  log_access(record);
}

asio::awaitable<int> ServiceGate::respond_loading(Exchange& exchange) {
  const HttpRequest& request = exchange.request();
  const std::string_view target(request.target().data(), request.target().size());
  if (request.method() == http::verb::get && target_path(target) == "/health") {
    HealthInputs inputs;
    inputs.state = ServerState::kLoading;
    inputs.model = model_name_;
    inputs.uptime_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    inputs.requests_served = metrics_.requests_served();
    if (const std::optional<ProcessMemory> memory = read_process_memory()) {
      inputs.rss_bytes = memory->resident_bytes;
    }
    HealthReport report = health_report(inputs);
    co_await exchange.respond(static_cast<http::status>(report.http_status),
                              std::move(report.body));
    co_return report.http_status;
  }
  exchange.add_header("Retry-After", "1");
  const ApiError error = service_unavailable("The model is still loading. Try again shortly.");
  std::string body = error_body(error);
  co_await exchange.respond(static_cast<http::status>(error.status), std::move(body));
  co_return error.status;
}

}  // namespace pagoda::server
