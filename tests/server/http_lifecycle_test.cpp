// Timeouts (a request that trickles in, an idle keep-alive connection, a connection
// that never sends) and shutdown (stop_accepting, stop, destruction).

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <string>
#include <thread>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "server/http/http_server.h"
#include "server/http_test_client.h"

namespace pagoda::server {
namespace {

using namespace testing;
using Clock = std::chrono::steady_clock;

asio::awaitable<void> ok(Exchange& exchange) {
  co_await exchange.respond(http::status::ok, "ok", "text/plain");
}

std::chrono::milliseconds since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
}

TEST(HttpTimeoutTest, ClosesARequestThatTricklesIn) {
  auto options = test_options();
  options.read_timeout = 300ms;
  auto server = start_server(ok, options);
  ASSERT_TRUE(server);
  TestClient client(server->port());
  const auto start = Clock::now();
  ASSERT_TRUE(client.send("GET / HTTP/1.1\r\nHost: t\r\n"));
  // One header byte every 20 ms: the head never completes within the read timeout.
  while (!client.closed() && since(start) < 1500ms) {
    client.send("X");
    client.read_some(20ms);
  }
  EXPECT_TRUE(client.closed());
  EXPECT_GE(since(start), 250ms);
  EXPECT_LT(since(start), 800ms);
}

TEST(HttpTimeoutTest, ClosesABodyThatTricklesIn) {
  auto options = test_options();
  options.read_timeout = 300ms;
  auto server = start_server(ok, options);
  ASSERT_TRUE(server);
  TestClient client(server->port());
  const auto start = Clock::now();
  ASSERT_TRUE(client.send("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n"));
  while (!client.closed() && since(start) < 1500ms) {
    client.send("y");
    client.read_some(20ms);
  }
  EXPECT_TRUE(client.closed());
  EXPECT_LT(since(start), 800ms);
}

TEST(HttpTimeoutTest, ClosesAConnectionThatNeverSends) {
  auto options = test_options();
  options.read_timeout = 200ms;
  auto server = start_server(ok, options);
  ASSERT_TRUE(server);
  TestClient client(server->port());
  const auto start = Clock::now();
  EXPECT_TRUE(client.wait_closed(1500ms));
  EXPECT_GE(since(start), 150ms);
  EXPECT_LT(since(start), 700ms);
}

TEST(HttpTimeoutTest, ClosesAnIdleKeepAliveConnection) {
  auto options = test_options();
  options.idle_timeout = 200ms;
  auto server = start_server(ok, options);
  ASSERT_TRUE(server);
  TestClient client(server->port());
  for (int i = 0; i < 3; ++i) {  // requests within the idle timeout keep it open
    ASSERT_TRUE(client.send(get_request("/")));
    ASSERT_TRUE(client.read_response());
    std::this_thread::sleep_for(100ms);
  }
  const auto start = Clock::now();
  EXPECT_TRUE(client.wait_closed(1500ms));
  EXPECT_LT(since(start), 500ms);
  EXPECT_TRUE(eventually([&] { return server->open_connections() == 0; }));
}

TEST(HttpShutdownTest, StopAcceptingRefusesNewConnectionsAndFinishesExchanges) {
  std::atomic<bool> release{false};
  auto server = start_server([&](Exchange& exchange) -> asio::awaitable<void> {
    if (exchange.request().target() == "/slow") co_await wait_until([&] { return release.load(); });
    co_await exchange.respond(http::status::ok, std::string(exchange.request().target()), "text/plain");
  });
  ASSERT_TRUE(server);
  TestClient idle(server->port());
  ASSERT_TRUE(idle.send(get_request("/quick")));
  ASSERT_TRUE(idle.read_response());
  // The /quick exchange still counts for a moment after its reply has left.
  ASSERT_TRUE(eventually([&] { return server->active_exchanges() == 0; }));
  TestClient busy(server->port());
  ASSERT_TRUE(busy.send(get_request("/slow")));
  ASSERT_TRUE(eventually([&] { return server->active_exchanges() == 1; }));

  server->stop_accepting();
  TestClient late(server->port());
  EXPECT_EQ(late.connect_error(), ECONNREFUSED);
  EXPECT_TRUE(idle.wait_closed(500ms));  // idle keep-alive connections are closed
  EXPECT_EQ(server->active_exchanges(), 1u);

  release = true;  // the exchange in flight finishes, then its connection closes
  const auto response = busy.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "/slow");
  EXPECT_EQ(response->header("connection"), "close");
  EXPECT_TRUE(busy.wait_closed());
  EXPECT_TRUE(eventually([&] { return server->open_connections() == 0; }));
  server->stop_accepting();  // idempotent
}

