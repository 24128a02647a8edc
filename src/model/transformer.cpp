#include "model/transformer.h"

#include <cassert>
#include <cmath>
#include <limits>

namespace pagoda::model {

Expected<Activation> Activation::allocate(backend::Backend& backend, int64_t n_cols,
                                          int64_t max_rows) {
  Activation a;
  a.n_cols_ = n_cols;
  const size_t bytes = static_cast<size_t>(n_cols) * static_cast<size_t>(max_rows) * sizeof(float);
  PAGODA_ASSIGN_OR_RETURN(a.buffer_, backend.allocate(bytes));
  return a;
}

backend::TensorView Activation::rows(int64_t n) const {
  return backend::make_view(buffer_->data(), DType::F32, n_cols_, n);
}

Expected<GatedDecoderScratch> GatedDecoderScratch::allocate(backend::Backend& backend,
                                                            const ModelConfig& c,
                                                            const LoadOptions& options) {
  const int64_t t = options.max_batch_tokens;
  GatedDecoderScratch s;
  PAGODA_ASSIGN_OR_RETURN(s.x, Activation::allocate(backend, c.n_embd, t));
  PAGODA_ASSIGN_OR_RETURN(s.xb, Activation::allocate(backend, c.n_embd, t));
  PAGODA_ASSIGN_OR_RETURN(s.q, Activation::allocate(backend, c.q_dim(), t));
  PAGODA_ASSIGN_OR_RETURN(s.k, Activation::allocate(backend, c.kv_dim(), t));
  PAGODA_ASSIGN_OR_RETURN(s.v, Activation::allocate(backend, c.kv_dim(), t));
  PAGODA_ASSIGN_OR_RETURN(s.att, Activation::allocate(backend, c.q_dim(), t));
  PAGODA_ASSIGN_OR_RETURN(s.out, Activation::allocate(backend, c.n_embd, t));
  PAGODA_ASSIGN_OR_RETURN(s.gate, Activation::allocate(backend, c.n_ff, t));
  PAGODA_ASSIGN_OR_RETURN(s.up, Activation::allocate(backend, c.n_ff, t));
  return s;
}

Expected<SwiGluFfn> SwiGluFfn::load(const ModelConfig& c, WeightLoader& w, int32_t layer) {
  SwiGluFfn f;
  PAGODA_ASSIGN_OR_RETURN(f.norm, w.vector(layer_tensor(layer, "ffn_norm.weight"), c.n_embd));
  PAGODA_ASSIGN_OR_RETURN(f.w_gate, w.matrix(layer_tensor(layer, "ffn_gate.weight"), c.n_embd, c.n_ff));
  PAGODA_ASSIGN_OR_RETURN(f.w_up, w.matrix(layer_tensor(layer, "ffn_up.weight"), c.n_embd, c.n_ff));
  PAGODA_ASSIGN_OR_RETURN(f.w_down, w.matrix(layer_tensor(layer, "ffn_down.weight"), c.n_ff, c.n_embd));
  return f;
}

Expected<RmsEmbeddingAndHead> RmsEmbeddingAndHead::load(const ModelConfig& c, WeightLoader& w) {
  RmsEmbeddingAndHead h;
  PAGODA_ASSIGN_OR_RETURN(h.token_embd, w.table("token_embd.weight", c.n_embd, c.n_vocab));
  PAGODA_ASSIGN_OR_RETURN(h.output_norm, w.vector("output_norm.weight", c.n_embd));
  const char* output = w.has("output.weight") ? "output.weight" : "token_embd.weight";
  PAGODA_ASSIGN_OR_RETURN(h.output, w.matrix(output, c.n_embd, c.n_vocab));
  return h;
}

TransformerModel::TransformerModel(const ModelConfig& config, backend::Backend& backend,
                                   const LoadOptions& options)
    : config_(config), backend_(backend), options_(options) {
  limits_.max_tokens = options.max_batch_tokens;
  limits_.max_logit_rows = options.max_logit_rows;
  limits_.max_position = std::numeric_limits<int32_t>::max();
  rope_params_.n_dims = config.n_rot;
  rope_params_.freq_base = config.rope_freq_base;
  rope_params_.freq_scale = config.rope_freq_scale;
  rope_params_.neox = config.rope_neox;
}

Status TransformerModel::allocate_output_scratch() {
  PAGODA_ASSIGN_OR_RETURN(logit_input_,
                          Activation::allocate(backend_, config_.n_embd, options_.max_logit_rows));
  PAGODA_ASSIGN_OR_RETURN(device_tokens_,
                          backend_.allocate(static_cast<size_t>(options_.max_logit_rows) * sizeof(int32_t)));
  PAGODA_ASSIGN_OR_RETURN(device_logprobs_,
                          backend_.allocate(static_cast<size_t>(options_.max_logit_rows) * sizeof(RowLogprobs)));
  if (backend_.host_addressable()) return {};  // the logits go straight to the caller's buffer
  PAGODA_ASSIGN_OR_RETURN(logits_,
                          Activation::allocate(backend_, config_.n_vocab, options_.max_logit_rows));
  return {};
}

Status TransformerModel::forward(const ForwardBatch& batch, backend::KvStorage& kv,
                                 std::span<float> logits) {
  assert(check_batch(batch, config_, limits_, kv, logits).ok());
  // A backend that writes host memory puts the logits straight into `logits` (a 16-
  // sequence step's are 3 MB, which copying had cost 1% of the step).
  host_logits_ = backend_.host_addressable() ? logits.data() : nullptr;
  run(batch, kv);
  deliver_logits(batch, logits);
  backend_.synchronize();
  deliver_rows_left_to_host(batch, logits);
  host_logits_ = nullptr;
  // The ops report their failures (an op given views it cannot handle) here, once.
  return backend_.take_error();
}

void TransformerModel::deliver_logits(const ForwardBatch& batch, std::span<float> logits) {
  const auto n_rows = static_cast<int64_t>(batch.logit_rows.size());
  if (n_rows == 0) return;
  const backend::TensorView all = device_logits(n_rows);
  const bool any_on_device = !batch.token_on_device.empty();  // the runner passes flags only where one is set
  if (any_on_device) {
    const backend::TensorView ids = backend::make_view(device_tokens_->data(), DType::I32, n_rows, 1);
    if (batch.samplings.empty()) {
      backend_.argmax_rows(all, ids);
    } else {
      const backend::TensorView reports =
          batch.device_logprobs.empty()
              ? backend::TensorView{}
              : backend::make_view(device_logprobs_->data(), DType::I32, kRowLogprobsWords, n_rows);
      backend_.sample_rows(all, batch.samplings, batch.adjustments, ids, reports);
      if (!batch.device_logprobs.empty()) backend_.copy_to_host(reports, batch.device_logprobs.data());
    }
    backend_.copy_to_host(ids, batch.device_tokens.data());
  }
  const auto wanted = [&](int64_t r) { return !any_on_device || batch.token_on_device[static_cast<size_t>(r)] == 0; };
  copy_logit_rows(all, wanted, logits);
}

void TransformerModel::deliver_rows_left_to_host(const ForwardBatch& batch, std::span<float> logits) {
  if (batch.samplings.empty()) return;
  const auto n_rows = static_cast<int64_t>(batch.logit_rows.size());
  const auto left = [&](int64_t r) {
    return batch.token_on_device[static_cast<size_t>(r)] != 0 && batch.device_tokens[static_cast<size_t>(r)] == kLeftToHost;
  };
  bool any = false;
  for (int64_t r = 0; r < n_rows && !any; ++r) any = left(r);
  if (!any) return;
  copy_logit_rows(device_logits(n_rows), left, logits);
  backend_.synchronize();
}

backend::TensorView TransformerModel::device_logits(int64_t n_rows) const {
  return host_logits_ != nullptr ? backend::make_view(host_logits_, DType::F32, config_.n_vocab, n_rows)
                                 : logits_.rows(n_rows);
}

void TransformerModel::copy_logit_rows(const backend::TensorView& all, const std::function<bool(int64_t)>& wanted,
                                       std::span<float> logits) {
  if (host_logits_ != nullptr) return;  // they are there already
  // Each run of consecutive wanted rows in one copy.
  const int64_t n_rows = all.n_rows();
  const size_t row_floats = static_cast<size_t>(config_.n_vocab);
  float* device_logits = static_cast<float*>(all.data);
  for (int64_t first = 0; first < n_rows;) {
    if (!wanted(first)) {
      ++first;
      continue;
    }
    int64_t end = first + 1;
    while (end < n_rows && wanted(end)) ++end;
    const size_t offset = static_cast<size_t>(first) * row_floats;
    backend_.copy_to_host(backend::make_view(device_logits + offset, DType::F32, config_.n_vocab, end - first),
                          logits.data() + offset);
    first = end;
  }
}

void TransformerModel::rope(const backend::TensorView& q, const backend::TensorView& k,
                            std::span<const int32_t> positions, const float* freq_factors) {
  backend::RopeParams params = rope_params_;
  params.freq_factors = freq_factors;
  backend_.rope_pair(backend::split_rows_into_heads(q, config_.head_dim),
                     backend::split_rows_into_heads(k, config_.head_dim), positions, params);
}

void TransformerModel::attention(int32_t layer, const backend::TensorView& q,
                                 const backend::TensorView& k, const backend::TensorView& v,
                                 backend::KvStorage& kv, const ForwardBatch& batch,
                                 const backend::TensorView& out) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(config_.head_dim));
  backend_.attention(backend::split_rows_into_heads(q, config_.head_dim),
                     backend::split_rows_into_heads(k, config_.head_dim),
                     backend::split_rows_into_heads(v, config_.head_dim), kv, layer,
                     batch.attention, scale, out);
}

