#pragma once
// The HTTP handler of `pagoda serve` from the moment it listens: while the model loads
// there is no ApiService yet, and the gate answers /health with 503 {"status":"loading"}
// (so orchestrators can tell "starting" from "dead") and every other request with 503 +
// Retry-After. Once open(service) is called, every request goes to the service.

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <string>

#include "server/http/http_exchange.h"
#include "server/metrics/metrics.h"
#include "server/service/api_service.h"

namespace pagoda::server {

class ServiceGate {
 public:
  // `metrics` must outlive the gate; `started`: when the server started (for uptime).
  ServiceGate(std::string model_name, ServerMetrics& metrics,
              std::chrono::steady_clock::time_point started);

  // From now on requests go to `service`, which must outlive the gate's use. Any thread.
  void open(ApiService& service) { service_.store(&service, std::memory_order_release); }
  bool is_open() const { return service_.load(std::memory_order_acquire) != nullptr; }

  asio::awaitable<void> handle(Exchange& exchange);

 private:
  asio::awaitable<int> respond_loading(Exchange& exchange);

  std::string model_name_;
  ServerMetrics& metrics_;
  std::chrono::steady_clock::time_point started_;
  std::atomic<ApiService*> service_{nullptr};
};

}  // namespace pagoda::server
