#pragma once
// SIGTERM and SIGINT for `pagoda serve`, handled on a thread of their own with
// sigwait(): the signals are blocked in every thread (block them before any other
// thread starts, so that the I/O, engine and CPU threads inherit the mask), and that
// thread turns them into a plain state others wait on. No async-signal-safety puzzles.
//
// The first signal asks for a graceful stop; a second one asks to stop now (skip what
// is left of the grace period).

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace pagoda::cli {

class ShutdownSignals {
 public:
  // Blocks SIGTERM and SIGINT in the calling thread (and so in every thread it starts
  // from now on), and starts the waiting thread.
  ShutdownSignals();
  ~ShutdownSignals();  // stops the waiting thread; the signals stay blocked
  ShutdownSignals(const ShutdownSignals&) = delete;
  ShutdownSignals& operator=(const ShutdownSignals&) = delete;

  // Waits for the first signal.
  void wait();
  // Waits until `deadline` or a second signal; returns true for the latter.
  bool wait_forced(std::chrono::steady_clock::time_point deadline);

  bool requested() const;  // a signal came
  bool forced() const;     // a second one came
  int first_signal() const;

 private:
  void run();

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  int n_signals_ = 0;
  int first_signal_ = 0;
  bool stopping_ = false;  // the destructor wakes the thread with its own signal
  std::thread thread_;
};

}  // namespace pagoda::cli
