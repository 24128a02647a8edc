#include "backend/cpu/attention/attention.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "backend/cpu/attention/attention_impl.h"
#include "backend/cpu/ops/ops.h"
#include "backend/cpu/ops/rows.h"

namespace pagoda::backend::cpu {
namespace {

bool is_head_view(const TensorView& v, int64_t head_dim, int64_t n_heads, int64_t n_tokens) {
  return is_f32_rows(v) && v.ne[0] == head_dim && v.ne[1] == n_heads && v.ne[2] == n_tokens &&
         v.ne[3] == 1;
}

// The batch's KV slots and block tables lie inside the cache. The engine's ModelRunner
// checks every batch it builds (model/batch_check.h); here it is only asserted.
[[maybe_unused]] bool sequences_fit(const AttentionBatch& batch, const KvCacheShape& shape, int64_t n_tokens) {
  if (batch.block_size != shape.block_size || static_cast<int64_t>(batch.slot_mapping.size()) != n_tokens) {
    return false;
  }
  const int64_t n_slots = static_cast<int64_t>(shape.n_blocks) * shape.block_size;
  for (const int64_t slot : batch.slot_mapping) {
    if (slot < 0 || slot >= n_slots) return false;
  }
  for (const SequenceAttention& s : batch.sequences) {
    if (s.n_query < 0 || s.query_start < 0 || s.query_start + static_cast<int64_t>(s.n_query) > n_tokens ||
        s.n_context < s.n_query) {
      return false;
    }
    const int64_t blocks_needed = (static_cast<int64_t>(s.n_context) + shape.block_size - 1) / shape.block_size;
    if (static_cast<int64_t>(s.block_table.size()) < blocks_needed) return false;
    for (int64_t b = 0; b < blocks_needed; ++b) {
      const int32_t id = s.block_table[static_cast<size_t>(b)];
      if (id < 0 || id >= shape.n_blocks) return false;
    }
  }
  return true;
}

Status check_inputs(const TensorView& q, const TensorView& k, const TensorView& v, const KvCacheShape& shape,
                    int32_t layer, [[maybe_unused]] const AttentionBatch& batch, const TensorView& out) {
  const int64_t n_tokens = q.ne[2], n_heads = q.ne[1];
  const int64_t head_dim = shape.head_dim, n_kv_heads = shape.n_kv_heads;
  if (layer < 0 || layer >= shape.n_layers) return invalid_argument("attention: layer out of range");
  if (!is_head_view(q, head_dim, n_heads, n_tokens) || !is_head_view(k, head_dim, n_kv_heads, n_tokens) ||
      !is_head_view(v, head_dim, n_kv_heads, n_tokens) || n_heads % n_kv_heads != 0 ||
      !is_f32_rows(out) || out.ne[0] != n_heads * head_dim || out.n_rows() != n_tokens) {
    return invalid_argument("attention: q, k, v must be head views matching the cache and out [n][n_heads * head_dim]");
  }
  assert(sequences_fit(batch, shape, n_tokens));
  return {};
}

AttentionContext make_context(const TensorView& q, KvStorage& kv, int32_t layer, float scale,
                              const TensorView& out, Isa isa) {
  const KvCacheShape& shape = kv.shape();
  AttentionContext c;
  c.q = q;
  c.out = out;
  const TensorView keys = kv.keys(layer), values = kv.values(layer);
  c.k_cache = static_cast<const std::byte*>(keys.data);
  c.v_cache = static_cast<const std::byte*>(values.data);
  c.cache_row_bytes = keys.nb[1];
  c.head_bytes = static_cast<size_t>(row_bytes(shape.type, shape.head_dim));
  c.cache_type = shape.type;
  c.block_size = shape.block_size;
  c.head_dim = shape.head_dim;
  c.n_heads = static_cast<int32_t>(q.ne[1]);
  c.group = c.n_heads / shape.n_kv_heads;
  c.scale = scale;
  c.k_dot = quant::find_dot_kernel(shape.type, isa);
  c.kernels = &attention_kernels(isa);
  return c;
}

// The new K and V rows go to their slots, converted the way the K dot format converts Q
// (f16 rounding to nearest even, q8_0 quantization, or a copy); f16 by the attention
// kernels' vector conversion, which rounds the same.
void write_kv(ThreadPool& pool, const AttentionContext& c, const TensorView& k, const TensorView& v,
              const AttentionBatch& batch) {
  const int64_t n_kv_heads = k.ne[1], head_dim = c.head_dim;
  std::byte* keys = const_cast<std::byte*>(c.k_cache);
  std::byte* values = const_cast<std::byte*>(c.v_cache);
  auto convert = [&](const float* x, std::byte* y) {
    if (c.cache_type == DType::F16) {
      c.kernels->f32_to_f16(x, reinterpret_cast<uint16_t*>(y), head_dim);
    } else {
      c.k_dot->quantize(x, y, head_dim);
    }
  };
  parallel_rows(pool, k.ne[2], 2 * n_kv_heads * head_dim, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const size_t slot = static_cast<size_t>(batch.slot_mapping[static_cast<size_t>(t)]);
      for (int64_t h = 0; h < n_kv_heads; ++h) {
        const size_t offset = slot * c.cache_row_bytes + static_cast<size_t>(h) * c.head_bytes;
        convert(k.row<const float>(h, t), keys + offset);
        convert(v.row<const float>(h, t), values + offset);
      }
    }
  });
}

