#pragma once
// The Backend interface: device memory, copies, the ops models are written in, and
// synchronisation. Model code calls only these (DESIGN.md invariant 4); each op has a
// CPU implementation (backend/cpu/) and, later, a CUDA one, behind this one dispatch.
//
// Conventions: activations are f32 row-major matrices [n_rows][n_cols] viewed as
// TensorView with ne = {n_cols, n_rows}. Weights are GGUF tensors [n_out][n_in] of any
// supported type (ne = {n_in, n_out}), read in place. Outputs are written, never
// accumulated, unless the op says so. Ops may run asynchronously; synchronize() waits.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/attention_batch.h"
#include "backend/kv_storage.h"
#include "backend/op_times.h"
#include "backend/tensor.h"
#include "core/status.h"
#include "sampling/row_sampling.h"

namespace pagoda::backend {

// Memory owned by a backend; freed when the owner goes away. Move-only.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual void* data() = 0;
  virtual size_t size() const = 0;
};

// The KV cache memory of every layer (see kv_storage.h for the layout).
class KvStorage {
 public:
  virtual ~KvStorage() = default;
  virtual const KvCacheShape& shape() const = 0;
  // K or V of one layer: ne = {n_kv_heads * head_dim, block_size * n_blocks}.
  virtual TensorView keys(int32_t layer) = 0;
  virtual TensorView values(int32_t layer) = 0;
};

// One product of Backend::matmuls: y = x W^T.
struct MatmulTarget {
  TensorView w;  // [n_out][n_in], any weight type
  TensorView y;  // [n][n_out] f32
};

struct RopeParams {
  int32_t n_dims = 0;        // leading dims of each head that rotate (<= head_dim)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;   // linear position scaling (1 / factor)
  bool neox = false;         // pairs (i, i + n_dims/2) instead of (2i, 2i+1)
  const float* freq_factors = nullptr;  // [n_dims / 2] divisors of the frequencies (llama 3), or null
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // e.g. "cpu (avx2, 2 threads)"

