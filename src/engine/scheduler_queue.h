#pragma once
// The scheduler's queue order: lower priority values first, then earlier arrivals
// (first come, first served). Both the waiting and the running queue are vectors kept
// in this order; they hold at most a few thousand pointers, so a sorted insert is a
// short memmove and iteration stays cache-friendly.

#include <algorithm>
#include <vector>

#include "engine/request.h"

namespace pagoda::engine {

// True when `a` is served before `b` (and preempted after it).
inline bool served_before(const Request* a, const Request* b) {
  if (a->priority != b->priority) return a->priority < b->priority;
  return a->arrival < b->arrival;
}

// Inserts after every request served before or with it (arrivals are unique, so that
// is its one place).
inline void insert_in_order(std::vector<Request*>& queue, Request* request) {
  queue.insert(std::upper_bound(queue.begin(), queue.end(), request, served_before), request);
}

// Removes `request` if the queue holds it; returns whether it did.
inline bool remove_from(std::vector<Request*>& queue, const Request* request) {
  const auto found = std::find(queue.begin(), queue.end(), request);
  if (found == queue.end()) return false;
  queue.erase(found);
  return true;
}

}  // namespace pagoda::engine
