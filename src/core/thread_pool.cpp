#include "core/thread_pool.h"

#include <sched.h>

#include <chrono>
#include <fstream>
#include <set>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace pagoda {
namespace {

// How long an idle worker polls before it sleeps: enough to cover the gap between the
// ops of one forward pass (a few microseconds of single-threaded work), not the wait for
// the next token or request, and short enough that a machine with more threads than
// cores (tests run side by side) loses little to workers with nothing to do. Measured on
// the clock, because a pause instruction lasts from ~10 to ~140 cycles across CPUs.
constexpr std::chrono::microseconds kSpinTime{100};
// Pauses between two looks at the clock while spinning (reading it costs ~20 ns).
constexpr int kPausesPerClockRead = 32;
// Rounds the caller spins on its workers' finishing before it yields its core.
constexpr int kSpinRounds = 1 << 14;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// The CPUs sharing a core with `cpu`, as sysfs lists them ("0,64" or "0-1"): two CPUs
// with the same list are hyper-threads of one physical core.
std::string core_siblings(int cpu) {
  const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
  for (const char* name : {"core_cpus_list", "thread_siblings_list"}) {
    std::ifstream in(base + name);
    std::string line;
    if (in && std::getline(in, line) && !line.empty()) return line;
  }
  return {};
}

}  // namespace

int physical_core_count() {
  const int fallback = static_cast<int>(std::thread::hardware_concurrency());
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0) return fallback > 0 ? fallback : 1;
  std::set<std::string> cores;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &mask)) continue;
    std::string siblings = core_siblings(cpu);
    if (siblings.empty()) return CPU_COUNT(&mask);  // no topology: count logical CPUs
    cores.insert(std::move(siblings));
  }
  if (!cores.empty()) return static_cast<int>(cores.size());
  return fallback > 0 ? fallback : 1;
}

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
  threads_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int t = 1; t < n_threads_; ++t) threads_.emplace_back([this, t] { worker_loop(t); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  generation_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ThreadPool::run_tasks(int thread) {
  for (;;) {
    const int64_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= job_tasks_) return;
    job_call_(job_fn_, task, thread);
  }
}

namespace {
constexpr uint64_t kClosed = uint64_t{1} << 31;
constexpr uint64_t kMembers = kClosed - 1;
}  // namespace

void ThreadPool::run(int64_t n_tasks, void* fn, Trampoline call) {
  if (n_tasks <= 0) return;
  if (n_threads_ == 1 || n_tasks == 1) {
    for (int64_t task = 0; task < n_tasks; ++task) call(fn, task, 0);
    return;
  }
  job_fn_ = fn;
  job_call_ = call;
  job_tasks_ = n_tasks;
  next_task_.store(0, std::memory_order_relaxed);
  const uint32_t generation = generation_.load(std::memory_order_relaxed) + 1;
  membership_.store(static_cast<uint64_t>(generation) << 32, std::memory_order_release);
  // seq_cst pairs with the workers' sleepers_ increment: either we see a sleeper and
  // wake it, or it sees the new generation before it blocks.
  generation_.store(generation, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) generation_.notify_all();

  run_tasks(0);
  membership_.fetch_or(kClosed, std::memory_order_acq_rel);
  // The job's callable lives on our stack: wait until no joined worker can touch it.
  for (int spins = 0; (membership_.load(std::memory_order_acquire) & kMembers) != 0; ++spins) {
    if (spins < kSpinRounds) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
}

bool ThreadPool::join(uint32_t generation) {
  uint64_t state = membership_.load(std::memory_order_acquire);
  for (;;) {
    if ((state >> 32) != generation || (state & kClosed) != 0) return false;
    if (membership_.compare_exchange_weak(state, state + 1, std::memory_order_acq_rel,
                                          std::memory_order_acquire)) {
      return true;
    }
  }
}

void ThreadPool::worker_loop(int thread) {
  // Generation 0 is the pool's start: a job (or the stop) posted before this thread got
  // here has already moved it on, and is seen below.
  uint32_t seen = 0;
  for (;;) {
    uint32_t now = seen;
    const auto spin_until = std::chrono::steady_clock::now() + kSpinTime;
    for (int spins = 1;; ++spins) {
      now = generation_.load(std::memory_order_acquire);
      if (now != seen) break;
      cpu_relax();
      if (spins % kPausesPerClockRead == 0 && std::chrono::steady_clock::now() >= spin_until) break;
    }
    while (now == seen) {
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      generation_.wait(seen, std::memory_order_seq_cst);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      now = generation_.load(std::memory_order_acquire);
    }
    seen = now;
    if (stop_.load(std::memory_order_acquire)) return;
    if (!join(now)) continue;  // the job finished without us
    run_tasks(thread);
    membership_.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace pagoda
