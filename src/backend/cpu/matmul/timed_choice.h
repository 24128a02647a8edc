#pragma once
// Which of two ways of running the same matmul is faster here and now, from the times
// the calls themselves take. Both ways must give the same bits: the choice changes how
// long a call takes, never its result.
//
// Used for single tokens of the weight types whose kept copy (TileKernel::repack) can
// serve them (TileKernel::kept_for_single_tokens_when_faster, Q4_K): the rows as stored are
// the fewest bytes and win when the memory is the bound (a machine whose other tenants
// load the memory bus), the kept copy costs fewer instructions and wins when the cores
// are (a quiet machine, or one whose cores are shared). And for tiles of a few tokens
// where two kernels give the same bits (find_timed_alternative: the k-quants on the AMX
// tile unit or on the VNNI strips), whose order differs from one CPU to another. Which
// holds changes while a server runs, so the choice keeps measuring: each way's cost per
// byte is a moving average over its recent calls, the cheaper one runs, and one call in
// kExploreEvery takes the other so that its average stays current; one in
// kExploreEveryFar while the other costs more than kFarRatio times as much, where each
// call that tries it costs most. The matmul keeps one per weight (and token-count
// class): costs per byte differ between matrices, and a choice shared by several would
// compare them.

#include <cstddef>
#include <cstdint>

namespace pagoda::backend::cpu {

class TimedChoice {
 public:
  // Calls each way takes, alternating, before the averages decide.
  static constexpr int64_t kFirstSamples = 8;
  // One call in this many takes the way not preferred...
  static constexpr uint64_t kExploreEvery = 16;
  // ...or in this many, while that way's average is over kFarRatio times the other's.
  static constexpr uint64_t kExploreEveryFar = 64;
  static constexpr double kFarRatio = 1.5;
  // Weight of a new sample in a way's moving average.
  static constexpr double kNewSampleWeight = 1.0 / 16.0;

  // Whether the next call takes the second way (the kept copy).
  bool second();
  // A call that took the second way (or not) ran `seconds` over `bytes` bytes of weights.
  void record(bool second, double seconds, size_t bytes);
  // The way the averages prefer now (the first until both have their first samples).
  bool prefers_second() const;

 private:
  double seconds_per_byte_[2] = {0.0, 0.0};
  int64_t samples_[2] = {0, 0};
  uint64_t calls_ = 0;
};

}  // namespace pagoda::backend::cpu
