#pragma once
// A step's kernel launches, recorded as its ops are called and run when their results
// are needed: as a CUDA graph where an earlier step made the very same launches, one by
// one otherwise. A decoding step of a small batch is hundreds of short kernels; launched
// one by one, the host's cost per launch and the gaps between kernels take much of the
// step. A graph is submitted with one call and its kernels start back to back.
//
// Replaying is exact: a graph is replayed only for a step whose key equals the key the
// graph was captured from, word for word. An op's key holds everything its launches
// depend on besides the contents of device memory (every view's address, type, sizes
// and strides, scalar parameters, the addresses of its staged inputs, the counts that
// size its grids), so equal keys mean the same kernels with the same arguments. A key
// seen for the first time runs one by one; the second time it is captured into a graph
// and replayed from then on. Prompts of varying shapes thus never pay for a capture.

#include <cuda_runtime_api.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "backend/cuda/graph_cache.h"
#include "backend/tensor.h"
#include "core/status.h"

namespace pagoda::backend::cuda {

// The words one op's launches depend on.
class LaunchKey {
 public:
  explicit LaunchKey(uint64_t op) { words_.push_back(op); }
  LaunchKey& add(uint64_t v) {
    words_.push_back(v);
    return *this;
  }
  LaunchKey& add(int64_t v) { return add(static_cast<uint64_t>(v)); }
  LaunchKey& add(int32_t v) { return add(static_cast<uint64_t>(static_cast<uint32_t>(v))); }
  LaunchKey& add(float v) { return add(static_cast<uint64_t>(std::bit_cast<uint32_t>(v))); }
  LaunchKey& add(bool v) { return add(static_cast<uint64_t>(v)); }
  LaunchKey& add(const void* p) {
    return add(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)));
  }
  LaunchKey& add(const TensorView& v);
  const std::vector<uint64_t>& words() const { return words_; }

 private:
  std::vector<uint64_t> words_;
};

class StepGraphs {
 public:
  StepGraphs() = default;
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;

  // Appends an op: its key and its launch (run later, on the stream given to run()).
  void record(const LaunchKey& key, std::function<Status()> launch);
  bool empty() const { return launches_.empty(); }

  // Enqueues the recorded launches on `stream` (a graph's replay, a capture then its
  // replay, or each launch in turn) and forgets them. The first error a launch returned,
  // or the graph calls' error; after an error the step's outputs are unspecified.
  Status run(cudaStream_t stream);
  // Forgets the recorded launches without running them.
  void discard();

  struct Counts {
    uint64_t replayed = 0;  // steps run as a graph
    uint64_t captured = 0;  // graphs made
    uint64_t one_by_one = 0;
  };
  const Counts& counts() const { return counts_; }

  // Graphs kept at most; the least recently replayed goes first.
  static constexpr size_t kMaxGraphs = 64;

 private:
  Status run_each();
  // Captures the launches into a graph and instantiates it; null (and the stream out of
  // capture mode) when that fails.
  Status capture(cudaStream_t stream, cudaGraphExec_t* exec);
  Status replay(cudaGraphExec_t exec, cudaStream_t stream);

  std::vector<std::function<Status()>> launches_;
  std::vector<uint64_t> key_;  // the step's key: the ops' keys, each after its length
  GraphCache cache_{kMaxGraphs,
                    [](void* graph) { cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph)); }};
  Counts counts_;
};

}  // namespace pagoda::backend::cuda
