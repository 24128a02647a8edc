// Paged attention on the GPU (see ops.h for the contract). First the new K/V rows go to
// their slots (kv_write.cu); then every batch row attends to its sequence's context read
// back from the cache, so the new tokens are rounded as the cache rounds them.
//
// Grid: one block per (batch row, KV head, split). A block takes query heads of that KV
// head's group (a larger group takes several blocks) for up to rows_per_block
// consecutive query rows of one sequence (prompts: the block of a group's first row
// takes the group, the others leave at once; decoding rows: one each), so each K/V tile
// loaded from the cache serves all of them. A row's context [0, position] is cut into
// splits of kSplitPositions, aligned to position 0 (attention_args.cuh). A row with one
// split writes its output directly; a longer one writes each split's (max, sum, unscaled
// output) to workspace, and a merge kernel combines them in split order. Split boundaries
// depend on positions only, and a row's operations are the same whichever rows share its
// block, so a row's result is the same whatever else is in the batch.
//
// Two kernels: with an f16 cache and a head size that is a multiple of 16, the one on
// tensor cores (attention_mma.cu); otherwise, or with PAGODA_CUDA_ATTENTION=scalar, the
// scalar one here. Which one depends on the model and cache only. The scalar kernel: a
// block's warps are its (row, query head) pairs, any head size up to 256 (lane l holds
// values l, l + 32, ... of a head); a split is walked in tiles of 32 positions: the
// tile's K and V (converted to f32) go to shared memory, each lane scores one position
// against the warp's query, an online softmax (running max and sum) rescales the
// accumulator, and the V rows are summed with lanes over head_dim. Everything
// accumulates in f32; exponentials are expf.

#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "backend/cuda/attention_args.cuh"
#include "backend/cuda/f32_rows.cuh"
#include "backend/cuda/kv_types.cuh"
#include "backend/cuda/launch_order.cuh"

