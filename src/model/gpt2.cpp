// GPT-2: a pre-norm decoder with LayerNorm (weight and bias), learned position
// embeddings added to the token embeddings, one fused QKV projection with bias,
// multi-head attention without rotation, and a GELU MLP with biases. The output
// projection has no bias; it is the token embedding when the file has no output.weight.

#include <utility>
#include <vector>

#include "model/architecture.h"
#include "model/transformer.h"
#include "model/weight_loader.h"

namespace pagoda::model {
namespace {

using backend::TensorView;

struct Gpt2Layer {
  TensorView attn_norm;    // [n_embd] f32
  TensorView attn_norm_b;  // [n_embd] f32
  TensorView wqkv;         // [n_head * head_dim + 2 * n_head_kv * head_dim][n_embd]: Q, K, V rows
  TensorView bqkv;         // [n_head * head_dim + 2 * n_head_kv * head_dim] f32
  TensorView wo;           // [n_embd][n_head * head_dim]
  TensorView bo;           // [n_embd] f32
  TensorView ffn_norm;     // [n_embd] f32
  TensorView ffn_norm_b;   // [n_embd] f32
  TensorView w_up;         // [n_ff][n_embd]
  TensorView b_up;         // [n_ff] f32
  TensorView w_down;       // [n_embd][n_ff]
  TensorView b_down;       // [n_embd] f32
};

struct Gpt2Weights {
  TensorView token_embd;     // [n_vocab][n_embd]
  TensorView position_embd;  // [n_ctx_train][n_embd]
  std::vector<Gpt2Layer> layers;  // [n_layer]
  TensorView output_norm;    // [n_embd] f32
  TensorView output_norm_b;  // [n_embd] f32
  TensorView output;         // [n_vocab][n_embd], token_embd when tied
};

// Every matrix has max_batch_tokens rows (T).
struct Gpt2Scratch {
  Activation x;    // [T][n_embd] the residual stream
  Activation pos;  // [T][n_embd] position embeddings
  Activation xb;   // [T][n_embd] a sublayer's normed input
  Activation qkv;  // [T][q_dim + 2 kv_dim] Q, K and V side by side
  Activation att;  // [T][q_dim] attention output, heads side by side
  Activation out;  // [T][n_embd] a sublayer's output, before the residual add
  Activation hid;  // [T][n_ff] the MLP's hidden layer
};

Expected<Gpt2Layer> load_layer(const ModelConfig& c, WeightLoader& w, int32_t i) {
  auto name = [i](std::string_view suffix) { return layer_tensor(i, suffix); };
  const int64_t qkv_dim = c.q_dim() + 2 * int64_t{c.kv_dim()};
  Gpt2Layer l;
  PAGODA_ASSIGN_OR_RETURN(l.attn_norm, w.vector(name("attn_norm.weight"), c.n_embd));
  PAGODA_ASSIGN_OR_RETURN(l.attn_norm_b, w.vector(name("attn_norm.bias"), c.n_embd));
  PAGODA_ASSIGN_OR_RETURN(l.wqkv, w.matrix(name("attn_qkv.weight"), c.n_embd, qkv_dim));
  PAGODA_ASSIGN_OR_RETURN(l.bqkv, w.vector(name("attn_qkv.bias"), qkv_dim));
  PAGODA_ASSIGN_OR_RETURN(l.wo, w.matrix(name("attn_output.weight"), c.q_dim(), c.n_embd));
  PAGODA_ASSIGN_OR_RETURN(l.bo, w.vector(name("attn_output.bias"), c.n_embd));
  PAGODA_ASSIGN_OR_RETURN(l.ffn_norm, w.vector(name("ffn_norm.weight"), c.n_embd));
  PAGODA_ASSIGN_OR_RETURN(l.ffn_norm_b, w.vector(name("ffn_norm.bias"), c.n_embd));
  PAGODA_ASSIGN_OR_RETURN(l.w_up, w.matrix(name("ffn_up.weight"), c.n_embd, c.n_ff));
  PAGODA_ASSIGN_OR_RETURN(l.b_up, w.vector(name("ffn_up.bias"), c.n_ff));
  PAGODA_ASSIGN_OR_RETURN(l.w_down, w.matrix(name("ffn_down.weight"), c.n_ff, c.n_embd));
  PAGODA_ASSIGN_OR_RETURN(l.b_down, w.vector(name("ffn_down.bias"), c.n_embd));
  return l;
}

Expected<Gpt2Weights> load_weights(const ModelConfig& c, WeightLoader& w) {
  Gpt2Weights weights;
  PAGODA_ASSIGN_OR_RETURN(weights.token_embd, w.table("token_embd.weight", c.n_embd, c.n_vocab));
  PAGODA_ASSIGN_OR_RETURN(weights.position_embd,
                          w.table("position_embd.weight", c.n_embd, c.n_ctx_train));
  for (int32_t i = 0; i < c.n_layer; ++i) {
    PAGODA_ASSIGN_OR_RETURN(Gpt2Layer layer, load_layer(c, w, i));
    weights.layers.push_back(layer);
  }
  PAGODA_ASSIGN_OR_RETURN(weights.output_norm, w.vector("output_norm.weight", c.n_embd));
  PAGODA_ASSIGN_OR_RETURN(weights.output_norm_b, w.vector("output_norm.bias", c.n_embd));
  const char* output = w.has("output.weight") ? "output.weight" : "token_embd.weight";
  PAGODA_ASSIGN_OR_RETURN(weights.output, w.matrix(output, c.n_embd, c.n_vocab));
  return weights;
}

Expected<Gpt2Scratch> allocate_scratch(backend::Backend& backend, const ModelConfig& c,
                                       const LoadOptions& options) {
  const int64_t t = options.max_batch_tokens;
  Gpt2Scratch s;
  PAGODA_ASSIGN_OR_RETURN(s.x, Activation::allocate(backend, c.n_embd, t));
  PAGODA_ASSIGN_OR_RETURN(s.pos, Activation::allocate(backend, c.n_embd, t));
  PAGODA_ASSIGN_OR_RETURN(s.xb, Activation::allocate(backend, c.n_embd, t));
  PAGODA_ASSIGN_OR_RETURN(s.qkv, Activation::allocate(backend, c.q_dim() + 2 * int64_t{c.kv_dim()}, t));
  PAGODA_ASSIGN_OR_RETURN(s.att, Activation::allocate(backend, c.q_dim(), t));
  PAGODA_ASSIGN_OR_RETURN(s.out, Activation::allocate(backend, c.n_embd, t));
  PAGODA_ASSIGN_OR_RETURN(s.hid, Activation::allocate(backend, c.n_ff, t));
  return s;
}

class Gpt2 final : public TransformerModel {
 public:
  Gpt2(const ModelConfig& config, backend::Backend& backend, const LoadOptions& options,
       Gpt2Weights weights, Gpt2Scratch scratch)
      : TransformerModel(config, backend, options), w_(std::move(weights)), s_(std::move(scratch)) {
    limit_positions(config.n_ctx_train);  // the rows of the position table
  }

