#include "loadgen/load_runner.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "loadgen/arrival_schedule.h"
#include "loadgen/http_client.h"

namespace pagoda::loadgen {
namespace {

constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);

// The state one run shares between its dispatcher and its request coroutines, all on
// one thread. A timer that never expires by itself serves as the dispatcher's wake-up
// signal: cancel() wakes a pending wait, and the dispatcher re-checks its condition.
class LoadRun {
 public:
  LoadRun(asio::io_context& io, const ServerTarget& server, const std::vector<BenchPrompt>& prompts,
          const RunOptions& options)
      : client_(io.get_executor(), server.url, server.api_key),
        prompts_(prompts),
        options_(options),
        wake_(io) {
    result_.records.resize(prompts.size());
  }

  asio::awaitable<void> dispatch(std::vector<double> send_offsets) {
    start_ = Clock::now();
    report_progress();
    asio::steady_timer arrival(co_await asio::this_coro::executor);
    const size_t cap = options_.concurrency > 0 ? options_.concurrency : prompts_.size();
    for (size_t i = 0; i < prompts_.size(); ++i) {
      arrival.expires_at(start_ + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(send_offsets[i])));
      co_await arrival.async_wait(kNoThrow);
      while (in_flight_ >= cap) co_await wait_for_wake();
      ++in_flight_;
      asio::co_spawn(arrival.get_executor(), send(i), asio::detached);
    }
    while (in_flight_ > 0) co_await wait_for_wake();
    result_.duration_s = std::chrono::duration<double>(Clock::now() - start_).count();
    result_.connections_opened = client_.connections_opened();
  }

  RunResult take_result() { return std::move(result_); }

 private:
  asio::awaitable<void> send(size_t index) {
    RequestRecord record = co_await run_request(client_, options_.request, prompts_[index], start_);
    if (!record.success) ++failed_;
    result_.records[index] = std::move(record);
    ++finished_;
    --in_flight_;
    report_progress();
    wake_.cancel();
  }

  asio::awaitable<void> wait_for_wake() {
    wake_.expires_at(Clock::time_point::max());
    co_await wake_.async_wait(kNoThrow);
  }

  void report_progress() const {
    if (!options_.on_progress) return;
    options_.on_progress(RunProgress{prompts_.size(), finished_, failed_,
                                     std::chrono::duration<double>(Clock::now() - start_).count()});
  }

  HttpClient client_;
  const std::vector<BenchPrompt>& prompts_;
  const RunOptions& options_;
  asio::steady_timer wake_;
  Clock::time_point start_;
  size_t in_flight_ = 0, finished_ = 0, failed_ = 0;
  RunResult result_;
};

}  // namespace

Expected<RunResult> run_load(const ServerTarget& server, const std::vector<BenchPrompt>& prompts,
                             const RunOptions& options) {
  PAGODA_ASSIGN_OR_RETURN(
      std::vector<double> offsets,
      poisson_arrival_offsets(prompts.size(), options.request_rate, options.seed));
  asio::io_context io(1);
  LoadRun run(io, server, prompts, options);
  asio::co_spawn(io, run.dispatch(std::move(offsets)), asio::detached);
  io.run();
  return run.take_result();
}

}  // namespace pagoda::loadgen