TEST(HttpShutdownTest, StopEndsEverythingPromptly) {
  std::atomic<int> callbacks{0};
  std::atomic<int> handlers_left{0};
  auto server = start_server([&](Exchange& exchange) -> asio::awaitable<void> {
    exchange.on_disconnect([&] { ++callbacks; });
    if (exchange.request().target() == "/stream") {
      co_await exchange.begin_stream();
      co_await exchange.send_event("started");
    }
    co_await sleep_for(10s);  // cancelled by stop()
    ++handlers_left;          // not reached
  });
  ASSERT_TRUE(server);
  TestClient whole(server->port()), stream(server->port()), idle(server->port());
  ASSERT_TRUE(whole.send(get_request("/whole")));
  ASSERT_TRUE(stream.send(get_request("/stream")));
  ASSERT_TRUE(stream.read_until("data: started\n\n\r\n"));
  ASSERT_TRUE(eventually([&] { return server->active_exchanges() == 2 && server->open_connections() == 3; }));

  const auto start = Clock::now();
  std::thread signal_thread([&] { server->stop(); });  // as a signal-handling thread would
  signal_thread.join();
  EXPECT_LT(since(start), 400ms);
  EXPECT_EQ(callbacks.load(), 2);
  EXPECT_EQ(handlers_left.load(), 0);
  EXPECT_EQ(server->open_connections(), 0u);
  EXPECT_EQ(server->active_exchanges(), 0u);
  for (TestClient* client : {&whole, &stream, &idle}) EXPECT_TRUE(client->wait_closed(500ms));
  TestClient late(server->port());
  EXPECT_EQ(late.connect_error(), ECONNREFUSED);
  server->stop();  // idempotent
}

TEST(HttpShutdownTest, StopGivesUpOnAHandlerThatIgnoresCancellation) {
  auto options = test_options();
  options.stop_timeout = 200ms;
  std::atomic<bool> release{false};
  auto server = start_server([&](Exchange&) -> asio::awaitable<void> {
    // Waits on, and for, something the transport cannot cancel.
    co_await asio::this_coro::throw_if_cancelled(false);
    asio::steady_timer timer(co_await asio::this_coro::executor);
    while (!release.load()) {
      timer.expires_after(5ms);
      co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }
  }, options);
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send(get_request("/")));
  ASSERT_TRUE(eventually([&] { return server->active_exchanges() == 1; }));
  const auto start = Clock::now();
  server->stop();
  EXPECT_GE(since(start), 150ms);
  EXPECT_LT(since(start), 600ms);
  EXPECT_TRUE(client.wait_closed(500ms));
  server.reset();  // destroys the abandoned handler's frame
}

TEST(HttpShutdownTest, DestroyingARunningServerStopsIt) {
  auto server = start_server(ok);
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send(get_request("/")));
  ASSERT_TRUE(client.read_response());
  const uint16_t port = server->port();
  server.reset();
  EXPECT_TRUE(client.wait_closed(500ms));
  TestClient late(port);
  EXPECT_EQ(late.connect_error(), ECONNREFUSED);
}

TEST(HttpShutdownTest, StopsAServerThatNeverStarted) {
  auto created = HttpServer::create(test_options(), ok);
  ASSERT_TRUE(created.ok());
  auto& server = *created;
  server->stop();
  server->start();  // too late: does nothing
  TestClient client(server->port());
  EXPECT_EQ(client.connect_error(), ECONNREFUSED);
}

}  // namespace
}  // namespace pagoda::server
