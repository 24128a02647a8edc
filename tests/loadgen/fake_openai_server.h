#pragma once
// A small OpenAI-compatible server for the load generator's tests, on Beast: it
// streams a fixed text, one token per server-sent event, after fixed delays, so the
// client's counts and timings can be checked against known values. It runs on its
// own thread and counts what it saw.

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pagoda::loadgen::testing {

struct FakeServerOptions {
  std::string model = "fake-model";
  std::chrono::milliseconds first_token_delay{20};  // request received -> first token
  std::chrono::milliseconds token_delay{5};         // between later tokens
  bool send_usage = true;            // a usage chunk when stream_options.include_usage
  bool has_tokenize = true;          // POST /tokenize counts words; else 404
  // /tokenize's text field: "prompt" (Pagoda, vLLM: a body with "content" too is a 400,
  // as Pagoda answers it) or "content" (llama-server: a body without it is a 400).
  std::string tokenize_field = "prompt";
  int fail_every = 0;                // every n-th completion request gets a 503 (0: none)
  std::string api_key;               // required as a Bearer token when not empty
  bool drop_after_response = false;  // close each connection after its response, unannounced
  bool crlf = false;                 // end event lines with "\r\n" instead of "\n"
};

class FakeOpenAiServer {
 public:
  explicit FakeOpenAiServer(FakeServerOptions options = {});
  ~FakeOpenAiServer();
  FakeOpenAiServer(const FakeOpenAiServer&) = delete;
  FakeOpenAiServer& operator=(const FakeOpenAiServer&) = delete;

  uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  int connections_accepted() const { return connections_.load(); }
  int completion_requests() const { return completions_.load(); }
  int tokenize_requests() const { return tokenizes_.load(); }
  int peak_streams() const { return peak_streams_.load(); }  // most generating at once
  std::vector<std::string> completion_bodies() const;        // as received, in order

  struct Session;  // one connection (defined in the .cpp)

 private:
  FakeServerOptions options_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<int> connections_{0}, completions_{0}, tokenizes_{0}, streams_{0}, peak_streams_{0};
  mutable std::mutex mutex_;
  std::vector<std::string> bodies_;
};

}  // namespace pagoda::loadgen::testing
