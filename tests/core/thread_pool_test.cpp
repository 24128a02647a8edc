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

TEST(ThreadPool, BelowOneThreadIsOneAndRunsInline) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.size(), 1);
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<int> threads;
  pool.parallel_for(5, [&](int64_t task, int thread) {
    EXPECT_EQ(std::this_thread::get_id(), caller) << "task " << task;
    threads.push_back(thread);
  });
  EXPECT_EQ(threads, std::vector<int>(5, 0));
}

// Job after job of every size from none to many more tasks than threads, some right
// after another (the workers still spinning), some after a pause long enough for them to
// sleep: each task runs exactly once, on a thread index in range, and every result is
// written before parallel_for returns (plain writes, read by the caller afterwards).
TEST(ThreadPool, EveryTaskRunsOnceBeforeTheCallReturns) {
  ThreadPool pool(4);
  std::vector<int> runs(64);
  std::vector<int64_t> results(64);
  for (int job = 0; job < 600; ++job) {
    const int64_t n_tasks = job % 41;
    std::fill(runs.begin(), runs.end(), 0);
    std::vector<std::atomic<int>> ran(static_cast<size_t>(n_tasks));
    pool.parallel_for(n_tasks, [&](int64_t task, int thread) {
      ASSERT_GE(thread, 0);
      ASSERT_LT(thread, pool.size());
      ran[static_cast<size_t>(task)].fetch_add(1, std::memory_order_relaxed);
      results[static_cast<size_t>(task)] = task * 1000 + job;
    });
    for (int64_t task = 0; task < n_tasks; ++task) {
      ASSERT_EQ(ran[static_cast<size_t>(task)].load(), 1) << "job " << job << " task " << task;
      ASSERT_EQ(results[static_cast<size_t>(task)], task * 1000 + job) << "job " << job;
    }
    if (job % 50 == 0) std::this_thread::sleep_for(2ms);  // past the workers' spin: they sleep
  }
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

// Many two-task jobs on a pool of more threads than this machine's cores: the caller
// closes each job when it runs out of tasks and waits only for the workers that joined,
// so the sleeping or descheduled ones never hold it up, and the sums come out whole.
TEST(ThreadPool, ManySmallJobsOnMoreThreadsThanCores) {
  ThreadPool pool(8);
  int64_t sum = 0;
  for (int job = 0; job < 2000; ++job) {
    std::atomic<int64_t> job_sum{0};
    pool.parallel_for(2, [&](int64_t task, int) { job_sum.fetch_add(task + 1, std::memory_order_relaxed); });
    sum += job_sum.load();
  }
  EXPECT_EQ(sum, 2000 * 3);
}

TEST(ThreadPool, DestroysPromptlyWhileWorkersSleepOrSpin) {
  for (int i = 0; i < 20; ++i) {
    ThreadPool pool(3);
    std::atomic<int> n{0};
    pool.parallel_for(7, [&](int64_t, int) { n.fetch_add(1); });
    EXPECT_EQ(n.load(), 7);
    if (i % 2 == 0) std::this_thread::sleep_for(1ms);
  }
}

}  // namespace
}  // namespace pagoda
