#include "cli/serve_signals.h"

#include <csignal>

namespace pagoda::cli {
namespace {

sigset_t shutdown_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

ShutdownSignals::ShutdownSignals() {
  const sigset_t set = shutdown_signal_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  thread_ = std::thread([this] { run(); });
}

ShutdownSignals::~ShutdownSignals() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  // The signal is blocked everywhere, so it can only be taken by the thread's sigwait.
  pthread_kill(thread_.native_handle(), SIGTERM);
  thread_.join();
}

void ShutdownSignals::run() {
  const sigset_t set = shutdown_signal_set();
  while (true) {
    int signal = 0;
    if (sigwait(&set, &signal) != 0) continue;
    const std::lock_guard lock(mutex_);
    if (stopping_) return;
    if (n_signals_++ == 0) first_signal_ = signal;
    changed_.notify_all();
  }
}

void ShutdownSignals::wait() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return n_signals_ > 0; });
}

bool ShutdownSignals::wait_forced(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  return changed_.wait_until(lock, deadline, [this] { return n_signals_ > 1; });
}

bool ShutdownSignals::requested() const {
  const std::lock_guard lock(mutex_);
  return n_signals_ > 0;
}

bool ShutdownSignals::forced() const {
  const std::lock_guard lock(mutex_);
  return n_signals_ > 1;
}

int ShutdownSignals::first_signal() const {
  const std::lock_guard lock(mutex_);
  return first_signal_;
}

}  // namespace pagoda::cli
