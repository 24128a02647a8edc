#include "backend/cuda/graph_cache.h"

#include <algorithm>

#include "core/mix64.h"

namespace pagoda::backend::cuda {

GraphCache::~GraphCache() {
  for (auto& [hash, entry] : entries_) {
    if (entry.graph != nullptr) destroy_(entry.graph);
  }
}

GraphCache::Plan GraphCache::plan(std::span<const uint64_t> key) {
  uint64_t hash = key.size();
  for (const uint64_t word : key) hash = mix64(hash ^ word);
  current_ = nullptr;
  auto it = entries_.find(hash);
  if (it == entries_.end()) {
    if (capacity_ == 0) return Plan::kRunEach;
    if (entries_.size() >= capacity_) evict_one();
    entries_.emplace(
        hash, Entry{std::vector<uint64_t>(key.begin(), key.end()), nullptr, false, ++clock_});
    return Plan::kRunEach;
  }
  Entry& entry = it->second;
  // Another key with the same hash keeps its place; this one runs one by one.
  if (!std::equal(entry.key.begin(), entry.key.end(), key.begin(), key.end()))
    return Plan::kRunEach;
  entry.last_use = ++clock_;
  current_ = &entry;
  if (entry.graph != nullptr) return Plan::kReplay;
  return entry.uncapturable ? Plan::kRunEach : Plan::kCapture;
}

void GraphCache::store(void* graph) {
  if (current_ == nullptr) {
    if (graph != nullptr) destroy_(graph);
    return;
  }
  if (current_->graph != nullptr && current_->graph != graph) destroy_(current_->graph);
  current_->graph = graph;
  current_->uncapturable = graph == nullptr;
}

void GraphCache::evict_one() {
  auto oldest = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (oldest == entries_.end() || it->second.last_use < oldest->second.last_use) oldest = it;
  }
  if (oldest == entries_.end()) return;
  if (oldest->second.graph != nullptr) destroy_(oldest->second.graph);
  if (current_ == &oldest->second) current_ = nullptr;
  entries_.erase(oldest);
}

}  // namespace pagoda::backend::cuda
