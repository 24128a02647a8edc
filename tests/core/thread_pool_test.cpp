#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace pagoda {
namespace {

using namespace std::chrono_literals;

// Waits until `count` reaches `target` or the deadline passes; returns whether it did.
bool wait_for_count(const std::atomic<int>& count, int target, std::chrono::steady_clock::time_point deadline) {
  while (count.load(std::memory_order_acquire) < target) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

TEST(ThreadPool, RunsEveryTaskExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    std::vector<std::atomic<int>> hits(1000);
    std::atomic<bool> bad_thread{false};
    pool.parallel_for(1000, [&](int64_t task, int thread) {
      if (thread < 0 || thread >= threads) bad_thread = true;
      hits[static_cast<size_t>(task)].fetch_add(1);
    });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
    EXPECT_FALSE(bad_thread.load());
  }
}

TEST(ThreadPool, ManySmallJobsBackToBack) {
  ThreadPool pool(4);
  int64_t total = 0;
  std::vector<int64_t> per_task(7);
  for (int job = 0; job < 20000; ++job) {
    pool.parallel_for(7, [&](int64_t task, int) { per_task[static_cast<size_t>(task)] = task + job; });
    for (int64_t v : per_task) total += v;
  }
  // sum over jobs of (0 + ... + 6) + 7 * job
  EXPECT_EQ(total, 20000LL * 21 + 7LL * (20000LL * 19999 / 2));
}

TEST(ThreadPool, ZeroTasksAndNonPositiveThreadCounts) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.size(), 1);
  int calls = 0;
  pool.parallel_for(0, [&](int64_t, int) { ++calls; });
  pool.parallel_for(3, [&](int64_t, int thread) { calls += 1 + thread; });
  EXPECT_EQ(calls, 3);
}

TEST(ThreadPool, WorkersRunConcurrently) {
  // Two tasks that each wait for the other to start can only finish on two threads.
  ThreadPool pool(2);
  std::atomic<int> started{0};
  std::atomic<bool> timed_out{false};
  pool.parallel_for(2, [&](int64_t, int) {
    started.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (started.load() < 2) {
      if (std::chrono::steady_clock::now() > deadline) {
        timed_out = true;
        return;
      }
    }
  });
  EXPECT_FALSE(timed_out.load());
}

// A job of as many tasks as threads whose tasks wait for one another: it finishes only
// if every worker wakes (from its sleep too) and joins, since the caller, busy with the
// first task, cannot take the others.
TEST(ThreadPool, EveryWorkerJoinsAJob) {
  constexpr int kThreads = 4;
  ThreadPool pool(kThreads);
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(5ms);  // the workers stop spinning and sleep
    std::atomic<int> arrived{0};
    std::vector<int> thread_of(kThreads, -1);
    std::atomic<bool> all_met{true};
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    pool.parallel_for(kThreads, [&](int64_t task, int thread) {
      thread_of[static_cast<size_t>(task)] = thread;
      arrived.fetch_add(1, std::memory_order_acq_rel);
      if (!wait_for_count(arrived, kThreads, deadline)) all_met = false;
    });
    ASSERT_TRUE(all_met) << "round " << round << ": the tasks did not all run at once (a worker did not join)";
    std::vector<int> sorted = thread_of;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<int>{0, 1, 2, 3})) << "round " << round;
  }
}

TEST(ThreadPool, WakesAfterSleeping) {
  ThreadPool pool(3);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // workers are asleep by now
  std::atomic<int> sum{0};
  pool.parallel_for(100, [&](int64_t task, int) { sum.fetch_add(static_cast<int>(task)); });
  EXPECT_EQ(sum.load(), 4950);
}

TEST(ThreadPool, PhysicalCoreCountIsPositive) { EXPECT_GE(physical_core_count(), 1); }

}  // namespace
}  // namespace pagoda