namespace pagoda::backend::cuda {
namespace {

constexpr int kTile = 32;             // positions per tile: one per lane
constexpr int kMaxValuesPerLane = kMaxHeadDim / 32;  // lane l holds values l, l + 32, ...
constexpr int kMaxWarps = 8;          // query heads per block row
constexpr int kMaxBlockWarps = 16;    // warps per block: query heads x rows
constexpr int kMaxGridYZ = 65535;

__device__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// One warp's running softmax: max and sum of exp(score - max), and this lane's share of
// sum_p exp(score_p - max) v_p (values lane, lane + 32, ...).
struct RunningSoftmax {
  float max = -INFINITY;
  float sum = 0.0f;
  float acc[kMaxValuesPerLane] = {};
};

// Folds one tile of n_tile positions into the warp's state. q: [head_dim] the warp's
// query; k_tile: [kTile][head_dim + 1] (padded: lane p reading K row p hits bank p + d);
// v_tile: [kTile][head_dim]; weights: [kTile] the warp's own scratch.
__device__ void attend_tile(const float* q, const float* k_tile, const float* v_tile, float* weights,
                            int n_tile, int head_dim, float scale, RunningSoftmax& st) {
  const int lane = threadIdx.x % 32;
  float score = -INFINITY;
  if (lane < n_tile) {
    const float* k = k_tile + lane * (head_dim + 1);
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;  // four chains, the rest into the first
    int d = 0;
    for (; d + 4 <= head_dim; d += 4) {
      s0 = fmaf(q[d], k[d], s0);
      s1 = fmaf(q[d + 1], k[d + 1], s1);
      s2 = fmaf(q[d + 2], k[d + 2], s2);
      s3 = fmaf(q[d + 3], k[d + 3], s3);
    }
    for (; d < head_dim; ++d) s0 = fmaf(q[d], k[d], s0);
    score = ((s0 + s1) + (s2 + s3)) * scale;
  }
  const float new_max = fmaxf(st.max, warp_max(score));
  // Nothing finite seen yet (only with infinite inputs): keep everything at zero.
  const bool empty = new_max == -INFINITY;
  const float correction = empty ? 1.0f : expf(st.max - new_max);  // expf(-inf) = 0 at the start
  const float w = (lane < n_tile && !empty) ? expf(score - new_max) : 0.0f;
  st.sum = st.sum * correction + warp_sum(w);
  st.max = new_max;
  weights[lane] = w;
  __syncwarp();
#pragma unroll
  for (int j = 0; j < kMaxValuesPerLane; ++j) st.acc[j] *= correction;
  for (int p = 0; p < n_tile; ++p) {
    const float wp = weights[p];
    const float* v = v_tile + p * head_dim + lane;
#pragma unroll
    for (int j = 0; j < kMaxValuesPerLane; ++j) {
      if (lane + 32 * j < head_dim) st.acc[j] = fmaf(wp, v[32 * j], st.acc[j]);
    }
  }
}

// Fills the tile of positions [start, start + n_tile) of KV head `kv_head`: the slots
// first (one table lookup per position), then K and V converted to f32, warp w taking
// positions w, w + warps, ... with lanes over the values.
template <KvType T>
__device__ void load_tile(const AttentionArgs& a, const DeviceSequence& seq, int32_t kv_head,
                          int32_t start, int n_tile, int64_t* slots, float* k_tile, float* v_tile) {
  if (static_cast<int>(threadIdx.x) < n_tile) {
    const int32_t p = start + static_cast<int32_t>(threadIdx.x);
    const int64_t block = a.block_tables[seq.table_offset + p / a.block_size];
    slots[threadIdx.x] = block * a.block_size + p % a.block_size;
  }
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, hd = a.head_dim;
  for (int i = warp; i < n_tile; i += a.heads_per_block * a.rows_per_block) {
    const int64_t offset = slots[i] * a.slot_bytes;
    const char* k = a.k_cache + offset;
    const char* v = a.v_cache + offset;
    for (int d = lane; d < hd; d += 32) {
      k_tile[i * (hd + 1) + d] = load_kv<T>(k, kv_head * hd + d);
      v_tile[i * hd + d] = load_kv<T>(v, kv_head * hd + d);
    }
  }
}

// Writes the warp's result: normalized to the output row, or as a split's partial.
__device__ void write_result(const AttentionArgs& a, int32_t row, int32_t head, int32_t split,
                             int32_t row_splits, const RunningSoftmax& st) {
  const int lane = threadIdx.x % 32;
  float factor;
  float2* state;
  float* target = result_target(a, row, head, split, row_splits, st.sum, &factor, &state);
  if (state != nullptr && lane == 0) *state = make_float2(st.max, st.sum);
#pragma unroll
  for (int j = 0; j < kMaxValuesPerLane; ++j) {
    if (lane + 32 * j < a.head_dim) target[lane + 32 * j] = st.acc[j] * factor;
  }
}

template <KvType T>
__global__ void __launch_bounds__(kMaxBlockWarps * 32) attention_kernel(AttentionArgs a) {
  allow_next_kernel();  // the output projection's matmul may start streaming its weights
  extern __shared__ float smem[];  // see the carving below
  __shared__ int64_t slots[kTile];
  BlockSpan span;
  if (!block_span(a, &span)) return;  // the whole block
  const DeviceSequence& seq = span.seq;
  const int32_t first_row = span.first_row, rows_end = span.rows_end, kv_head = span.kv_head, split = span.split;
  const int32_t begin = span.begin, end = span.end;

  const int hd = a.head_dim, warp = threadIdx.x / 32, n_warps = a.heads_per_block * a.rows_per_block;
  float* k_tile = smem;                          // [kTile][hd + 1]
  float* v_tile = k_tile + kTile * (hd + 1);    // [kTile][hd]
  float* q = v_tile + kTile * hd + warp * hd;   // [n_warps][hd]: this warp's
  float* weights = v_tile + kTile * hd + n_warps * hd + warp * kTile;  // [n_warps][kTile]
  // This warp's row and query head, and its positions in this split.
  const int32_t row = first_row + warp / a.heads_per_block;
  const int32_t head_in_group = span.chunk * a.heads_per_block + warp % a.heads_per_block;
  const int32_t head = kv_head * a.group + head_in_group;
  const int32_t n_positions = row < rows_end ? attended_positions(seq, row) : 0;
  const int32_t row_splits = splits_of(a, n_positions);
  // The last chunk of a group may be short; a row may have fewer splits than the block.
  const bool active = row < rows_end && head_in_group < a.group && split < row_splits;
  const int32_t row_end = active ? split_end(split, row_splits, n_positions) : begin;
  if (active) {
    const float* q_row = reinterpret_cast<const float*>(a.q + row * a.q_token_bytes + head * a.q_head_bytes);
    for (int d = threadIdx.x % 32; d < hd; d += 32) q[d] = q_row[d];
  }
  RunningSoftmax st;
  for (int32_t start = begin; start < end; start += kTile) {
    const int n_tile = min(kTile, end - start);
    __syncthreads();  // the previous tile (and its slots) have been read; q is written
    load_tile<T>(a, seq, kv_head, start, n_tile, slots, k_tile, v_tile);
    __syncthreads();
    // The row's own part of the tile: the tiles a row alone in its block would see.
    const int row_tile = min(kTile, row_end - start);
    if (active && row_tile > 0) attend_tile(q, k_tile, v_tile, weights, row_tile, hd, a.scale, st);
  }
  if (active) write_result(a, row, head, split, row_splits, st);
}

// Combines the splits of rows with more than one, in split order. Grid: (piece rows,
// n_heads); one warp, lanes over head_dim.
__global__ void merge_splits_kernel(AttentionArgs a) {
  allow_next_kernel();
  const int32_t row = a.row_begin + static_cast<int32_t>(blockIdx.x);
  const int32_t head = blockIdx.y;
  const DeviceSequence seq = a.sequences[a.row_sequence[row]];
  const int32_t row_splits = splits_of(a, attended_positions(seq, row));
  if (row_splits <= 1) return;  // written directly
  const int64_t first = (static_cast<int64_t>(blockIdx.x) * a.n_heads + head) * a.n_splits;
  float max = -INFINITY;
  for (int32_t s = 0; s < row_splits; ++s) max = fmaxf(max, a.partial_state[first + s].x);
  const int lane = threadIdx.x;
  float acc[kMaxValuesPerLane] = {};
  float sum = 0.0f;
  for (int32_t s = 0; s < row_splits; ++s) {
    const float2 state = a.partial_state[first + s];
    const float w = state.x == -INFINITY ? 0.0f : expf(state.x - max);
    sum += state.y * w;
    const float* part = a.partial_out + (first + s) * a.head_dim;
#pragma unroll
    for (int j = 0; j < kMaxValuesPerLane; ++j) {
      if (lane + 32 * j < a.head_dim) acc[j] = fmaf(part[lane + 32 * j], w, acc[j]);
    }
  }
  const float factor = sum == 0.0f ? 0.0f : 1.0f / sum;
  float* target = reinterpret_cast<float*>(a.out + row * a.out_row_bytes) + head * a.head_dim;
#pragma unroll
  for (int j = 0; j < kMaxValuesPerLane; ++j) {
    if (lane + 32 * j < a.head_dim) target[lane + 32 * j] = acc[j] * factor;
  }
}

size_t shared_bytes(int32_t head_dim, int32_t warps) {
  return sizeof(float) * (static_cast<size_t>(kTile) * (2 * head_dim + 1) +
                          static_cast<size_t>(warps) * (head_dim + kTile));
}

bool is_head_view(const TensorView& v, int64_t head_dim, int64_t n_heads, int64_t n_tokens) {
  return is_f32_rows(v) && v.ne[0] == head_dim && v.ne[1] == n_heads && v.ne[2] == n_tokens && v.ne[3] == 1;
}

// The host-side checks of attention(): shapes, types, alignment, grid limits.
Status check_attention(const TensorView& q, const TensorView& k, const TensorView& v,
                       const KvLayer& layer, const DeviceAttentionBatch& batch, const TensorView& out) {
  const int64_t head_dim = q.ne[0], n_heads = q.ne[1], n_tokens = q.ne[2], n_kv_heads = k.ne[1];
  KvType type = KvType::kF16;
  if (!kv_type_of(layer.k.type, &type) || layer.v.type != layer.k.type) {
    return unsupported("attention: the KV cache must be f16, f32 or q8_0");
  }
  if (head_dim <= 0 || head_dim > kMaxHeadDim) {
    return unsupported("attention: head_dim must be at most 256");
  }
  const int64_t row_values = n_kv_heads * head_dim;
  if (type == KvType::kQ8_0 && row_values % kQ8Values != 0) {
    return unsupported("attention: a q8_0 cache needs n_kv_heads * head_dim to be a multiple of 32");
  }
  const size_t row = static_cast<size_t>(row_bytes(layer.k.type, row_values > 0 ? row_values : 0));
  const size_t align = layer.k.type == DType::F32 ? 4 : 2;
  if (!is_head_view(q, head_dim, n_heads, n_tokens) || !is_head_view(k, head_dim, n_kv_heads, n_tokens) ||
      !is_head_view(v, head_dim, n_kv_heads, n_tokens) || n_kv_heads <= 0 || n_heads < n_kv_heads || n_heads % n_kv_heads != 0 ||
      !is_f32_rows(out) || out.ne[0] != n_heads * head_dim || out.ne[1] != n_tokens || out.n_rows() != n_tokens ||
      layer.k.ne[0] != row_values || layer.v.ne[0] != row_values || layer.k.nb[1] != layer.v.nb[1] ||
      layer.k.nb[1] < row || layer.k.nb[1] % align != 0 || layer.k.data == nullptr ||
      layer.v.data == nullptr || reinterpret_cast<uintptr_t>(layer.k.data) % align != 0 ||
      reinterpret_cast<uintptr_t>(layer.v.data) % align != 0) {
    return invalid_argument(
        "attention: q, k, v must be f32 head views matching the cache and out [n][n_heads * head_dim]");
  }
  if (batch.n_tokens != n_tokens || batch.block_size <= 0 || batch.max_n_context < 0) {
    return invalid_argument("attention: the batch does not match the views");
  }
  if (n_tokens > 0 && (batch.sequences == nullptr || batch.block_tables == nullptr ||
                       batch.slot_mapping == nullptr || batch.row_sequence == nullptr)) {
    return invalid_argument("attention: the batch's device arrays are missing");
  }
  const int64_t group = n_heads / n_kv_heads;
  const int64_t warps = group < kMaxWarps ? group : kMaxWarps;
  const int64_t grid_y = n_kv_heads * ((group + warps - 1) / warps);
  const int64_t n_splits = attention_splits(batch);
  if (grid_y > kMaxGridYZ || n_heads > kMaxGridYZ || n_splits > kMaxGridYZ || n_tokens > kMaxGridX) {
    return unsupported("attention: too many heads, tokens or context positions for one launch");
  }
  return {};
}

template <KvType T>
Status launch_attention(const Context& ctx, AttentionArgs a, int32_t n_rows) {
  a.row_end = a.row_begin + n_rows;
  const dim3 grid(static_cast<unsigned>(n_rows), static_cast<unsigned>(a.head_chunks * (a.n_heads / a.group)),
                  static_cast<unsigned>(a.n_splits));
  if (a.tensor_cores) {
    PAGODA_TRY(launch_attention_mma(ctx, a, grid));
  } else {
    const size_t smem = shared_bytes(a.head_dim, a.heads_per_block * a.rows_per_block);
    attention_kernel<T><<<grid, a.heads_per_block * a.rows_per_block * 32, smem, ctx.stream>>>(a);
    PAGODA_TRY(launch_status("attention"));
  }
  if (a.n_splits == 1) return {};
  merge_splits_kernel<<<dim3(static_cast<unsigned>(n_rows), static_cast<unsigned>(a.n_heads)), 32, 0,
                        ctx.stream>>>(a);
  return launch_status("attention: merge");
}

// Launches the rows in pieces whose split partials fit the workspace (all of them at
// once when no row needs more than one split). Each piece reuses the same scratch: the
// stream runs a piece's merge before the next piece's attention.
template <KvType T>
Status run_attention(const Context& ctx, AttentionArgs a, int32_t n_tokens) {
  if (a.n_splits == 1) return launch_attention<T>(ctx, a, n_tokens);
  if (ctx.workspace == nullptr) return resource_exhausted("attention: needs workspace for long contexts");
  ScratchScope scope(*ctx.workspace);
  const size_t per_row_entries = static_cast<size_t>(a.n_heads) * static_cast<size_t>(a.n_splits);
  // Both arrays rounded up to 256 bytes by Workspace::take: leave room for that.
  const size_t per_row_bytes = per_row_entries * (sizeof(float) * a.head_dim + sizeof(float2));
  const size_t room = ctx.workspace->remaining() > 512 ? ctx.workspace->remaining() - 512 : 0;
  const size_t rows_fit = room / per_row_bytes;
  if (rows_fit == 0) return resource_exhausted("attention: workspace too small for one row's splits");
  const int32_t piece = static_cast<int32_t>(rows_fit < static_cast<size_t>(n_tokens) ? rows_fit : n_tokens);
  a.partial_out = static_cast<float*>(ctx.workspace->take(piece * per_row_entries * sizeof(float) * a.head_dim));
  a.partial_state = static_cast<float2*>(ctx.workspace->take(piece * per_row_entries * sizeof(float2)));
  if (a.partial_out == nullptr || a.partial_state == nullptr) {
    return internal_error("attention: workspace accounting");
  }
  for (int32_t first = 0; first < n_tokens; first += piece) {
    a.row_begin = first;
    PAGODA_TRY(launch_attention<T>(ctx, a, n_tokens - first < piece ? n_tokens - first : piece));
  }
  return {};
}

// Opts the instance in to the shared memory of its largest block (head size 256, 16
// warps), above the default 48 KiB, as far as the device allows.
template <KvType T>
Status allow_shared_memory(const Context& ctx) {
  return opt_in_shared_memory(reinterpret_cast<const void*>(attention_kernel<T>),
                             std::min(shared_bytes(kMaxHeadDim, kMaxBlockWarps), ctx.shared_memory_optin));
}

}  // namespace

Status prepare_attention(const Context& ctx) {
  PAGODA_TRY(allow_shared_memory<KvType::kF32>(ctx));
  PAGODA_TRY(allow_shared_memory<KvType::kF16>(ctx));
  PAGODA_TRY(allow_shared_memory<KvType::kQ8_0>(ctx));
  return prepare_attention_mma(ctx);
}

int32_t attention_splits(const DeviceAttentionBatch& batch) {
  if (batch.max_n_context <= kSplitPositions) return 1;
  // A power of two (rows with fewer splits leave the rest of the grid idle): decoding
  // steps launch the same grid while their contexts grow, until it doubles.
  const auto splits = static_cast<uint32_t>((batch.max_n_context + kSplitPositions - 1) / kSplitPositions);
  return static_cast<int32_t>(std::bit_ceil(splits));
}

Status attention(const Context& ctx, const TensorView& q, const TensorView& k, const TensorView& v,
                 const KvLayer& layer, const DeviceAttentionBatch& batch, float scale,
                 const TensorView& out) {
  PAGODA_TRY(check_attention(q, k, v, layer, batch, out));
  const int32_t n_tokens = static_cast<int32_t>(q.ne[2]);
  if (n_tokens == 0) return {};
  PAGODA_TRY(write_kv_rows(ctx, k, v, layer, batch.slot_mapping));
  AttentionArgs a{};
  a.q = static_cast<const char*>(q.data);
  a.q_head_bytes = static_cast<int64_t>(q.nb[1]);
  a.q_token_bytes = static_cast<int64_t>(q.nb[2]);
  a.k_cache = static_cast<const char*>(layer.k.data);
  a.v_cache = static_cast<const char*>(layer.v.data);
  a.slot_bytes = static_cast<int64_t>(layer.k.nb[1]);
  a.out = static_cast<char*>(out.data);
  a.out_row_bytes = static_cast<int64_t>(out.nb[1]);
  a.sequences = batch.sequences;
  a.block_tables = batch.block_tables;
  a.row_sequence = batch.row_sequence;
  a.n_heads = static_cast<int32_t>(q.ne[1]);
  a.group = static_cast<int32_t>(q.ne[1] / k.ne[1]);
  a.head_dim = static_cast<int32_t>(q.ne[0]);
  a.block_size = batch.block_size;
  a.n_splits = attention_splits(batch);
  a.scale = scale;
  KvType type = KvType::kF16;
  if (!kv_type_of(layer.k.type, &type)) return internal_error("attention: cache type");
  // Which kernel depends on the model and its cache only, never on the batch: every row
  // of every step goes through the same one (batch invariance).
  a.tensor_cores = ctx.attention_tensor_cores && type == KvType::kF16 && attention_mma_takes_head_dim(a.head_dim) &&
                   attention_mma_fits(ctx, a.head_dim) &&
                   reinterpret_cast<uintptr_t>(layer.k.data) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(layer.v.data) % 16 == 0 && a.slot_bytes % 16 == 0;
  // Heads: a block row takes the group's heads up to the kernel's limit (larger groups
  // take several blocks). Rows: prompts put several rows of a sequence in a block, so
  // that each K/V tile serves all of them; decoding rows (one a sequence) go one a block.
  const int32_t most_heads = a.tensor_cores ? attention_mma_block_rows(a.head_dim) : kMaxWarps;
  a.heads_per_block = a.group < most_heads ? a.group : most_heads;
  a.head_chunks = (a.group + a.heads_per_block - 1) / a.heads_per_block;
  const int32_t most_rows = a.tensor_cores ? attention_mma_block_rows(a.head_dim) : kMaxBlockWarps;
  const int32_t rows = most_rows / a.heads_per_block;
  a.rows_per_block = ctx.attention_row_groups && batch.max_n_query > 1 && rows > 1 ? rows : 1;
  switch (type) {
    case KvType::kF32: return run_attention<KvType::kF32>(ctx, a, n_tokens);
    case KvType::kF16: return run_attention<KvType::kF16>(ctx, a, n_tokens);
    case KvType::kQ8_0: return run_attention<KvType::kQ8_0>(ctx, a, n_tokens);
  }
  return internal_error("attention: cache type");
}

}  // namespace pagoda::backend::cuda