bool is_float_cache(DType type) { return type == DType::F16 || type == DType::F32; }

// The reference CPU build tiles a sequence's queries only when there are a full tile of them
// and the head size is a multiple of its f32 vector width (16 floats: AVX-512); otherwise
// every query takes the per-query schedule, with its f16 query and f16 V sum. Mirrored so
// that small heads (8 floats) round as the reference does.
constexpr int32_t kReferenceVectorFloats = 16;

bool use_tiles(const AttentionContext& c, const SequenceAttention& s) {
  return is_float_cache(c.cache_type) && s.n_query >= Attention::kTileQueries &&
         c.head_dim % kReferenceVectorFloats == 0;
}

}  // namespace

Status Attention::run(ThreadPool& pool, const TensorView& q, const TensorView& k, const TensorView& v,
                      KvStorage& kv, int32_t layer, const AttentionBatch& batch, float scale,
                      const TensorView& out) {
  if (lookahead_ != nullptr) lookahead_->clear();
  PAGODA_TRY(check_inputs(q, k, v, kv.shape(), layer, batch, out));
  PAGODA_TRY(attend(pool, q, k, v, kv, layer, batch, scale, out));
  if (lookahead_ != nullptr) lookahead_->plan(kv, layer + 1, batch, pool.size());
  return {};
}

Status Attention::attend(ThreadPool& pool, const TensorView& q, const TensorView& k, const TensorView& v,
                         KvStorage& kv, int32_t layer, const AttentionBatch& batch, float scale,
                         const TensorView& out) {
  const AttentionContext c = make_context(q, kv, layer, scale, out, isa_);
  if (c.k_dot == nullptr || c.k_dot->activation != c.cache_type) {
    return internal_error("attention: no dot kernel for the cache type");
  }
  write_kv(pool, c, k, v, batch);
  if (numerics_ == CpuNumerics::kFast) return chunked_.run(pool, c, batch.sequences);
  PAGODA_TRY(reserve_scratch(pool, c, batch));
  const std::span<const SequenceAttention> seqs = batch.sequences;
  if (seqs.size() == 1 && seqs[0].n_query == 1 && is_float_cache(c.cache_type) &&
      seqs[0].n_context >= kSplitContext && pool.size() > 1) {
    return run_split(pool, c, seqs[0]);  // a lone decoding query over a long context
  }
  run_queries(pool, c, seqs);
  return {};
}

Status Attention::reserve_scratch(ThreadPool& pool, const AttentionContext& c, const AttentionBatch& batch) {
  size_t bytes = vector_scratch_bytes(c.head_dim);
  for (const SequenceAttention& s : batch.sequences) {
    if (use_tiles(c, s)) bytes = std::max(bytes, tiled_scratch_bytes(c.head_dim));
  }
  thread_scratch_.resize(static_cast<size_t>(pool.size()));
  for (Scratch& s : thread_scratch_) {
    if (s.reserve(bytes) == nullptr) return resource_exhausted("attention: cannot allocate scratch");
  }
  return {};
}