  // --- memory -------------------------------------------------------------------
  virtual Expected<std::unique_ptr<Buffer>> allocate(size_t bytes) = 0;
  virtual Expected<std::unique_ptr<KvStorage>> allocate_kv(const KvCacheShape& shape) = 0;
  // Host memory that copies between it and the device are fastest with (a GPU's pinned
  // memory; plain memory by default): for what the host reads every step, the logits.
  virtual Expected<std::unique_ptr<Buffer>> allocate_host(size_t bytes);
  // Makes a weight tensor of a mapped file usable by the ops. The CPU returns the view
  // as it is (weights stay in the mmap); a GPU copies it to device memory.
  virtual Expected<TensorView> upload_weight(const TensorView& host) = 0;
  virtual void copy_to_host(const TensorView& src, void* dst) = 0;   // contiguous src
  // Bytes a KV cache may take on this backend's device when none is configured, and
  // how that figure came about (for the log); nullopt: the cache lives in host memory
  // and the engine sizes it from the host's available memory.
  struct CacheMemory {
    uint64_t bytes = 0;
    std::string description;  // e.g. "90% of 139.8 GiB less 2.1 GiB taken"
  };
  virtual std::optional<CacheMemory> cache_memory() const { return std::nullopt; }
  // How the backend has run its steps so far, for benchmarks to print (a GPU's steps
  // replayed as graphs); empty where there is nothing to say.
  virtual std::string step_summary() const { return {}; }
  // Where the uploaded weights live, for the start-up log (the CPU's copies on huge
  // pages, or the mapped file); empty where there is nothing to say.
  virtual std::string weight_placement() const { return {}; }
  // Whether ops may read and write views of host memory directly (the CPU's ops: the
  // host's memory is theirs), so that a caller can have results written where it wants
  // them instead of copying them there.
  virtual bool host_addressable() const { return false; }
  // Runs task(i) for every i in [0, n) on the host threads the backend computes with (the
  // CPU's thread pool), between ops, returning when all are done: host work of a step
  // (sampling each request) that would otherwise leave them idle. The tasks must be
  // independent of each other; any order, any thread. Others: in order, on the caller.
  virtual void run_host_tasks(int64_t n, const std::function<void(int64_t)>& task) {
    for (int64_t i = 0; i < n; ++i) task(i);
  }
  virtual void copy_from_host(const void* src, const TensorView& dst) = 0;
  // Performs the copies in order (a later copy may read what an earlier one wrote). A
  // block id outside the storage is an error (reported by take_error()); src == dst
  // copies nothing.
  virtual void copy_kv_blocks(KvStorage& kv, std::span<const KvBlockCopy> copies) = 0;
  virtual void synchronize() = 0;
  // The memory bandwidth memory-bound work such as decoding can reach, for benchmarks to
  // compare with: the CPU's streaming read with its threads, a GPU's large copy (read
  // plus written). Takes a second or so and briefly 1-2 GiB of memory; nullopt where not
  // measured.
  struct MemoryBandwidth {
    double bytes_per_second = 0.0;
    std::string method;  // how it was measured, e.g. "streaming read of 1 GiB, 2 threads"
  };
  virtual std::optional<MemoryBandwidth> measure_memory_bandwidth() { return std::nullopt; }
  // `count` weight matrices of [n_out][n_in], for measure_gemm_seconds.
  struct GemmShape {
    int64_t n_out = 0, n_in = 0;
    int64_t count = 1;
  };
  // Seconds the device's own general matrix products (a GPU's cuBLAS in BF16 with f32
  // accumulation) take for x [n_tokens][n_in] times every matrix of `shapes`, on random
  // values: what a prompt's matmuls are compared with. Takes a second or so; nullopt
  // where not measured.
  virtual std::optional<double> measure_gemm_seconds(std::span<const GemmShape> /*shapes*/,
                                                     int64_t /*n_tokens*/) {
    return std::nullopt;
  }
  // The time each op took since the last reset_op_times() (or the backend's start), most
  // first, when the backend was made to profile its ops (profile_ops in its options);
  // empty otherwise. Call after synchronize().
  virtual std::vector<OpTime> op_times() const { return {}; }
  virtual void reset_op_times() {}
  // Ops report nothing as they run (like asynchronous device work). Returns the first
  // error an op met since the last call (a view of the wrong type or shape, an index out
  // of range, no memory for scratch), or ok, and clears it. A failed op leaves its
  // outputs unspecified; callers check once per forward pass.
  virtual Status take_error() = 0;
  // ok while the device can take work; otherwise the fault that broke it for good (a GPU
  // kernel fault leaves its context unusable: the process must restart to use it again).
  virtual Status health() const { return {}; }

