#pragma once
// The fast attention schedule: batch-invariant and thread-count-invariant, bit for bit.
//
// The output of a query row (one query token, one head) is a function of its q, the
// K/V rows of its sequence's positions [0, its position] and the scale alone. Its
// positions are cut into fixed chunks of kChunkPositions, aligned to position 0; each
// chunk gives a partial softmax (max, sum of weights, weighted sum of V) computed by the
// chunk kernels (attention_chunk_kernels.h: fixed lane layouts and summation orders),
// and the partials are merged in chunk order. So a token's attention is the same whether
// it runs alone or among other sequences, in a prefill of any chunk size, after a
// preemption and recompute, or on any number of threads.
//
// Parallel work: units of (sequence, KV head, up to kUnitRows query rows) — the query
// heads that share a KV head are attended together, so each K/V row loaded from the cache
// serves all of them. When a step has few units (a lone decoding sequence), units whose
// context spans several chunks are split into one task per chunk; their partials go to a
// buffer and are merged afterwards in the same chunk order.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/attention_batch.h"
#include "backend/cpu/aligned_memory.h"
#include "backend/cpu/attention/attention_chunk_kernels.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "quant/dot.h"

namespace pagoda::backend::cpu {

struct AttentionContext;

class ChunkedAttention {
 public:
  explicit ChunkedAttention(Isa isa) : kernels_(&chunk_kernels(isa)) {}

  // Attends every query of `sequences` (whose new K/V rows are already in the cache) and
  // writes the outputs.
  Status run(ThreadPool& pool, const AttentionContext& c,
             std::span<const SequenceAttention> sequences);

  // Query rows (query x head of one KV head) attended together as one unit of work; a
  // unit always takes at least one query with all its heads.
  static constexpr int32_t kUnitRows = 24;
  // Below this many units per thread, units over several chunks are split by chunk.
  static constexpr int32_t kUnitsPerThread = 4;

 private:
  struct Unit {
    int32_t sequence, kv_head, q_begin,
        n_queries;     // queries [q_begin, q_begin + n_queries) of the sequence
    int32_t n_chunks;  // chunks its last query sees
    int64_t partials;  // split units: first float of its [chunk] x {[row][head_dim] outputs, [row]
                       // states}; else -1
  };
  struct Task {
    int32_t unit;
    int32_t chunk;  // -1: the whole unit, chunks merged as they are computed
  };

  void plan(ThreadPool& pool, const AttentionContext& c,
            std::span<const SequenceAttention> sequences);
  Status reserve(ThreadPool& pool, const AttentionContext& c);

  const ChunkKernels* kernels_;
  std::vector<Unit> units_;  // rebuilt per call; capacity grows rarely
  std::vector<Task> tasks_;
  std::vector<int32_t> split_units_;
  int32_t max_rows_ = 0;        // rows of the largest unit of the call
  int64_t partial_floats_ = 0;  // floats the split units' partials take
  std::vector<Scratch> thread_scratch_;
  Scratch partials_;
};

}  // namespace pagoda::backend::cpu
