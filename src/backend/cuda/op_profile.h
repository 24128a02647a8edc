#pragma once
// Per-op device time, for finding where a step's time goes (CudaBackendOptions::
// profile_ops; `pagoda bench --device cuda --profile-ops`). Each op is bracketed by a pair
// of CUDA events recorded on the stream; at synchronize() the elapsed times are read and
// summed by op name (an op, and for a matmul its weight type and shape:
// backend/op_times.h). The events are created once, at the backend's start: a step
// allocates nothing, and a step with more ops than events leaves the rest untimed
// (counted as such).

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backend/op_times.h"
#include "core/status.h"

namespace pagoda::backend::cuda {

class OpProfile {
 public:
  OpProfile() = default;
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;
  ~OpProfile();

  // Creates `n_pairs` event pairs; a profile never started times nothing.
  Status start(size_t n_pairs);
  bool enabled() const { return !pairs_.empty(); }

  // Records the start of the next op on `stream`; end() names it when it has been enqueued.
  void begin(cudaStream_t stream);
  void end(cudaStream_t stream, std::string name);
  // After the stream has been synchronized: adds the step's times to the totals.
  void collect();
  // The totals since the start or the last reset(), most time first.
  std::vector<OpTime> totals() const { return totals_.sorted(); }
  void reset() { totals_.clear(); }

 private:
  struct Pair {
    cudaEvent_t start = nullptr, stop = nullptr;
  };
  std::vector<Pair> pairs_;
  std::vector<std::string> names_;  // [ops recorded this step]
  size_t next_ = 0;                 // the pair of the op being recorded
  bool open_ = false;               // begin() without end() yet
  OpTimes totals_;
};

}  // namespace pagoda::backend::cuda
