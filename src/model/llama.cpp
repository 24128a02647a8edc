// Llama (1, 2, 3), Mistral, TinyLlama, SmolLM: a pre-norm decoder with RMSNorm, rotary
// positions on pairs (2i, 2i+1), grouped-query attention and a SwiGLU MLP. The output
// projection is the token embedding when the file has no output.weight; Llama 3 files
// may carry rope_freqs.weight, divisors of the rotary frequencies.

#include <utility>
#include <vector>

#include "model/architecture.h"
#include "model/transformer.h"
#include "model/weight_loader.h"

namespace pagoda::model {
namespace {

using backend::TensorView;

struct LlamaLayer {
  TensorView attn_norm;  // [n_embd] f32
  TensorView wq;         // [n_head * head_dim][n_embd]
  TensorView wk;         // [n_head_kv * head_dim][n_embd]
  TensorView wv;         // [n_head_kv * head_dim][n_embd]
  TensorView wo;         // [n_embd][n_head * head_dim]
  SwiGluFfn ffn;         // the gated MLP
};

struct LlamaWeights {
  RmsEmbeddingAndHead io;             // token embedding, output norm and head
  std::vector<LlamaLayer> layers;     // [n_layer]
  const float* rope_freqs = nullptr;  // [n_rot / 2] f32 frequency divisors, or null
};

Expected<LlamaLayer> load_layer(const ModelConfig& c, WeightLoader& w, int32_t i) {
  auto name = [i](std::string_view suffix) { return layer_tensor(i, suffix); };
  LlamaLayer l;
  PAGODA_ASSIGN_OR_RETURN(l.attn_norm, w.vector(name("attn_norm.weight"), c.n_embd));
  PAGODA_ASSIGN_OR_RETURN(l.wq, w.matrix(name("attn_q.weight"), c.n_embd, c.q_dim()));
  PAGODA_ASSIGN_OR_RETURN(l.wk, w.matrix(name("attn_k.weight"), c.n_embd, c.kv_dim()));
  PAGODA_ASSIGN_OR_RETURN(l.wv, w.matrix(name("attn_v.weight"), c.n_embd, c.kv_dim()));
  PAGODA_ASSIGN_OR_RETURN(l.wo, w.matrix(name("attn_output.weight"), c.q_dim(), c.n_embd));
  PAGODA_ASSIGN_OR_RETURN(l.ffn, SwiGluFfn::load(c, w, i));
  return l;
}

Expected<LlamaWeights> load_weights(const ModelConfig& c, WeightLoader& w) {
  LlamaWeights weights;
  PAGODA_ASSIGN_OR_RETURN(weights.io, RmsEmbeddingAndHead::load(c, w));
  for (int32_t i = 0; i < c.n_layer; ++i) {
    PAGODA_ASSIGN_OR_RETURN(LlamaLayer layer, load_layer(c, w, i));
    weights.layers.push_back(layer);
  }
  if (w.has("rope_freqs.weight")) {
    PAGODA_ASSIGN_OR_RETURN(const TensorView freqs, w.vector("rope_freqs.weight", c.n_rot / 2));
    weights.rope_freqs = static_cast<const float*>(freqs.data);
  }
  return weights;
}

class Llama final : public TransformerModel {
 public:
  Llama(const ModelConfig& config, backend::Backend& backend, const LoadOptions& options,
        LlamaWeights weights, GatedDecoderScratch scratch)
      : TransformerModel(config, backend, options),
        w_(std::move(weights)),
        s_(std::move(scratch)) {}

 private:
  void run(const ForwardBatch& batch, backend::KvStorage& kv) override {
    const int64_t n = static_cast<int64_t>(batch.token_ids.size());
    const float eps = config_.rms_eps;
    const TensorView x = s_.x.rows(n), xb = s_.xb.rows(n), q = s_.q.rows(n), k = s_.k.rows(n),
                     v = s_.v.rows(n), att = s_.att.rows(n), out = s_.out.rows(n);

    backend_.get_rows(w_.io.token_embd, batch.token_ids, x);
    for (int32_t il = 0; il < config_.n_layer; ++il) {
      const LlamaLayer& layer = w_.layers[il];

      // x += Wo attention(rope(Wq xb), rope(Wk xb), Wv xb), with xb = rmsnorm(x)
      // xb = rmsnorm(x): the layer before fused it with its last residual add
      if (il == 0) backend_.rms_norm(x, layer.attn_norm, eps, xb);
      const backend::MatmulTarget qkv[] = {{layer.wq, q}, {layer.wk, k}, {layer.wv, v}};
      backend_.matmuls(xb, qkv);
      rope(q, k, batch.positions, w_.rope_freqs);
      attention(il, q, k, v, kv, batch, att);
      backend_.matmul(layer.wo, att, out);

      // x += out; x += W_down (silu(W_gate xb) * W_up xb), with xb = rmsnorm(x)
      swiglu_ffn(layer.ffn, s_, n, il + 1 < config_.n_layer ? &w_.layers[il + 1].attn_norm : nullptr);
    }

    rms_logits(w_.io, x, batch);
  }

  LlamaWeights w_;
  GatedDecoderScratch s_;
};

}  // namespace

Expected<std::unique_ptr<Model>> create_llama(const ModelConfig& config, WeightLoader& weights,
                                              backend::Backend& backend,
                                              const LoadOptions& options) {
  PAGODA_ASSIGN_OR_RETURN(LlamaWeights w, load_weights(config, weights));
  PAGODA_TRY(weights.check_all_used(config.architecture));
  PAGODA_ASSIGN_OR_RETURN(GatedDecoderScratch scratch,
                          GatedDecoderScratch::allocate(backend, config, options));
  auto model = std::make_unique<Llama>(config, backend, options, std::move(w), std::move(scratch));
  PAGODA_TRY(model->allocate_output_scratch());
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace pagoda::model