// One task per (sequence, head, group of queries): tiles of 64 queries where the tiled
// schedule applies, else groups small enough to balance the threads.
void Attention::run_queries(ThreadPool& pool, const AttentionContext& c, std::span<const SequenceAttention> seqs) {
  work_.clear();
  for (size_t si = 0; si < seqs.size(); ++si) {
    const SequenceAttention& s = seqs[si];
    const bool tiled = use_tiles(c, s);
    const int32_t step = tiled ? kTileQueries : std::clamp<int32_t>(s.n_query / (2 * pool.size()), 1, 16);
    for (int32_t h = 0; h < c.n_heads; ++h) {
      for (int32_t q0 = 0; q0 < s.n_query; q0 += step) {
        work_.push_back({static_cast<int32_t>(si), h, q0, std::min(q0 + step, s.n_query), tiled});
      }
    }
  }
  pool.parallel_for(static_cast<int64_t>(work_.size()), [&](int64_t task, int thread) {
    const Work& w = work_[static_cast<size_t>(task)];
    const SequenceAttention& s = seqs[static_cast<size_t>(w.sequence)];
    std::byte* scratch = thread_scratch_[static_cast<size_t>(thread)].reserve(0);
    if (w.tiled) {
      attend_tile(c, s, w.head, w.q_begin, w.q_end, scratch);
    } else {
      for (int32_t i = w.q_begin; i < w.q_end; ++i) attend_query(c, s, s.query_start + i, w.head, scratch);
    }
  });
}

Status Attention::run_split(ThreadPool& pool, const AttentionContext& c, const SequenceAttention& s) {
  const int64_t n_chunks = pool.size();
  const int64_t n_positions = s.n_context;
  const int64_t chunk = (n_positions + n_chunks - 1) / n_chunks;
  const size_t partial_floats = 2 + static_cast<size_t>(c.head_dim);
  float* partials = reinterpret_cast<float*>(
      partials_.reserve(sizeof(float) * partial_floats * static_cast<size_t>(n_chunks * c.n_heads)));
  if (partials == nullptr) return resource_exhausted("attention: cannot allocate scratch");
  const int64_t row = s.query_start;

  // Partial state of chunk i for head h at partials[(h * n_chunks + i) * partial_floats]:
  // max, sum, then the unnormalized V sum.
  pool.parallel_for(n_chunks, [&](int64_t i, int thread) {
    std::byte* scratch = thread_scratch_[static_cast<size_t>(thread)].reserve(0);
    const int64_t begin = std::min(i * chunk, n_positions), end = std::min(begin + chunk, n_positions);
    for (int32_t h = 0; h < c.n_heads; ++h) {
      float* p = partials + (static_cast<size_t>(h) * n_chunks + i) * partial_floats;
      const SoftmaxState state = attend_positions(c, s, row, h, begin, end, scratch, p + 2);
      p[0] = state.max;
      p[1] = state.sum;
    }
  });
  // Merge the chunks of each head in chunk order.
  pool.parallel_for(c.n_heads, [&](int64_t h, int) {
    float* acc = c.output(row, static_cast<int32_t>(h));
    std::memset(acc, 0, sizeof(float) * static_cast<size_t>(c.head_dim));
    float max = -std::numeric_limits<float>::infinity(), sum = 0.0f;
    for (int64_t i = 0; i < n_chunks; ++i) {
      const float* p = partials + (static_cast<size_t>(h) * n_chunks + i) * partial_floats;
      if (p[1] == 0.0f) continue;
      const float new_max = std::fmax(max, p[0]);
      const float old_scale = std::exp(max - new_max), chunk_scale = std::exp(p[0] - new_max);
      for (int32_t d = 0; d < c.head_dim; ++d) acc[d] = acc[d] * old_scale + p[2 + d] * chunk_scale;
      sum = sum * old_scale + p[1] * chunk_scale;
      max = new_max;
    }
    if (sum != 0.0f) c.kernels->scale_f32(acc, 1.0f / sum, c.head_dim);
  });
  return {};
}

}  // namespace pagoda::backend::cpu
