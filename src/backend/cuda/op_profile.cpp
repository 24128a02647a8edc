#include "backend/cuda/op_profile.h"

#include <utility>

#include "backend/cuda/cuda_status.h"

namespace pagoda::backend::cuda {

OpProfile::~OpProfile() {
  for (const Pair& pair : pairs_) {
    if (pair.start != nullptr) cudaEventDestroy(pair.start);
    if (pair.stop != nullptr) cudaEventDestroy(pair.stop);
  }
}

Status OpProfile::start(size_t n_pairs) {
  pairs_.resize(n_pairs);
  for (Pair& pair : pairs_) {
    PAGODA_TRY(cuda_status(cudaEventCreate(&pair.start), "cuda: cudaEventCreate"));
    PAGODA_TRY(cuda_status(cudaEventCreate(&pair.stop), "cuda: cudaEventCreate"));
  }
  names_.reserve(n_pairs);
  return {};
}

void OpProfile::begin(cudaStream_t stream) {
  if (!enabled()) return;
  open_ = next_ < pairs_.size() && cudaEventRecord(pairs_[next_].start, stream) == cudaSuccess;
}

void OpProfile::end(cudaStream_t stream, std::string name) {
  if (!enabled()) return;
  if (!open_) {
    totals_.add("(untimed: more ops in one step than events)", 0.0);
    return;
  }
  open_ = false;
  if (cudaEventRecord(pairs_[next_].stop, stream) != cudaSuccess) return;
  names_.push_back(std::move(name));
  ++next_;
}

void OpProfile::collect() {
  for (size_t i = 0; i < names_.size(); ++i) {
    float ms = 0.0f;
    if (cudaEventElapsedTime(&ms, pairs_[i].start, pairs_[i].stop) != cudaSuccess) continue;
    totals_.add(names_[i], static_cast<double>(ms) * 1e-3);
  }
  cudaGetLastError();  // an event of a failed step is not the next op's error
  names_.clear();
  next_ = 0;
  open_ = false;
}

}  // namespace pagoda::backend::cuda
