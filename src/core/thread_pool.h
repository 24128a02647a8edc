#pragma once
// A fixed pool of worker threads for the CPU kernels. A forward pass runs hundreds of
// small ops per token, each split over the threads, so handing out work must cost far
// less than a futex round trip: between jobs the workers spin on a generation counter
// for a while (long enough to bridge the gap between two ops), and only then sleep.
// The thread that calls parallel_for works too (it is thread 0) and returns once every
// task is done. A call allocates nothing.
//
// One thread at a time may call parallel_for (the engine's step thread); calls do not
// nest. Tasks must not throw.

#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

namespace pagoda {

// Physical cores this process may run on: the distinct cores (per the sysfs CPU
// topology) among the CPUs of its affinity mask; std::thread::hardware_concurrency()
// where that cannot be read; never less than 1.
int physical_core_count();

class ThreadPool {
 public:
  // n_threads counts the calling thread: n_threads - 1 workers are started. Values
  // below 1 are taken as 1 (no workers; parallel_for runs inline).
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Runs fn(task, thread) for every task in [0, n_tasks), spread over the threads
  // (`thread` in [0, size())). Tasks are handed out one by one from a shared counter,
  // so uneven tasks balance themselves; `thread` indexes per-thread scratch.
  template <typename Fn>
  void parallel_for(int64_t n_tasks, Fn&& fn) {
    using F = std::remove_reference_t<Fn>;
    run(n_tasks, &fn, [](void* f, int64_t task, int thread) { (*static_cast<F*>(f))(task, thread); });
  }

 private:
  using Trampoline = void (*)(void* fn, int64_t task, int thread);

  void run(int64_t n_tasks, void* fn, Trampoline call);
  void worker_loop(int thread);
  void run_tasks(int thread);
  bool join(uint32_t generation);

  int n_threads_;
  // The job being run: written by the caller before it bumps `generation_`.
  void* job_fn_ = nullptr;
  Trampoline job_call_ = nullptr;
  int64_t job_tasks_ = 0;

  alignas(64) std::atomic<int64_t> next_task_{0};
  alignas(64) std::atomic<uint32_t> generation_{0};  // bumped once per job (and at stop)
  // Who works on the current job: (generation << 32) | closed bit | workers inside it. A
  // worker joins only while the job is open; the caller closes it when it runs out of
  // tasks and then waits for the joined workers alone, never for one that is asleep or
  // descheduled (which matters when the machine has fewer free cores than threads).
  alignas(64) std::atomic<uint64_t> membership_{0};
  alignas(64) std::atomic<int> sleepers_{0};  // workers blocked in a futex wait
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace pagoda
