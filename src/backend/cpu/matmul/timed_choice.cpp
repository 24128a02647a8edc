#include "backend/cpu/matmul/timed_choice.h"

namespace pagoda::backend::cpu {

bool TimedChoice::second() {
  const uint64_t call = calls_++;
  if (samples_[0] < kFirstSamples || samples_[1] < kFirstSamples) return call % 2 == 1;
  const bool preferred = prefers_second();
  const double ratio = seconds_per_byte_[preferred ? 0 : 1] / seconds_per_byte_[preferred ? 1 : 0];
  const uint64_t every = ratio > kFarRatio ? kExploreEveryFar : kExploreEvery;
  return call % every == 0 ? !preferred : preferred;
}

void TimedChoice::record(bool second, double seconds, size_t bytes) {
  if (bytes == 0 || !(seconds >= 0.0)) return;
  const int way = second ? 1 : 0;
  const double sample = seconds / static_cast<double>(bytes);
  // The first samples average plainly, so that one slow first call (a cold cache, the
  // kept copy's repacking) weighs no more than the others.
  const int64_t n = ++samples_[way];
  const double weight = n <= kFirstSamples ? 1.0 / static_cast<double>(n) : kNewSampleWeight;
  seconds_per_byte_[way] += weight * (sample - seconds_per_byte_[way]);
}

bool TimedChoice::prefers_second() const {
  if (samples_[0] < kFirstSamples || samples_[1] < kFirstSamples) return false;
  return seconds_per_byte_[1] < seconds_per_byte_[0];
}

}  // namespace pagoda::backend::cpu
