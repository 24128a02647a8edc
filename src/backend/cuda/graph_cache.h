#pragma once
// Which CUDA graph a step's launch key has (step_graphs.h runs the steps): plain
// bookkeeping, no CUDA calls, so that it is tested on any machine. A key seen for the
// first time runs one by one; seen again, it is captured; from then on its graph is
// replayed, or, when its capture failed, it runs one by one for good. At most `capacity`
// keys are kept; the least recently used goes first, its graph destroyed.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

namespace pagoda::backend::cuda {

class GraphCache {
 public:
  using Destroy = std::function<void(void* graph)>;
  GraphCache(size_t capacity, Destroy destroy)
      : capacity_(capacity), destroy_(std::move(destroy)) {}
  ~GraphCache();
  GraphCache(const GraphCache&) = delete;
  GraphCache& operator=(const GraphCache&) = delete;

  enum class Plan {
    kRunEach,  // first seen, or its capture failed before
    kCapture,  // seen once before: capture it, then store() the graph (null: it failed)
    kReplay,   // graph() is its graph
  };
  Plan plan(std::span<const uint64_t> key);
  // After kCapture: the graph made of the step, or null when its capture failed.
  void store(void* graph);
  // After kReplay (or a store() of a graph): the step's graph.
  void* graph() const { return current_ == nullptr ? nullptr : current_->graph; }
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::vector<uint64_t> key;
    void* graph = nullptr;
    bool uncapturable = false;
    uint64_t last_use = 0;
  };
  void evict_one();

  size_t capacity_;
  Destroy destroy_;
  std::unordered_map<uint64_t, Entry> entries_;  // by the hash of their key
  Entry* current_ = nullptr;                     // the entry of the last plan(), if any
  uint64_t clock_ = 0;
};

}  // namespace pagoda::backend::cuda
