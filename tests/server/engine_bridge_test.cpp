// EngineBridge with a real io_context (two I/O threads, a strand) and a thread that
// plays the engine: outputs arrive in order, per id, across threads; abort_all reaches
// every id; the engine thread never waits for the consumer.
#include "server/service/engine_bridge.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/system_error.hpp>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace pagoda::server {
namespace {

using engine::FinishReason;
using engine::RequestId;
using engine::RequestOutput;
using namespace std::chrono_literals;

RequestOutput output_of(RequestId id, int32_t token, FinishReason finish = FinishReason::kNone) {
  RequestOutput output;
  output.id = id;
  output.new_tokens = {token};
  output.text = std::to_string(token);
  output.n_generated_tokens = token + 1;
  output.finish = finish;
  return output;
}

// An io_context run by two threads, and a strand on it, as the HTTP server has.
class EngineBridgeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  }
  void TearDown() override {
    work_.reset();
    for (std::thread& t : threads_) t.join();
  }

  // Runs `body` as a coroutine on the strand and waits for its result (10 s at most).
  template <class T>
  T run_on_strand(std::function<asio::awaitable<T>()> body) {
    std::future<T> done = asio::co_spawn(strand_, std::move(body), asio::use_future);
    if (done.wait_for(10s) != std::future_status::ready) {
      ADD_FAILURE() << "the coroutine did not finish";
      std::abort();  // a hung coroutine would hang the fixture's join too
    }
    return done.get();
  }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_ = asio::make_work_guard(io_);
  asio::any_io_executor strand_ = asio::make_strand(io_);
  std::vector<std::thread> threads_;
};

// Everything next() returned, until nullopt.
asio::awaitable<std::vector<RequestOutput>> drain(EngineBridge& bridge) {
  std::vector<RequestOutput> all;
  while (std::optional<RequestOutput> output = co_await bridge.next()) {
    all.push_back(std::move(*output));
  }
  co_return all;
}

TEST_F(EngineBridgeTest, OneRequestsOutputsArriveInOrderAcrossThreads) {
  EngineBridge bridge(strand_, [](RequestId) {});
  constexpr int kTokens = 5000;
  const RequestId id = 7;
  bridge.track(std::span(&id, 1));
  std::thread engine([sink = bridge.sink()] {
    for (int i = 0; i < kTokens; ++i) {
      sink->on_output(
          output_of(7, i, i + 1 == kTokens ? FinishReason::kStop : FinishReason::kNone));
      if (i % 512 == 0) std::this_thread::sleep_for(1ms);  // let the consumer catch up, wait, wake
    }
  });
  const std::vector<RequestOutput> all =
      run_on_strand<std::vector<RequestOutput>>([&] { return drain(bridge); });
  engine.join();
  ASSERT_EQ(all.size(), static_cast<size_t>(kTokens));
  for (int i = 0; i < kTokens; ++i) {
    EXPECT_EQ(all[i].id, 7u);
    ASSERT_EQ(all[i].new_tokens.size(), 1u);
    EXPECT_EQ(all[i].new_tokens[0], i);
    EXPECT_EQ(all[i].text, std::to_string(i));
  }
  EXPECT_EQ(all.back().finish, FinishReason::kStop);
  EXPECT_EQ(bridge.n_unfinished(), 0u);
}

TEST_F(EngineBridgeTest, SeveralIdsKeepTheirOwnOrderAndAllMustFinish) {
  EngineBridge bridge(strand_, [](RequestId) {});
  const std::vector<RequestId> ids = {11, 12, 13};
  bridge.track(ids);
  // Id 11 finishes first, 13 last; their outputs interleave on the engine thread.
  const std::map<RequestId, int> lengths = {{11, 40}, {12, 200}, {13, 300}};
  std::thread engine([&, sink = bridge.sink()] {
    for (int step = 0; step < 300; ++step) {
      for (const auto& [id, length] : lengths) {
        if (step >= length) continue;
        sink->on_output(
            output_of(id, step, step + 1 == length ? FinishReason::kLength : FinishReason::kNone));
      }
    }
  });
  const std::vector<RequestOutput> all =
      run_on_strand<std::vector<RequestOutput>>([&] { return drain(bridge); });
  engine.join();
  std::map<RequestId, std::vector<int32_t>> per_id;
  for (const RequestOutput& o : all) per_id[o.id].push_back(o.new_tokens[0]);
  ASSERT_EQ(per_id.size(), 3u);
  for (const auto& [id, length] : lengths) {
    ASSERT_EQ(per_id[id].size(), static_cast<size_t>(length)) << id;
    for (int i = 0; i < length; ++i) EXPECT_EQ(per_id[id][i], i) << id;
  }
  EXPECT_EQ(all.back().id, 13u);
  EXPECT_EQ(all.back().finish, FinishReason::kLength);
}

