#pragma once
// The KV the next attention will read, asked for while the matmuls before it run.
//
// A decoding step of many sequences reads each layer's whole KV cache once (SmolLM2, 16
// sequences of ~150 tokens: 1.8 MB a layer, in f16), and that attention waits on DRAM,
// while the matmuls between two attentions (a few dozen tokens against weights kept
// repacked) keep the cores busy and leave much of the memory bus idle. So each
// attention leaves the byte ranges of the next layer's K and V blocks of every sequence
// here; the matmul kernels of few tokens then ask for a few of those lines per block they
// multiply (into L2, from where they fall to L3 as the weights stream past), each thread
// from its own share of the ranges (6 lines per block: fewer left the attention waiting,
// more slowed the matmuls).
//
// Only addresses inside the KV storage are asked for, and a prefetch never faults: a
// plan left over (the storage freed, another batch) costs a few useless loads at most.

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/attention_batch.h"
#include "backend/backend.h"

namespace pagoda::backend::cpu {

// One thread's share of a plan: ranges index, index + step, ... of `ranges`, and the
// next line of the range being read. Written only by its thread.
struct alignas(64) LookaheadCursor {
  const uintptr_t* ranges = nullptr;  // [n_ranges][2]: first byte, one past the last
  size_t n_ranges = 0, step = 1, index = 0;
  uintptr_t next = 0, end = 0;  // the current range's next line and end
};

// Calls fetch(address) for the cursor's next `lines` lines (fewer when its share runs
// out); returns how many.
template <class Fetch>
inline int take_lines(LookaheadCursor& c, int lines, Fetch&& fetch) {
  int taken = 0;
  while (taken < lines) {
    if (c.next >= c.end) {
      if (c.index >= c.n_ranges) break;
      c.next = c.ranges[2 * c.index];
      c.end = c.ranges[2 * c.index + 1];
      c.index += c.step;
      continue;
    }
    fetch(c.next);
    c.next += 64;
    ++taken;
  }
  return taken;
}

// Lines a kernel asks for per block it multiplies (see the measurements above).
inline constexpr int kLookaheadLinesPerBlock = 6;

// The kernels' call: the next lines of the thread's share into L2 (nothing for nullptr).
inline void fetch_lookahead(LookaheadCursor* c) {
  if (c == nullptr) return;
  take_lines(*c, kLookaheadLinesPerBlock,
             [](uintptr_t line) { _mm_prefetch(reinterpret_cast<const char*>(line), _MM_HINT_T1); });
}

class KvLookahead {
 public:
  // The K and V blocks of `layer` that the sequences of `batch` hold (their contexts
  // after this step), shared out over n_threads cursors; no ranges when `layer` is past
  // the last.
  void plan(KvStorage& kv, int32_t layer, const AttentionBatch& batch, int n_threads);
  // Drops the plan (the cursors then have nothing to give).
  void clear();
  // Thread t's cursor (t < the n_threads of the last plan), or nullptr when there is no plan.
  LookaheadCursor* cursor(int thread) {
    return static_cast<size_t>(thread) < cursors_.size() ? &cursors_[static_cast<size_t>(thread)] : nullptr;
  }

 private:
  std::vector<uintptr_t> ranges_;  // [n][2]
  std::vector<LookaheadCursor> cursors_;
};

}  // namespace pagoda::backend::cpu