 private:
  void run(const ForwardBatch& batch, backend::KvStorage& kv) override {
    const int64_t n = static_cast<int64_t>(batch.token_ids.size());
    const float eps = config_.norm_eps;
    const TensorView x = s_.x.rows(n), pos = s_.pos.rows(n), xb = s_.xb.rows(n),
                     qkv = s_.qkv.rows(n), att = s_.att.rows(n), out = s_.out.rows(n),
                     hid = s_.hid.rows(n);
    const TensorView q = backend::column_slice(qkv, 0, config_.q_dim());
    const TensorView k = backend::column_slice(qkv, config_.q_dim(), config_.kv_dim());
    const TensorView v = backend::column_slice(qkv, config_.q_dim() + config_.kv_dim(),
                                               config_.kv_dim());

    // x = token embedding + position embedding
    backend_.get_rows(w_.token_embd, batch.token_ids, x);
    backend_.get_rows(w_.position_embd, batch.positions, pos);
    backend_.add(x, pos, x);
    for (int32_t il = 0; il < config_.n_layer; ++il) {
      const Gpt2Layer& layer = w_.layers[il];

      // x += Wo attention(q, k, v) + bo, with [q k v] = Wqkv layernorm(x) + bqkv
      backend_.layer_norm(x, layer.attn_norm, layer.attn_norm_b, eps, xb);
      backend_.matmul(layer.wqkv, xb, qkv);
      backend_.add_bias(qkv, layer.bqkv);
      attention(il, q, k, v, kv, batch, att);
      backend_.matmul(layer.wo, att, out);
      backend_.add_bias(out, layer.bo);
      backend_.add(x, out, x);

      // x += W_down gelu(W_up layernorm(x) + b_up) + b_down
      backend_.layer_norm(x, layer.ffn_norm, layer.ffn_norm_b, eps, xb);
      backend_.matmul(layer.w_up, xb, hid);
      backend_.add_bias(hid, layer.b_up);
      backend_.gelu(hid);
      backend_.matmul(layer.w_down, hid, out);
      backend_.add_bias(out, layer.b_down);
      backend_.add(x, out, x);
    }

    if (batch.logit_rows.empty()) return;
    const TensorView last = gather_logit_rows(x, batch.logit_rows);
    backend_.layer_norm(last, w_.output_norm, w_.output_norm_b, eps, last);
    project_logits(w_.output, last);
  }

  Gpt2Weights w_;
  Gpt2Scratch s_;
};

}  // namespace

Expected<std::unique_ptr<Model>> create_gpt2(const ModelConfig& config, WeightLoader& weights,
                                             backend::Backend& backend,
                                             const LoadOptions& options) {
  PAGODA_ASSIGN_OR_RETURN(Gpt2Weights w, load_weights(config, weights));
  PAGODA_TRY(weights.check_all_used(config.architecture));
  PAGODA_ASSIGN_OR_RETURN(Gpt2Scratch scratch, allocate_scratch(backend, config, options));
  auto model = std::make_unique<Gpt2>(config, backend, options, std::move(w), std::move(scratch));
  PAGODA_TRY(model->allocate_output_scratch());
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace pagoda::model
