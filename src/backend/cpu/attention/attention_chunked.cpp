#include "backend/cpu/attention/attention_chunked.h"

#include <algorithm>
#include <cstring>

#include "backend/cpu/attention/attention_impl.h"

namespace pagoda::backend::cpu {
namespace {

constexpr int32_t kPad = 8;  // the kernels read position pointers and score rows in groups of 8

int32_t round_up(int32_t n, int32_t to) {
  return (n + to - 1) / to * to;
}
int32_t chunk_of(int64_t position) {
  return static_cast<int32_t>(position / kChunkPositions);
}

// The rows of one unit: its queries' heads that share KV head `kv_head`, query-major, so
// row r is query q_begin + r / group, head kv_head * group + r % group, and positions
// (hence the chunks a row sees) never decrease with r.
struct UnitRows {
  const SequenceAttention* seq;
  int32_t kv_head, q_begin, n_queries, group;

  int32_t count() const { return n_queries * group; }
  int64_t position(int32_t r) const { return query_position(*seq, q_begin + r / group); }
  int64_t token(int32_t r) const {
    return static_cast<int64_t>(seq->query_start) + q_begin + r / group;
  }
  int32_t head(int32_t r) const { return kv_head * group + r % group; }
};

// One thread's working memory, carved from its scratch.
struct Buffers {
  float* q;                   // [rows][head_dim] the unit's queries
  float* scores;              // [rows][kChunkPositions] scores, then softmax weights
  float* o;                   // [rows][head_dim] unnormalized output, chunks merged so far
  float* chunk_o;             // [rows][head_dim] one later chunk's unnormalized output
  ChunkSoftmax* state;        // [rows] softmax of the chunks merged so far
  ChunkSoftmax* chunk_state;  // [rows] softmax of one later chunk
  int32_t* counts;            // [rows] positions of the current chunk each row sees
  const void** keys;          // [kChunkPositions] K row of each position of the chunk
  const void** values;        // [kChunkPositions] V row of each position
  float* keys_f32;            // [kChunkPositions][head_dim] dequantized K (q8_0 caches only)
  float* values_f32;          // [kChunkPositions][head_dim] dequantized V (q8_0 caches only)
};

// Lays the buffers out from `base` (nullptr: only measures); returns the bytes they take.
size_t carve(std::byte* base, int32_t rows, int32_t head_dim, bool dequantize, Buffers* b) {
  size_t used = 0;
  auto take = [&]<typename T>(T*& p, size_t n) {
    used = (used + kAlignment - 1) / kAlignment * kAlignment;
    p = base == nullptr ? nullptr : reinterpret_cast<T*>(base + used);
    used += n * sizeof(T);
  };
  const size_t r = static_cast<size_t>(rows), d = static_cast<size_t>(head_dim),
               chunk = kChunkPositions;
  take(b->q, r * d);
  take(b->scores, r * chunk);
  take(b->o, r * d);
  take(b->chunk_o, r * d);
  take(b->state, r);
  take(b->chunk_state, r);
  take(b->counts, r);
  take(b->keys, chunk);
  take(b->values, chunk);
  take(b->keys_f32, dequantize ? chunk * d : 0);
  take(b->values_f32, dequantize ? chunk * d : 0);
  return used;
}

void load_queries(const AttentionContext& c, const UnitRows& u, float* q) {
  for (int32_t r = 0; r < u.count(); ++r) {
    std::memcpy(q + static_cast<size_t>(r) * c.head_dim, c.query(u.token(r), u.head(r)),
                sizeof(float) * static_cast<size_t>(c.head_dim));
  }
}

// Points keys / values at the rows of positions [start, start + n_pos) of the unit's KV
// head (dequantized first for a q8_0 cache), padded to a multiple of 8 by repeating the
// last; returns the type the pointers are to.
DType gather_rows(const AttentionContext& c, const ChunkKernels& kernels, const UnitRows& u,
                  int64_t start, int32_t n_pos, const Buffers& b) {
  for (int32_t i = 0; i < n_pos;) {  // block by block: one table lookup per block
    const int64_t p = start + i, in_block = p % c.block_size;
    const int64_t first_slot =
        static_cast<int64_t>(u.seq->block_table[static_cast<size_t>(p / c.block_size)]) *
            c.block_size +
        in_block;
    const int32_t run = static_cast<int32_t>(std::min<int64_t>(c.block_size - in_block, n_pos - i));
    for (int32_t j = 0; j < run; ++j, ++i) {
      b.keys[i] = c.key(first_slot + j, u.kv_head);
      b.values[i] = c.value(first_slot + j, u.kv_head);
    }
  }
  DType type = c.cache_type;
  if (type == DType::Q8_0) {       // head_dim % 32 == 0 was checked when the cache was made
    constexpr int32_t kAhead = 8;  // rows are scattered over blocks: fetch them ahead
    for (int32_t i = 0; i < n_pos; ++i) {
      if (i + kAhead < n_pos) {
        for (size_t byte = 0; byte < c.head_bytes; byte += 64) {
          __builtin_prefetch(static_cast<const std::byte*>(b.keys[i + kAhead]) + byte);
          __builtin_prefetch(static_cast<const std::byte*>(b.values[i + kAhead]) + byte);
        }
      }
      float* k = b.keys_f32 + static_cast<size_t>(i) * c.head_dim;
      float* v = b.values_f32 + static_cast<size_t>(i) * c.head_dim;
      kernels.dequantize_q8_0(b.keys[i], k, c.head_dim);
      kernels.dequantize_q8_0(b.values[i], v, c.head_dim);
      b.keys[i] = k;
      b.values[i] = v;
    }
    type = DType::F32;
  }
  for (int32_t i = n_pos; i < round_up(n_pos, kPad); ++i) {
    b.keys[i] = b.keys[n_pos - 1];
    b.values[i] = b.values[n_pos - 1];
  }
  return type;
}

// Attends the unit's rows that see chunk `chunk` to its positions: for each such row r,
// o[r] = the chunk's weighted sum of V (unnormalized) and state[r] its softmax. Returns the
// first such row (the rows before it end before the chunk).
int32_t attend_chunk(const AttentionContext& c, const ChunkKernels& k, const UnitRows& u,
                     int32_t chunk, const Buffers& b, float* o, ChunkSoftmax* state) {
  const int64_t start = static_cast<int64_t>(chunk) * kChunkPositions;
  const int32_t n = u.count(), d = c.head_dim;
  const int32_t first = static_cast<int32_t>(std::max<int64_t>(0, start - u.position(0))) * u.group;
  for (int32_t r = first; r < n; ++r) {
    b.counts[r] =
        static_cast<int32_t>(std::min<int64_t>(kChunkPositions, u.position(r) + 1 - start));
  }
  const int32_t n_pos = b.counts[n - 1];
  const DType type = gather_rows(c, k, u, start, n_pos, b);
  float* scores = b.scores + static_cast<size_t>(first) * kChunkPositions;
  k.scores(b.q + static_cast<size_t>(first) * d, n - first, b.keys, b.values, type, n_pos, d,
           c.scale, scores);
  for (int32_t r = first; r < n; ++r)
    state[r] = k.softmax(b.scores + static_cast<size_t>(r) * kChunkPositions, b.counts[r]);
  std::memset(o + static_cast<size_t>(first) * d, 0,
              sizeof(float) * static_cast<size_t>(n - first) * d);
  // Rows of later queries see more positions: the positions every remaining row sees are
  // summed for all of them at once, then the next query's extra ones for it and the rest.
  int32_t done = 0;
  for (int32_t r = first; r < n; r += u.group) {
    if (b.counts[r] == done) continue;
    k.accumulate_values(b.scores + static_cast<size_t>(r) * kChunkPositions, n - r, b.values, type,
                        done, b.counts[r], d, o + static_cast<size_t>(r) * d);
    done = b.counts[r];
  }
  return first;
}

void write_output(const AttentionContext& c, const ChunkKernels& k, const UnitRows& u, int32_t r,
                  const float* o, ChunkSoftmax state) {
  const float inverse = state.sum == 0.0f ? 0.0f : 1.0f / state.sum;
  k.scale_into(o, inverse, c.output(u.token(r), u.head(r)), c.head_dim);
}

// The whole unit on one thread: chunk 0 starts each row's state, later chunks merge in.
void attend_unit(const AttentionContext& c, const ChunkKernels& k, const UnitRows& u,
                 int32_t n_chunks, const Buffers& b) {
  const size_t d = static_cast<size_t>(c.head_dim);
  attend_chunk(c, k, u, 0, b, b.o, b.state);
  for (int32_t chunk = 1; chunk < n_chunks; ++chunk) {
    const int32_t first = attend_chunk(c, k, u, chunk, b, b.chunk_o, b.chunk_state);
    for (int32_t r = first; r < u.count(); ++r) {
      k.merge(b.o + r * d, &b.state[r], b.chunk_o + r * d, b.chunk_state[r], c.head_dim);
    }
  }
  for (int32_t r = 0; r < u.count(); ++r) write_output(c, k, u, r, b.o + r * d, b.state[r]);
}

// A split unit's partial of one chunk: [rows][head_dim] outputs, then [rows] states.
struct Partial {
  float* o;
  ChunkSoftmax* state;
};
Partial partial_at(float* unit_partials, int32_t rows, int32_t head_dim, int32_t chunk) {
  const size_t o_floats = static_cast<size_t>(rows) * head_dim;
  float* o =
      unit_partials + static_cast<size_t>(chunk) * (o_floats + 2 * static_cast<size_t>(rows));
  return {o, reinterpret_cast<ChunkSoftmax*>(o + o_floats)};
}

// Merges a split unit's partials row by row, in chunk order, exactly as attend_unit does.
void merge_partials(const AttentionContext& c, const ChunkKernels& k, const UnitRows& u,
                    float* unit_partials, const Buffers& b) {
  const size_t d = static_cast<size_t>(c.head_dim);
  for (int32_t r = 0; r < u.count(); ++r) {
    const Partial first = partial_at(unit_partials, u.count(), c.head_dim, 0);
    float* o = b.o + r * d;
    ChunkSoftmax state = first.state[r];
    std::memcpy(o, first.o + r * d, sizeof(float) * d);
    for (int32_t chunk = 1; chunk <= chunk_of(u.position(r)); ++chunk) {
      const Partial part = partial_at(unit_partials, u.count(), c.head_dim, chunk);
      k.merge(o, &state, part.o + r * d, part.state[r], c.head_dim);
    }
    write_output(c, k, u, r, o, state);
  }
}

}  // namespace

void ChunkedAttention::plan(ThreadPool& pool, const AttentionContext& c,
                            std::span<const SequenceAttention> sequences) {
  units_.clear();
  tasks_.clear();
  split_units_.clear();
  max_rows_ = 0;
  partial_floats_ = 0;
  const int32_t queries_per_unit = std::max(1, kUnitRows / c.group);
  const int32_t n_kv_heads = c.n_heads / c.group;
  for (size_t si = 0; si < sequences.size(); ++si) {
    const SequenceAttention& s = sequences[si];
    // From the last queries down: the units that see the most positions are handed out first.
    for (int32_t q_end = s.n_query; q_end > 0; q_end -= queries_per_unit) {
      const int32_t q_begin = std::max(0, q_end - queries_per_unit);
      const int32_t n_chunks = chunk_of(query_position(s, q_end - 1)) + 1;
      for (int32_t h = 0; h < n_kv_heads; ++h) {
        units_.push_back({static_cast<int32_t>(si), h, q_begin, q_end - q_begin, n_chunks, -1});
      }
      max_rows_ = std::max(max_rows_, (q_end - q_begin) * c.group);
    }
  }
  const bool split =
      pool.size() > 1 && units_.size() < static_cast<size_t>(kUnitsPerThread) * pool.size();
  for (size_t ui = 0; ui < units_.size(); ++ui) {
    Unit& u = units_[ui];
    if (!split || u.n_chunks == 1) {
      tasks_.push_back({static_cast<int32_t>(ui), -1});
      continue;
    }
    u.partials = partial_floats_;
    const int64_t rows = static_cast<int64_t>(u.n_queries) * c.group;
    partial_floats_ += u.n_chunks * rows * (c.head_dim + 2);
    split_units_.push_back(static_cast<int32_t>(ui));
    for (int32_t chunk = 0; chunk < u.n_chunks; ++chunk)
      tasks_.push_back({static_cast<int32_t>(ui), chunk});
  }
}

Status ChunkedAttention::reserve(ThreadPool& pool, const AttentionContext& c) {
  Buffers b;
  const size_t bytes = carve(nullptr, max_rows_, c.head_dim, c.cache_type == DType::Q8_0, &b);
  thread_scratch_.resize(static_cast<size_t>(pool.size()));
  for (Scratch& s : thread_scratch_) {
    if (s.reserve(bytes) == nullptr)
      return resource_exhausted("attention: cannot allocate scratch");
  }
  if (partial_floats_ > 0 &&
      partials_.reserve(sizeof(float) * static_cast<size_t>(partial_floats_)) == nullptr) {
    return resource_exhausted("attention: cannot allocate scratch");
  }
  return {};
}

Status ChunkedAttention::run(ThreadPool& pool, const AttentionContext& c,
                             std::span<const SequenceAttention> sequences) {
  plan(pool, c, sequences);
  if (units_.empty()) return {};
  PAGODA_TRY(reserve(pool, c));
  const ChunkKernels& k = *kernels_;
  const bool dequantize = c.cache_type == DType::Q8_0;
  float* partials = reinterpret_cast<float*>(partials_.reserve(0));
  auto rows_of = [&](const Unit& u) {
    return UnitRows{&sequences[static_cast<size_t>(u.sequence)], u.kv_head, u.q_begin, u.n_queries,
                    c.group};
  };
  pool.parallel_for(static_cast<int64_t>(tasks_.size()), [&](int64_t i, int thread) {
    const Task& task = tasks_[static_cast<size_t>(i)];
    const Unit& unit = units_[static_cast<size_t>(task.unit)];
    const UnitRows u = rows_of(unit);
    Buffers b;
    carve(thread_scratch_[static_cast<size_t>(thread)].reserve(0), u.count(), c.head_dim,
          dequantize, &b);
    load_queries(c, u, b.q);
    if (task.chunk < 0) {
      attend_unit(c, k, u, unit.n_chunks, b);
    } else {
      const Partial part = partial_at(partials + unit.partials, u.count(), c.head_dim, task.chunk);
      attend_chunk(c, k, u, task.chunk, b, part.o, part.state);
    }
  });
  if (split_units_.empty()) return {};
  pool.parallel_for(static_cast<int64_t>(split_units_.size()), [&](int64_t i, int thread) {
    const Unit& unit = units_[static_cast<size_t>(split_units_[static_cast<size_t>(i)])];
    const UnitRows u = rows_of(unit);
    Buffers b;
    carve(thread_scratch_[static_cast<size_t>(thread)].reserve(0), u.count(), c.head_dim,
          dequantize, &b);
    merge_partials(c, k, u, partials + unit.partials, b);
  });
  return {};
}

}  // namespace pagoda::backend::cpu
