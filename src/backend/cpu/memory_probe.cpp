#include "backend/cpu/memory_probe.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "backend/cpu/aligned_memory.h"

namespace pagoda::backend::cpu {
namespace {

constexpr int kPasses = 5;

// The XOR of every word of [begin, end), eight independent lanes so that the loads are
// not serialised behind one dependency chain (the compiler widens them to vectors).
uint64_t xor_words(const uint64_t* begin, const uint64_t* end) {
  uint64_t lanes[8] = {};
  for (; begin + 8 <= end; begin += 8) {
    for (int i = 0; i < 8; ++i) lanes[i] ^= begin[i];
  }
  uint64_t all = 0;
  for (const uint64_t lane : lanes) all ^= lane;
  for (; begin < end; ++begin) all ^= *begin;
  return all;
}

}  // namespace

std::optional<double> measure_read_bandwidth(ThreadPool& pool, size_t bytes) {
  const size_t n_words = bytes / sizeof(uint64_t);
  if (n_words == 0) return std::nullopt;
  AlignedPtr buffer = allocate_aligned(n_words * sizeof(uint64_t));
  if (buffer == nullptr) return std::nullopt;
  auto* words = reinterpret_cast<uint64_t*>(buffer.get());
  // Chunks of a few MiB handed out to the threads as they come, so that a thread that
  // starts late does not leave the others' share of the time to one thread.
  const int64_t n_chunks = 64 * static_cast<int64_t>(pool.size());
  const size_t share = (n_words + static_cast<size_t>(n_chunks) - 1) / static_cast<size_t>(n_chunks);
  auto range = [&](int64_t task) {
    const size_t first = std::min(n_words, static_cast<size_t>(task) * share);
    return std::pair{words + first, words + std::min(n_words, first + share)};
  };
  pool.parallel_for(n_chunks, [&](int64_t task, int) {
    const auto [begin, end] = range(task);
    for (uint64_t* w = begin; w < end; ++w) *w = static_cast<uint64_t>(w - words) * 0x9E3779B97F4A7C15ull;
  });
  std::atomic<uint64_t> sink{0};  // the reads' result goes somewhere: they are not dropped
  double best_seconds = 0.0;
  for (int pass = 0; pass < kPasses; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    pool.parallel_for(n_chunks, [&](int64_t task, int) {
      const auto [begin, end] = range(task);
      sink.fetch_xor(xor_words(begin, end), std::memory_order_relaxed);
    });
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (pass == 0 || seconds < best_seconds) best_seconds = seconds;
  }
  if (best_seconds <= 0.0) return std::nullopt;
  return static_cast<double>(n_words * sizeof(uint64_t)) / best_seconds;
}

}  // namespace pagoda::backend::cpu