TEST_F(EngineBridgeTest, OutputsBeforeTrackingAreKept) {
  EngineBridge bridge(strand_, [](RequestId) {});
  // The engine may answer before Engine::add has even returned the ids.
  bridge.sink()->on_output(output_of(3, 0));
  bridge.sink()->on_output(output_of(3, 1, FinishReason::kStop));
  const RequestId id = 3;
  bridge.track(std::span(&id, 1));
  const std::vector<RequestOutput> all =
      run_on_strand<std::vector<RequestOutput>>([&] { return drain(bridge); });
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].finish, FinishReason::kStop);
}

TEST_F(EngineBridgeTest, NothingTrackedEndsAtOnce) {
  EngineBridge bridge(strand_, [](RequestId) {});
  const std::vector<RequestOutput> all =
      run_on_strand<std::vector<RequestOutput>>([&] { return drain(bridge); });
  EXPECT_TRUE(all.empty());
}

// A fake engine: abort(id) queues a last kAbort output from the engine thread, as
// Engine::abort does at the next step.
class AbortingEngine {
 public:
  void set_sink(std::shared_ptr<engine::RequestSink> sink) { sink_ = std::move(sink); }
  void abort(RequestId id) {
    const std::lock_guard lock(mutex_);
    aborted_.push_back(id);
    pending_.push_back(id);
  }
  // One "step": answers the aborts received so far.
  void step() {
    std::vector<RequestId> now;
    {
      const std::lock_guard lock(mutex_);
      now.swap(pending_);
    }
    for (const RequestId id : now) sink_->on_output(output_of(id, 99, FinishReason::kAbort));
  }
  std::vector<RequestId> aborted() {
    const std::lock_guard lock(mutex_);
    return aborted_;
  }

 private:
  std::mutex mutex_;
  std::shared_ptr<engine::RequestSink> sink_;
  std::vector<RequestId> aborted_;
  std::vector<RequestId> pending_;
};

TEST_F(EngineBridgeTest, AbortAllFromAnotherThreadEndsEveryTrackedId) {
  AbortingEngine fake;
  EngineBridge bridge(strand_, [&](RequestId id) { fake.abort(id); });
  fake.set_sink(bridge.sink());
  const std::vector<RequestId> ids = {21, 22};
  bridge.track(ids);
  bridge.sink()->on_output(output_of(21, 0));
  std::atomic<bool> stop{false};
  std::thread engine([&] {
    while (!stop) {
      fake.step();
      std::this_thread::sleep_for(1ms);
    }
  });
  // The disconnect callback fires on some I/O thread while the coroutine waits.
  std::function<void()> on_disconnect = bridge.abort_callback();
  std::thread io_thread([&] {
    std::this_thread::sleep_for(20ms);
    on_disconnect();
    on_disconnect();  // at most once in practice; harmless twice
  });
  const std::vector<RequestOutput> all =
      run_on_strand<std::vector<RequestOutput>>([&] { return drain(bridge); });
  io_thread.join();
  stop = true;
  engine.join();
  EXPECT_TRUE(bridge.aborted());
  EXPECT_EQ(fake.aborted(), ids);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].new_tokens[0], 0);
  EXPECT_EQ(all[1].finish, FinishReason::kAbort);
  EXPECT_EQ(all[2].finish, FinishReason::kAbort);
}

TEST_F(EngineBridgeTest, IdsTrackedAfterAbortAreAbortedAtOnce) {
  std::vector<RequestId> aborted;
  EngineBridge bridge(strand_, [&](RequestId id) { aborted.push_back(id); });
  bridge.abort_all();
  const std::vector<RequestId> ids = {5, 6};
  bridge.track(ids);
  EXPECT_EQ(aborted, ids);
  bridge.abort_all();  // idempotent
  EXPECT_EQ(aborted, ids);
}

