#include "backend/cuda/op_profile.h"

#include <algorithm>
#include <cstdio>
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
    ++untimed_;
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
    Total& total = totals_[names_[i]];
    ++total.calls;
    total.ms += ms;
  }
  cudaGetLastError();  // an event of a failed step is not the next op's error
  names_.clear();
  next_ = 0;
  open_ = false;
}

std::string OpProfile::report() const {
  std::vector<std::pair<std::string, Total>> rows(totals_.begin(), totals_.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
  double all_ms = 0.0;
  for (const auto& [name, total] : rows) all_ms += total.ms;
  std::string text = "op                                              calls   total ms    mean us   share\n";
  char line[256];
  for (const auto& [name, total] : rows) {
    std::snprintf(line, sizeof line, "%-46s %8lld %10.3f %10.2f %6.1f%%\n", name.c_str(),
                  static_cast<long long>(total.calls), total.ms, 1000.0 * total.ms / static_cast<double>(total.calls),
                  all_ms > 0.0 ? 100.0 * total.ms / all_ms : 0.0);
    text += line;
  }
  std::snprintf(line, sizeof line, "%-46s %8s %10.3f\n", "all ops", "", all_ms);
  text += line;
  if (untimed_ > 0) text += std::to_string(untimed_) + " ops untimed (more in one step than events)\n";
  return text;
}

}  // namespace pagoda::backend::cuda
