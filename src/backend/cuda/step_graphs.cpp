#include "backend/cuda/step_graphs.h"

#include <string>
#include <utility>

#include "backend/cuda/cuda_status.h"

namespace pagoda::backend::cuda {

LaunchKey& LaunchKey::add(const TensorView& v) {
  add(v.data);
  add(static_cast<uint64_t>(v.type));
  for (int i = 0; i < 4; ++i) add(v.ne[i]);
  for (int i = 0; i < 4; ++i) add(static_cast<uint64_t>(v.nb[i]));
  return *this;
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

Status StepGraphs::run(cudaStream_t stream) {
  if (launches_.empty()) return {};
  Status status;
  switch (cache_.plan(key_)) {
    case GraphCache::Plan::kRunEach:
      status = run_each();
      break;
    case GraphCache::Plan::kCapture: {
      cudaGraphExec_t exec = nullptr;
      if (capture(stream, &exec).ok()) ++counts_.captured;
      cache_.store(exec);
      status = exec != nullptr ? replay(exec, stream) : run_each();
      break;
    }
    case GraphCache::Plan::kReplay:
      status = replay(static_cast<cudaGraphExec_t>(cache_.graph()), stream);
      break;
  }
  discard();
  return status;
}

Status StepGraphs::replay(cudaGraphExec_t exec, cudaStream_t stream) {
  ++counts_.replayed;
  return cuda_status(cudaGraphLaunch(exec, stream), "cuda: cudaGraphLaunch");
}

}  // namespace pagoda::backend::cuda
