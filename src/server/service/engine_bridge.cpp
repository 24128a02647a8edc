#include "server/service/engine_bridge.h"

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace pagoda::server {

// What the engine thread, the strand and the disconnect callback share. Everything is
// guarded by `mutex`; it is held only for queue operations and bookkeeping, never while
// calling out (abort) or posting.
struct EngineBridge::State {
  State(asio::any_io_executor strand_executor, AbortFunction abort_function)
      : strand(std::move(strand_executor)), abort(std::move(abort_function)) {}

  // Runs on the strand: wakes next() if it waits.
  void wake() {
    const std::lock_guard lock(mutex);
    wake_pending = false;
    if (waiter != nullptr) waiter->cancel();
  }

  const asio::any_io_executor strand;
  const AbortFunction abort;

  std::mutex mutex;
  std::deque<engine::RequestOutput> queue;  // produced, not yet taken by next()
  bool wake_pending = false;                // a wake() is posted and has not run yet
  asio::steady_timer* waiter = nullptr;     // the bridge's timer; null once it is gone
  bool aborted = false;
  std::vector<engine::RequestId> tracked;                // every id track() was given
  std::unordered_map<engine::RequestId, bool> finished;  // tracked id -> last output taken
  std::unordered_set<engine::RequestId> finished_early;  // last output taken before track()
  std::size_t n_unfinished = 0;
};

class EngineBridge::Sink final : public engine::RequestSink {
 public:
  explicit Sink(std::shared_ptr<State> state) : state_(std::move(state)) {}

  // On the engine thread: queue the output, and post one wake-up unless one is pending.
  void on_output(engine::RequestOutput output) override {
    {
      const std::lock_guard lock(state_->mutex);
      if (state_->waiter == nullptr) return;  // the exchange is over
      state_->queue.push_back(std::move(output));
      if (state_->wake_pending) return;
      state_->wake_pending = true;
    }
    asio::post(state_->strand, [state = state_] { state->wake(); });
  }

 private:
  std::shared_ptr<State> state_;
};

EngineBridge::EngineBridge(asio::any_io_executor strand, AbortFunction abort)
    : state_(std::make_shared<State>(strand, std::move(abort))),
      sink_(std::make_shared<Sink>(state_)),
      wake_timer_(strand) {
  state_->waiter = &wake_timer_;
}

EngineBridge::~EngineBridge() {
  const std::lock_guard lock(state_->mutex);
  state_->waiter = nullptr;
  state_->queue.clear();
}

std::shared_ptr<engine::RequestSink> EngineBridge::sink() const {
  return sink_;
}

void EngineBridge::track(std::span<const engine::RequestId> ids) {
  bool abort_now = false;
  {
    const std::lock_guard lock(state_->mutex);
    for (const engine::RequestId id : ids) {
      if (state_->finished.contains(id)) continue;  // tracked twice: once is enough
      state_->tracked.push_back(id);
      const bool done = state_->finished_early.erase(id) > 0;
      state_->finished.emplace(id, done);
      if (!done) ++state_->n_unfinished;
    }
    abort_now = state_->aborted;
  }
  if (abort_now) {
    for (const engine::RequestId id : ids) state_->abort(id);
  }
}

asio::awaitable<std::optional<engine::RequestOutput>> EngineBridge::next() {
  while (true) {
    {
      const std::lock_guard lock(state_->mutex);
      if (!state_->queue.empty()) {
        engine::RequestOutput output = std::move(state_->queue.front());
        state_->queue.pop_front();
        if (output.finish != engine::FinishReason::kNone) {
          const auto it = state_->finished.find(output.id);
          if (it == state_->finished.end()) {
            state_->finished_early.insert(output.id);
          } else if (!it->second) {
            it->second = true;
            --state_->n_unfinished;
          }
        }
        co_return output;
      }
      if (state_->n_unfinished == 0) co_return std::nullopt;
    }
    // Nothing queued: sleep until a wake-up cancels the timer. A wake-up posted after
    // the check above runs on this strand only once this wait has started.
    wake_timer_.expires_at(asio::steady_timer::time_point::max());
    boost::system::error_code ignored;
    co_await wake_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    // Woken by a cancellation of the coroutine itself (the server stops and unwinds its
    // handlers), not by an output: end the requests and unwind as Asio operations do.
    const asio::cancellation_state cancellation = co_await asio::this_coro::cancellation_state;
    if (cancellation.cancelled() != asio::cancellation_type::none) {
      abort_all();
      throw boost::system::system_error(asio::error::operation_aborted);
    }
  }
}

void EngineBridge::abort_all() {
  abort_callback()();
}

std::function<void()> EngineBridge::abort_callback() const {
  return [state = state_] {
    std::vector<engine::RequestId> to_abort;
    {
      const std::lock_guard lock(state->mutex);
      if (state->aborted) return;
      state->aborted = true;
      for (const engine::RequestId id : state->tracked) {
        if (!state->finished.at(id)) to_abort.push_back(id);
      }
    }
    for (const engine::RequestId id : to_abort) state->abort(id);
  };
}

bool EngineBridge::aborted() const {
  const std::lock_guard lock(state_->mutex);
  return state_->aborted;
}

std::size_t EngineBridge::n_unfinished() const {
  const std::lock_guard lock(state_->mutex);
  return state_->n_unfinished;
}

}  // namespace pagoda::server
