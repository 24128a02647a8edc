#pragma once
// When each request of a run is sent. With a finite rate R the arrivals form a
// Poisson process: the gaps between sends are independent exponential draws of mean
// 1/R seconds, the first request going out at once (as vLLM's benchmark does). The
// draws come from std::mt19937_64 (whose output the C++ standard fixes) through our
// own inverse-CDF transform, so a seed gives the same schedule on every platform.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"

namespace pagoda::loadgen {

// Send times in seconds after the start of the run, ascending: [n]. A rate of
// +infinity sends every request at time 0; a rate that is not > 0 is an error.
Expected<std::vector<double>> poisson_arrival_offsets(size_t n, double requests_per_second,
                                                      uint64_t seed);

// One exponential draw of mean 1 from a 64-bit uniform word: -ln(u) with u in (0, 1]
// made of the word's top 53 bits. Exposed for tests.
double unit_exponential(uint64_t random_word);

}  // namespace pagoda::loadgen