TEST_F(EngineBridgeTest, FinishedIdsAreNotAbortedAgain) {
  std::vector<RequestId> aborted;
  EngineBridge bridge(strand_, [&](RequestId id) { aborted.push_back(id); });
  const std::vector<RequestId> ids = {1, 2};
  bridge.track(ids);
  bridge.sink()->on_output(output_of(1, 0, FinishReason::kStop));
  const std::optional<RequestOutput> first = run_on_strand<std::optional<RequestOutput>>(
      [&]() -> asio::awaitable<std::optional<RequestOutput>> { co_return co_await bridge.next(); });
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(bridge.n_unfinished(), 1u);
  bridge.abort_all();
  EXPECT_EQ(aborted, std::vector<RequestId>{2});
}

TEST_F(EngineBridgeTest, TheEngineThreadNeverWaitsForABusyConsumer) {
  EngineBridge bridge(strand_, [](RequestId) {});
  const RequestId id = 1;
  bridge.track(std::span(&id, 1));
  // Occupy the strand until the engine thread has pushed everything: if a push waited
  // for the consumer, this would never finish.
  std::promise<void> pushed;
  std::shared_future<void> strand_free = pushed.get_future().share();
  asio::post(strand_, [f = strand_free] { f.wait_for(10s); });
  constexpr int kTokens = 20000;
  std::thread engine([&, sink = bridge.sink()] {
    for (int i = 0; i < kTokens; ++i) {
      sink->on_output(
          output_of(1, i, i + 1 == kTokens ? FinishReason::kStop : FinishReason::kNone));
    }
    pushed.set_value();
  });
  ASSERT_EQ(strand_free.wait_for(5s), std::future_status::ready);
  engine.join();
  const std::vector<RequestOutput> all =
      run_on_strand<std::vector<RequestOutput>>([&] { return drain(bridge); });
  EXPECT_EQ(all.size(), static_cast<size_t>(kTokens));
}

TEST_F(EngineBridgeTest, TheSinkOutlivesTheBridgeSafely) {
  std::shared_ptr<engine::RequestSink> sink;
  {
    EngineBridge bridge(strand_, [](RequestId) {});
    sink = bridge.sink();
    sink->on_output(output_of(1, 0));  // posts a wake-up that may run after the bridge
  }
  for (int i = 1; i < 100; ++i) sink->on_output(output_of(1, i));  // dropped
  // Let any posted wake-up run against the detached state.
  std::promise<void> ran;
  asio::post(strand_, [&] { ran.set_value(); });
  EXPECT_EQ(ran.get_future().wait_for(5s), std::future_status::ready);
}

TEST_F(EngineBridgeTest, CancellingTheWaitingCoroutineAbortsAndUnwinds) {
  std::atomic<int> n_aborted{0};
  EngineBridge bridge(strand_, [&](RequestId) { ++n_aborted; });
  const std::vector<RequestId> ids = {4, 5};
  bridge.track(ids);
  asio::cancellation_signal cancel;
  std::promise<std::exception_ptr> ended;
  asio::co_spawn(strand_, drain(bridge),
                 asio::bind_cancellation_slot(
                     cancel.slot(), [&](std::exception_ptr error, std::vector<RequestOutput>) {
                       ended.set_value(error);
                     }));
  std::this_thread::sleep_for(20ms);  // it waits for outputs that never come
  asio::post(strand_, [&] { cancel.emit(asio::cancellation_type::terminal); });
  std::future<std::exception_ptr> done = ended.get_future();
  ASSERT_EQ(done.wait_for(5s), std::future_status::ready);
  const std::exception_ptr error = done.get();
  ASSERT_TRUE(error);
  try {
    std::rethrow_exception(error);
  } catch (const boost::system::system_error& e) {
    EXPECT_EQ(e.code(), asio::error::operation_aborted);
  }
  EXPECT_EQ(n_aborted.load(), 2);
  EXPECT_TRUE(bridge.aborted());
}

}  // namespace
}  // namespace pagoda::server
