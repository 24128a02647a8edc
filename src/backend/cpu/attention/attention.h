#pragma once
// Paged attention on the CPU (see Backend::attention for the contract).
//
// The new K/V rows are first written to their cache slots (rounded to the cache type),
// then every query reads its context straight from the cache blocks through its
// sequence's block table, in one of two numerics modes:
//
// CpuNumerics::kFast (the default): batch-invariant and thread-count-invariant, bit for
// bit; f32 queries, fixed chunks of positions merged in order (attention_chunked.h).
//
// CpuNumerics::kReference: the rounding of the reference CPU build's flash attention,
// whose results the model tests reproduce; the schedule, and so the last bits, depend on
// the batch:
//  - a sequence with fewer than 64 new tokens: per query, Q converted to the K cache's
//    dot format (f16 for an f16 cache), online softmax over positions in order, V
//    accumulated in f16 (rounded at every step) for an f16 cache, else in f32;
//  - 64 or more new tokens (f16 / f32 cache): tiles of 64 queries x 64 positions, f32
//    scores as FMA chains, softmax sums in double, f32 V accumulator;
//  - a single decoding query with 512+ positions: positions split into one chunk per
//    thread, each run as above, the partial softmax states merged in chunk order.

#include <vector>

#include "backend/backend.h"
#include "backend/cpu/aligned_memory.h"
#include "backend/cpu/attention/attention_chunked.h"
#include "backend/cpu/attention/kv_lookahead.h"
#include "backend/cpu/cpu_backend.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "quant/dot.h"

namespace pagoda::backend::cpu {

struct AttentionContext;

class Attention {
 public:
  Attention(Isa isa, CpuNumerics numerics)
      : isa_(isa), numerics_(numerics), chunked_(isa) {}

  // After each call, plans the next layer's K and V of the batch here (kv_lookahead.h);
  // nullptr (the default): nothing.
  void set_lookahead(KvLookahead* lookahead) { lookahead_ = lookahead; }

  Status run(ThreadPool& pool, const TensorView& q, const TensorView& k, const TensorView& v,
             KvStorage& kv, int32_t layer, const AttentionBatch& batch, float scale,
             const TensorView& out);

  // Reference mode: new tokens in a sequence from which its queries go through the tiled
  // schedule, for heads of a multiple of 16 values (see use_tiles in attention.cpp).
  static constexpr int32_t kTileQueries = 64;
  // Reference mode: context length from which a lone decoding query is split over the
  // threads.
  static constexpr int32_t kSplitContext = 512;

 private:
  struct Work {  // one task: queries [q_begin, q_end) of one sequence and head
    int32_t sequence, head, q_begin, q_end;
    bool tiled;
  };
  // run, its inputs checked.
  Status attend(ThreadPool& pool, const TensorView& q, const TensorView& k, const TensorView& v, KvStorage& kv,
                int32_t layer, const AttentionBatch& batch, float scale, const TensorView& out);
  Status reserve_scratch(ThreadPool& pool, const AttentionContext& c, const AttentionBatch& batch);
  void run_queries(ThreadPool& pool, const AttentionContext& c, std::span<const SequenceAttention> seqs);
  Status run_split(ThreadPool& pool, const AttentionContext& c, const SequenceAttention& s);

  Isa isa_;
  CpuNumerics numerics_;
  ChunkedAttention chunked_;        // the fast mode's schedule
  // The reference mode's schedules:
  std::vector<Work> work_;          // rebuilt per call; capacity grows rarely
  std::vector<Scratch> thread_scratch_;  // per thread, sized for the largest head seen
  Scratch partials_;                // split schedule: [chunk][head][2 + head_dim]
  KvLookahead* lookahead_ = nullptr;
};

}  // namespace pagoda::backend::cpu
