#pragma once
// The CUDA implementations of the Backend ops (see backend/backend.h for shapes and
// meaning). Views point to device memory. Index inputs (ids, positions, KV slots, block
// tables) are device arrays the backend staged from the host spans for this step.
//
// Each op checks its views on the host first (types, shapes, strides) and returns an
// error without launching for one it cannot handle; otherwise it enqueues its kernels on
// ctx.stream and returns the launch error, if any. Nothing here synchronizes or
// allocates: temporaries come from ctx.workspace.

#include <cstdint>
#include <span>

#include "backend/backend.h"
#include "backend/cuda/attention_rows.h"
#include "backend/cuda/context.h"
#include "core/dtype.h"
#include "core/status.h"

namespace pagoda::backend::cuda {

// --- weights ----------------------------------------------------------------------
// True for the weight types matmul reads: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS (those of the CPU backend).
bool matmul_supports(DType type);

// out[i] = table[ids[i]] as f32. ids: device [n_ids].
Status get_rows(const Context& ctx, const TensorView& table, const int32_t* ids, int64_t n_ids,
                const TensorView& out);
// y = x W^T. A few tokens: a kernel that dequantizes W as it streams it; more: W
// dequantized to f16 in workspace pieces and multiplied by cuBLAS (f32 weights: SGEMM).
Status matmul(const Context& ctx, const TensorView& w, const TensorView& x, const TensorView& y);
// Backend::matmuls: one launch of the few-token kernel where the weights share a type
// and row length, else one matmul each.
Status matmuls(const Context& ctx, const TensorView& x, std::span<const MatmulTarget> targets);
// Backend::matmuls_swiglu: for one token one launch that writes only out; otherwise the
// two products into gate and up (one launch for a few tokens), then silu_mul.
Status matmuls_swiglu(const Context& ctx, const TensorView& x, const TensorView& w_gate, const TensorView& w_up,
                      const TensorView& gate, const TensorView& up, const TensorView& out);

// --- elementwise and norms --------------------------------------------------------
Status add_bias(const Context& ctx, const TensorView& y, const TensorView& bias);
Status add(const Context& ctx, const TensorView& a, const TensorView& b, const TensorView& out);
Status rms_norm(const Context& ctx, const TensorView& x, const TensorView& weight, float eps,
                const TensorView& y);
// x += delta, then y = rms_norm(x): one kernel. y must not alias x or delta.
Status add_rms_norm(const Context& ctx, const TensorView& x, const TensorView& delta,
                    const TensorView& weight, float eps, const TensorView& y);
Status layer_norm(const Context& ctx, const TensorView& x, const TensorView& weight,
                  const TensorView& bias, float eps, const TensorView& y);
// positions: device [n_tokens]; params.freq_factors, if set, is device memory (an
// uploaded weight).
Status rope(const Context& ctx, const TensorView& x, const int32_t* positions,
            const RopeParams& params);
// Backend::rope_pair: both views (one head size, the same tokens) in one launch.
Status rope_pair(const Context& ctx, const TensorView& a, const TensorView& b, const int32_t* positions,
                 const RopeParams& params);
Status silu_mul(const Context& ctx, const TensorView& gate, const TensorView& up,
                const TensorView& out);
Status gelu(const Context& ctx, const TensorView& x);
// Backend::argmax_rows (argmax_rows.cu).
Status argmax_rows(const Context& ctx, const TensorView& x, const TensorView& ids);
// Backend::sample_rows (sample_rows.cu); rows: device [x's rows], adjustments: device
// copies of what they index, both checked by the backend; any_adjustment: whether a row
// has one (their adjusted logits then take workspace); logprobs: device [x's rows], or
// null when no row asks for them.
Status sample_rows(const Context& ctx, const TensorView& x, const RowSampling* rows,
                   const LogitAdjustment* adjustments, bool any_adjustment, const TensorView& ids,
                   RowLogprobs* logprobs);

// --- attention --------------------------------------------------------------------
// One layer's KV storage: K and V, each ne = {n_kv_heads * head_dim, block_size *
// n_blocks} of the cache type (F16, F32 or Q8_0), rows contiguous.
struct KvLayer {
  TensorView k;
  TensorView v;
};


// backend::AttentionBatch staged in device memory. The host-side counts and maxima let
// the launchers size their grids without reading device memory.
struct DeviceAttentionBatch {
  const DeviceSequence* sequences = nullptr;  // device [n_sequences]
  const int32_t* block_tables = nullptr;      // device, every sequence's table
  const int64_t* slot_mapping = nullptr;      // device [n_tokens]: block * block_size + row
  const int32_t* row_sequence = nullptr;      // device [n_tokens]: sequence of each batch row
  int32_t n_sequences = 0;
  int32_t n_tokens = 0;
  int32_t block_size = 16;
  int32_t max_n_query = 0;    // over the sequences
  int32_t max_n_context = 0;  // over the sequences
};

// Writes row t of k and v (f32 head views [n_tokens][n_kv_heads][head_dim]) to KV slot
// slot_mapping[t] of `layer`, converted to the cache type, then for every batch row t
// of sequence s computes softmax(q_t K^T * scale) V over the first
// n_context - n_query + (t - query_start) + 1 tokens of s's context (causal), query
// head h reading KV head h / (n_heads / n_kv_heads). q: [n_tokens][n_heads][head_dim]
// (head view); out: [n_tokens][n_heads * head_dim] f32. The batch has been checked by
// the backend (slots and block ids inside the storage).
// The splits of a row's context the launches of `batch` make: beside the views, the
// batch's arrays and its counts, the one value of max_n_context they depend on (so that
// decoding steps whose contexts grow launch the same kernels until a split is added).
int32_t attention_splits(const DeviceAttentionBatch& batch);
// Once per device, before the first attention: the kernels' shared-memory opt-ins, as
// far as the device allows them (ctx.shared_memory_optin; a kernel whose largest block
// it does not allow is left out: the tensor-core one for those head sizes, the scalar
// one's launches of such blocks fail as unsupported).
Status prepare_attention(const Context& ctx);
Status attention(const Context& ctx, const TensorView& q, const TensorView& k,
                 const TensorView& v, const KvLayer& layer, const DeviceAttentionBatch& batch,
                 float scale, const TensorView& out);

}  // namespace pagoda::backend::cuda
