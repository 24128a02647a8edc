#pragma once
// The machine's streaming read bandwidth as the CPU backend's threads see it: what a
// decoding step, which reads every weight once, is bound by (Backend::
// measure_memory_bandwidth; `pagoda bench` compares tg speeds with it).

#include <cstddef>
#include <optional>

#include "core/thread_pool.h"

namespace pagoda::backend::cpu {

// Bytes read per second when the pool's threads each stream their share of a `bytes`
// buffer (far larger than the caches; huge pages where the kernel gives them), the best
// of several passes after one that touches it. nullopt when the buffer cannot be had.
std::optional<double> measure_read_bandwidth(ThreadPool& pool, size_t bytes);

}  // namespace pagoda::backend::cpu