backend::TensorView TransformerModel::gather_logit_rows(const backend::TensorView& hidden,
                                                        std::span<const int32_t> rows) {
  const backend::TensorView selected = logit_input_.rows(static_cast<int64_t>(rows.size()));
  backend_.get_rows(hidden, rows, selected);
  return selected;
}

void TransformerModel::project_logits(const backend::TensorView& w,
                                      const backend::TensorView& normed) {
  const backend::TensorView out = host_logits_ != nullptr
                                      ? backend::make_view(host_logits_, DType::F32, config_.n_vocab, normed.ne[1])
                                      : logits_.rows(normed.ne[1]);
  backend_.matmul(w, normed, out);
}

void TransformerModel::swiglu_ffn(const SwiGluFfn& ffn, const GatedDecoderScratch& s, int64_t n,
                                  const backend::TensorView* next_norm) {
  const backend::TensorView x = s.x.rows(n), xb = s.xb.rows(n), gate = s.gate.rows(n),
                            up = s.up.rows(n), out = s.out.rows(n);
  backend_.add_rms_norm(x, out, ffn.norm, config_.rms_eps, xb);
  backend_.matmuls_swiglu(xb, ffn.w_gate, ffn.w_up, gate, up, gate);
  backend_.matmul(ffn.w_down, gate, out);
  if (next_norm != nullptr) {
    backend_.add_rms_norm(x, out, *next_norm, config_.rms_eps, xb);
  } else {
    backend_.add(x, out, x);
  }
}

void TransformerModel::rms_logits(const RmsEmbeddingAndHead& head, const backend::TensorView& x,
                                  const ForwardBatch& batch) {
  if (batch.logit_rows.empty()) return;
  const backend::TensorView last = gather_logit_rows(x, batch.logit_rows);
  backend_.rms_norm(last, head.output_norm, config_.rms_eps, last);
  project_logits(head.output, last);
}

}  // namespace pagoda::model
