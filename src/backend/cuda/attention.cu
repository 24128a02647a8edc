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
// scalar one (attention_kernels.cuh, with the merge). Which one depends on the model and
// cache only. The scalar kernel: a block's warps are its (row, query head) pairs, any
// head size up to 256 (lane l holds values l, l + 32, ... of a head); a split is walked
// in tiles of 32 positions: the tile's K and V (converted to f32) go to shared memory,
// each lane scores one position against the warp's query, an online softmax (running max
// and sum) rescales the accumulator, and the V rows are summed with lanes over head_dim.
// Everything accumulates in f32; exponentials are expf.

#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "backend/cuda/attention_args.cuh"
#include "backend/cuda/attention_kernels.cuh"
#include "backend/cuda/f32_rows.cuh"
#include "backend/cuda/kv_types.cuh"

namespace pagoda::backend::cuda {
namespace {

using scalar_attention::attention_kernel;
using scalar_attention::kMaxBlockWarps;
using scalar_attention::kMaxWarps;
using scalar_attention::merge_splits_kernel;
using scalar_attention::shared_bytes;

constexpr int kMaxGridYZ = 65535;

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
  set_block_shape(a, batch.max_n_query, ctx.attention_row_groups);
  switch (type) {
    case KvType::kF32: return run_attention<KvType::kF32>(ctx, a, n_tokens);
    case KvType::kF16: return run_attention<KvType::kF16>(ctx, a, n_tokens);
    case KvType::kQ8_0: return run_attention<KvType::kQ8_0>(ctx, a, n_tokens);
  }
  return internal_error("attention: cache type");
}

}  // namespace pagoda::backend::cuda
