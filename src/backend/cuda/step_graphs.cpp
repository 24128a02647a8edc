#include "backend/cuda/step_graphs.h"

#include <string>
#include <utility>

#include "backend/cuda/cuda_status.h"
#include "core/mix64.h"

namespace pagoda::backend::cuda {

LaunchKey& LaunchKey::add(const TensorView& v) {
  add(v.data);
  add(static_cast<uint64_t>(v.type));
  for (int i = 0; i < 4; ++i) add(v.ne[i]);
  for (int i = 0; i < 4; ++i) add(static_cast<uint64_t>(v.nb[i]));
  return *this;
}

StepGraphs::~StepGraphs() {
  for (auto& [hash, entry] : graphs_) {
    if (entry.exec != nullptr) cudaGraphExecDestroy(entry.exec);
  }
}

void StepGraphs::record(const LaunchKey& key, std::function<Status()> launch) {
  key_.push_back(key.words().size());
  key_.insert(key_.end(), key.words().begin(), key.words().end());
  launches_.push_back(std::move(launch));
}

void StepGraphs::discard() {
  launches_.clear();
  key_.clear();
}

Status StepGraphs::run_each() {
  Status first;
  for (std::function<Status()>& launch : launches_) {
    Status status = launch();
    if (first.ok() && !status.ok()) first = std::move(status);
  }
  ++counts_.one_by_one;
  return first;
}

Status StepGraphs::capture(cudaStream_t stream, cudaGraphExec_t* exec) {
  *exec = nullptr;
  // Thread-local mode: a call of this thread that cannot be captured (a synchronization,
  // an allocation) fails the capture instead of running; other threads are not affected.
  PAGODA_TRY(cuda_status(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
                         "cuda: cudaStreamBeginCapture"));
  Status launched;
  for (std::function<Status()>& launch : launches_) {
    launched = launch();
    if (!launched.ok()) break;
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  Status status = launched.ok() ? cuda_status(ended, "cuda: cudaStreamEndCapture") : launched;
  if (status.ok() && graph != nullptr) {
    status = cuda_status(cudaGraphInstantiate(exec, graph, 0), "cuda: cudaGraphInstantiate");
  }
  if (graph != nullptr) cudaGraphDestroy(graph);
  if (!status.ok()) {
    cudaGetLastError();  // a failed capture's error is not a fault of later work
    *exec = nullptr;
  }
  return status;
}

void StepGraphs::evict_one() {
  auto oldest = graphs_.end();
  for (auto it = graphs_.begin(); it != graphs_.end(); ++it) {
    if (oldest == graphs_.end() || it->second.last_use < oldest->second.last_use) oldest = it;
  }
  if (oldest == graphs_.end()) return;
  if (oldest->second.exec != nullptr) cudaGraphExecDestroy(oldest->second.exec);
  graphs_.erase(oldest);
}

Status StepGraphs::run(cudaStream_t stream) {
  if (launches_.empty()) return {};
  uint64_t hash = key_.size();
  for (const uint64_t word : key_) hash = mix64(hash ^ word);
  Status status;
  auto it = graphs_.find(hash);
  if (it == graphs_.end() || it->second.key != key_) {
    // First seen (or its hash taken by another key, which keeps its place): one by one.
    if (it == graphs_.end()) {
      if (graphs_.size() >= kMaxGraphs) evict_one();
      graphs_.emplace(hash, Entry{key_, nullptr, false, ++clock_});
    }
    status = run_each();
  } else {
    Entry& entry = it->second;
    entry.last_use = ++clock_;
    if (entry.exec == nullptr && !entry.uncapturable) {
      const Status captured = capture(stream, &entry.exec);
      if (captured.ok()) {
        ++counts_.captured;
      } else {
        entry.uncapturable = true;
      }
    }
    if (entry.exec != nullptr) {
      status = cuda_status(cudaGraphLaunch(entry.exec, stream), "cuda: cudaGraphLaunch");
      ++counts_.replayed;
    } else {
      status = run_each();
    }
  }
  discard();
  return status;
}

}  // namespace pagoda::backend::cuda
