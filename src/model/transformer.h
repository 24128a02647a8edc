#pragma once
// The plumbing every decoder-only transformer here shares, so that each architecture's
// file holds only its weights and a forward pass that reads like the math:
//   - Activation: an f32 scratch matrix in backend memory, allocated once at load for
//     the most rows a pass may have;
//   - TransformerModel: checks each batch, then runs the architecture's pass; helpers
//     for RoPE on head views, the attention call, and the logits of the selected rows.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "backend/backend.h"
#include "core/status.h"
#include "model/batch_check.h"
#include "model/config.h"
#include "model/model.h"
#include "model/weight_loader.h"

namespace pagoda::model {

// An f32 matrix [max_rows][n_cols] in backend memory. A pass uses its first n rows.
class Activation {
 public:
  Activation() = default;
  static Expected<Activation> allocate(backend::Backend& backend, int64_t n_cols,
                                       int64_t max_rows);
  backend::TensorView rows(int64_t n) const;  // the first n rows, [n][n_cols]

 private:
  std::unique_ptr<backend::Buffer> buffer_;
  int64_t n_cols_ = 0;
};

// The scratch of a pre-norm decoder with separate Q/K/V projections and a gated MLP
// (llama, qwen2, qwen3). Every matrix has max_batch_tokens rows (T).
struct GatedDecoderScratch {
  Activation x;     // [T][n_embd] the residual stream
  Activation xb;    // [T][n_embd] a sublayer's normed input
  Activation q;     // [T][n_head * head_dim]
  Activation k;     // [T][n_head_kv * head_dim]
  Activation v;     // [T][n_head_kv * head_dim]
  Activation att;   // [T][n_head * head_dim] attention output, heads side by side
  Activation out;   // [T][n_embd] a sublayer's output, before the residual add
  Activation gate;  // [T][n_ff]
  Activation up;    // [T][n_ff]

  static Expected<GatedDecoderScratch> allocate(backend::Backend& backend,
                                                const ModelConfig& config,
                                                const LoadOptions& options);
};

// The gated MLP of the llama family: x += W_down (silu(W_gate xb) * W_up xb), with
// xb = rmsnorm(x).
struct SwiGluFfn {
  backend::TensorView norm;    // [n_embd] f32
  backend::TensorView w_gate;  // [n_ff][n_embd]
  backend::TensorView w_up;    // [n_ff][n_embd]
  backend::TensorView w_down;  // [n_embd][n_ff]

  static Expected<SwiGluFfn> load(const ModelConfig& c, WeightLoader& w, int32_t layer);
};

// The token embedding table and the RMS-normed output projection (the embedding again
// when the file has no output.weight).
struct RmsEmbeddingAndHead {
  backend::TensorView token_embd;   // [n_vocab][n_embd]
  backend::TensorView output_norm;  // [n_embd] f32
  backend::TensorView output;       // [n_vocab][n_embd], token_embd when tied

  static Expected<RmsEmbeddingAndHead> load(const ModelConfig& c, WeightLoader& w);
};

class TransformerModel : public Model {
 public:
  const ModelConfig& config() const final { return config_; }
  BatchLimits batch_limits() const final { return limits_; }
  // Runs the pass over a checked batch, copies the logits out.
  Status forward(const ForwardBatch& batch, backend::KvStorage& kv,
                 std::span<float> logits) final;
  // Allocates the scratch of the output head; the architecture's factory calls it once.
  Status allocate_output_scratch();

 protected:
  TransformerModel(const ModelConfig& config, backend::Backend& backend,
                   const LoadOptions& options);
  // For learned position tables: positions must be below `n`.
  void limit_positions(int32_t n) { limits_.max_position = n; }

  // The architecture's pass over a checked batch. It ends with project_logits() when
  // batch.logit_rows is not empty.
  virtual void run(const ForwardBatch& batch, backend::KvStorage& kv) = 0;

  // `m` ([n][n_heads * head_dim]) seen as heads: [n][n_heads][head_dim].
  backend::TensorView heads(const backend::TensorView& m) const {
    return backend::split_rows_into_heads(m, config_.head_dim);
  }
  // Rotates the heads of q and k ([n][n_heads * head_dim] and [n][n_head_kv * head_dim],
  // rows may be strided) in place.
  void rope(const backend::TensorView& q, const backend::TensorView& k, std::span<const int32_t> positions,
            const float* freq_factors = nullptr);
  // Stores k and v in the layer's KV cache, then causal grouped-query attention of q
  // over each sequence's context. q: [n][n_head * head_dim], k, v: [n][n_head_kv *
  // head_dim] (column views allowed); out: [n][n_head * head_dim].
  void attention(int32_t layer, const backend::TensorView& q, const backend::TensorView& k,
                 const backend::TensorView& v, backend::KvStorage& kv,
                 const ForwardBatch& batch, const backend::TensorView& out);
  // The rows of `hidden` ([n][n_embd]) that need logits, copied to [n_logit_rows][n_embd]
  // scratch for the final norm.
  backend::TensorView gather_logit_rows(const backend::TensorView& hidden,
                                        std::span<const int32_t> rows);
  // x += s.out (the attention's projection), then x += SwiGLU MLP of rmsnorm(x), for the
  // first n rows of the scratch; with next_norm, also s.xb = rmsnorm(x, *next_norm) for
  // the next layer (each residual add fused with the norm after it).
  void swiglu_ffn(const SwiGluFfn& ffn, const GatedDecoderScratch& s, int64_t n,
                  const backend::TensorView* next_norm);
  // The logits of batch.logit_rows from the residual stream x: rmsnorm, then the head.
  void rms_logits(const RmsEmbeddingAndHead& head, const backend::TensorView& x,
                  const ForwardBatch& batch);
  // logits = normed W^T, for the gathered rows. w: [n_vocab][n_embd].
  void project_logits(const backend::TensorView& w, const backend::TensorView& normed);

 private:
  // After run(): the tokens of the rows batch.token_on_device flags (their greedy tokens
  // or Backend::sample_rows') to batch.device_tokens, and the logits of the other rows to
  // `logits` where they are not there already (a backend that is not host-addressable).
  void deliver_logits(const ForwardBatch& batch, std::span<float> logits);
  // After deliver_logits() and a synchronize: the logits of the rows whose token came back
  // kLeftToHost (the host's sampler takes them), then a synchronize.
  void deliver_rows_left_to_host(const ForwardBatch& batch, std::span<float> logits);
  // The logits of the first n_rows logit rows where the pass wrote them.
  backend::TensorView device_logits(int64_t n_rows) const;
  // Copies the rows of `all` that `wanted` names to `logits` (nothing where the pass
  // wrote them there).
  void copy_logit_rows(const backend::TensorView& all, const std::function<bool(int64_t)>& wanted,
                       std::span<float> logits);

 protected:

  ModelConfig config_;
  backend::Backend& backend_;
  LoadOptions options_;

 private:
  BatchLimits limits_;
  backend::RopeParams rope_params_;
  Activation logit_input_;  // [max_logit_rows][n_embd]
  Activation logits_;       // [max_logit_rows][n_vocab]; none on a host-addressable backend
  std::unique_ptr<backend::Buffer> device_tokens_;    // [max_logit_rows] I32: the tokens chosen on the device
  std::unique_ptr<backend::Buffer> device_logprobs_;  // [max_logit_rows] RowLogprobs: their log-probabilities
  // During forward() on a host-addressable backend: the caller's logits, which
  // project_logits() writes ([n_logit_rows][n_vocab] f32); else nullptr.
  float* host_logits_ = nullptr;
};

}  // namespace pagoda::model