  // --- ops ----------------------------------------------------------------------
  // out[i] = table[ids[i]] as f32. table: [n_vocab][dim], any type; out: [n][dim].
  virtual void get_rows(const TensorView& table, std::span<const int32_t> ids,
                        const TensorView& out) = 0;
  // y = x W^T. w: [n_out][n_in] any weight type; x: [n][n_in] f32; y: [n][n_out] f32.
  virtual void matmul(const TensorView& w, const TensorView& x, const TensorView& y) = 0;
  // The products of one x with several weights (a layer's q, k and v; gate and up), each
  // y as matmul gives it: a backend may prepare x once and run them as one job.
  virtual void matmuls(const TensorView& x, std::span<const MatmulTarget> targets) {
    for (const MatmulTarget& t : targets) matmul(t.w, x, t.y);
  }
  // out = silu(x W_gate^T) * (x W_up^T), a gated feed-forward's first half (SwiGLU).
  // gate, up: [n][n_ff] f32 scratch the backend may write (or leave alone when it fuses
  // the products with the activation); out: [n][n_ff], may alias gate.
  virtual void matmuls_swiglu(const TensorView& x, const TensorView& w_gate, const TensorView& w_up,
                              const TensorView& gate, const TensorView& up, const TensorView& out) {
    const MatmulTarget targets[] = {{w_gate, gate}, {w_up, up}};
    matmuls(x, targets);
    silu_mul(gate, up, out);
  }
  // y[i] += bias for every row i. bias: [n_cols] f32 (weights may be f16/f32).
  virtual void add_bias(const TensorView& y, const TensorView& bias) = 0;
  // out = a + b, elementwise, same shapes (out may alias a or b).
  virtual void add(const TensorView& a, const TensorView& b, const TensorView& out) = 0;
  // y = x / rms(x) * weight, per row of x (rows of length ne[0]; works on head views).
  virtual void rms_norm(const TensorView& x, const TensorView& weight, float eps,
                        const TensorView& y) = 0;
  // x += delta, then y = rms_norm(x, weight) (a residual add and the next norm, one
  // pass over x where the backend fuses them). y must not alias x or delta.
  virtual void add_rms_norm(const TensorView& x, const TensorView& delta, const TensorView& weight, float eps,
                            const TensorView& y) {
    add(x, delta, x);
    rms_norm(x, weight, eps, y);
  }
  // y = (x - mean) / sqrt(var + eps) * weight + bias, per row.
  virtual void layer_norm(const TensorView& x, const TensorView& weight, const TensorView& bias,
                          float eps, const TensorView& y) = 0;
  // Rotates x in place. x: [n_tokens][n_heads][head_dim] (a head view, rows may be
  // strided); positions: one per token.
  virtual void rope(const TensorView& x, std::span<const int32_t> positions,
                    const RopeParams& params) = 0;
  // rope of a and of b (a layer's q and k: one head size, the same tokens; head counts
  // may differ), which a backend may do in one pass.
  virtual void rope_pair(const TensorView& a, const TensorView& b, std::span<const int32_t> positions,
                         const RopeParams& params) {
    rope(a, positions, params);
    rope(b, positions, params);
  }
  // out = silu(gate) * up (SwiGLU). All [n][n_ff] f32.
  virtual void silu_mul(const TensorView& gate, const TensorView& up, const TensorView& out) = 0;
  // x = gelu(x) in place (tanh approximation).
  virtual void gelu(const TensorView& x) = 0;
  // ids[i] = greedy_token(row i of x) (core/argmax.h: the first index of the row's
  // largest value, NaNs never ranking; -1 where that value is not above -inf or the
  // row starts with a NaN): a greedy sampler's choice, made where the logits are, so
  // that only the ids go to the host. x: [n][n_vocab] f32 rows; ids: [n] I32.
  virtual void argmax_rows(const TensorView& x, const TensorView& ids) = 0;
  // ids[i] = the token rows[i] chooses from row i of x (sampling/row_sampling.h's
  // sample_row: the sampler's bias, penalties, truncation and greedy token or draw, as
  // the engine's sampler takes it; -1 where no logit is above -inf; kLeftToHost for a row
  // the host's sampler is to take, whose logits the caller then reads). Made where the
  // logits are, so that only the ids (and the log-probabilities asked) go to the host.
  // x: [n][n_vocab] f32 rows; rows: [n]; adjustments: every row's, which rows[i] index;
  // ids: [n] I32; logprobs: [n][kRowLogprobsWords] I32 words, row i a RowLogprobs written
  // where rows[i] asks for log-probabilities and gets a token (a view without data when
  // no row asks). The rows x holds are left as they are.
  virtual void sample_rows(const TensorView& x, std::span<const RowSampling> rows,
                           std::span<const LogitAdjustment> adjustments, const TensorView& ids,
                           const TensorView& logprobs) = 0;
  // Writes the new K and V rows to their KV slots, then for each sequence computes
  // softmax(q k^T * scale + causal mask) v over its context, grouped-query style
  // (query head h reads KV head h / (n_heads / n_kv_heads)). q: [n][n_heads][head_dim],
  // k, v: [n][n_kv_heads][head_dim] (head views); out: [n][n_heads * head_dim] f32.
  virtual void attention(const TensorView& q, const TensorView& k, const TensorView& v,
                         KvStorage& kv, int32_t layer, const AttentionBatch& batch,
                         float scale, const TensorView& out) = 0;
};

}  // namespace pagoda::backend
