#include "tools/random_model_layout.h"

#include <string_view>
#include <utility>

#include "model/architecture.h"

namespace pagoda::tools {
namespace {

bool is_gpt2(const RandomModelSpec& spec) {
  return spec.architecture == "gpt2";
}

Status check_positive(std::string_view what, int32_t value) {
  if (value > 0) return Status::ok_status();
  return invalid_argument(std::string(what) + " must be positive, got " + std::to_string(value));
}

std::string block(int32_t layer, std::string_view suffix) {
  return "blk." + std::to_string(layer) + "." + std::string(suffix);
}

// The tensors of one block of a pre-norm decoder with separate Q/K/V and a gated MLP.
void plan_gated_block(const RandomModelSpec& s, int32_t i, std::vector<TensorPlan>& out) {
  const int64_t q_dim = int64_t{s.n_head} * s.head_dim, kv_dim = int64_t{s.n_head_kv} * s.head_dim;
  out.push_back({block(i, "attn_norm.weight"), {s.n_embd}, TensorRole::kNorm, i});
  out.push_back({block(i, "attn_q.weight"), {s.n_embd, q_dim}, TensorRole::kAttnQ, i});
  out.push_back({block(i, "attn_k.weight"), {s.n_embd, kv_dim}, TensorRole::kAttnK, i});
  out.push_back({block(i, "attn_v.weight"), {s.n_embd, kv_dim}, TensorRole::kAttnV, i});
  if (s.architecture == "qwen2") {
    out.push_back({block(i, "attn_q.bias"), {q_dim}, TensorRole::kBias, i});
    out.push_back({block(i, "attn_k.bias"), {kv_dim}, TensorRole::kBias, i});
    out.push_back({block(i, "attn_v.bias"), {kv_dim}, TensorRole::kBias, i});
  }
  if (s.architecture == "qwen3") {
    out.push_back({block(i, "attn_q_norm.weight"), {s.head_dim}, TensorRole::kNorm, i});
    out.push_back({block(i, "attn_k_norm.weight"), {s.head_dim}, TensorRole::kNorm, i});
  }
  out.push_back({block(i, "attn_output.weight"), {q_dim, s.n_embd}, TensorRole::kAttnOutput, i});
  out.push_back({block(i, "ffn_norm.weight"), {s.n_embd}, TensorRole::kNorm, i});
  out.push_back({block(i, "ffn_gate.weight"), {s.n_embd, s.n_ff}, TensorRole::kFfnGate, i});
  out.push_back({block(i, "ffn_up.weight"), {s.n_embd, s.n_ff}, TensorRole::kFfnUp, i});
  out.push_back({block(i, "ffn_down.weight"), {s.n_ff, s.n_embd}, TensorRole::kFfnDown, i});
}

// GPT-2: LayerNorms with bias, a fused QKV projection, a plain GELU MLP, biases everywhere.
void plan_gpt2_block(const RandomModelSpec& s, int32_t i, std::vector<TensorPlan>& out) {
  const int64_t e = s.n_embd;
  out.push_back({block(i, "attn_norm.weight"), {e}, TensorRole::kNorm, i});
  out.push_back({block(i, "attn_norm.bias"), {e}, TensorRole::kBias, i});
  out.push_back({block(i, "attn_qkv.weight"), {e, 3 * e}, TensorRole::kAttnQkv, i});
  out.push_back({block(i, "attn_qkv.bias"), {3 * e}, TensorRole::kBias, i});
  out.push_back({block(i, "attn_output.weight"), {e, e}, TensorRole::kAttnOutput, i});
  out.push_back({block(i, "attn_output.bias"), {e}, TensorRole::kBias, i});
  out.push_back({block(i, "ffn_norm.weight"), {e}, TensorRole::kNorm, i});
  out.push_back({block(i, "ffn_norm.bias"), {e}, TensorRole::kBias, i});
  out.push_back({block(i, "ffn_up.weight"), {e, s.n_ff}, TensorRole::kFfnUp, i});
  out.push_back({block(i, "ffn_up.bias"), {s.n_ff}, TensorRole::kBias, i});
  out.push_back({block(i, "ffn_down.weight"), {s.n_ff, e}, TensorRole::kFfnDown, i});
  out.push_back({block(i, "ffn_down.bias"), {e}, TensorRole::kBias, i});
}

}  // namespace

int64_t TensorPlan::n_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Expected<RandomModelSpec> resolve_spec(RandomModelSpec spec) {
  if (model::find_architecture(spec.architecture) == nullptr) {
    return unsupported("unknown architecture '" + spec.architecture +
                       "' (supported: " + model::supported_architectures() + ")");
  }
  PAGODA_TRY(check_positive("embedding size", spec.n_embd));
  PAGODA_TRY(check_positive("layer count", spec.n_layer));
  PAGODA_TRY(check_positive("head count", spec.n_head));
  PAGODA_TRY(check_positive("feed-forward size", spec.n_ff));
  PAGODA_TRY(check_positive("vocabulary size", spec.n_vocab));
  PAGODA_TRY(check_positive("context length", spec.n_ctx));
  if (spec.n_head_kv == 0) spec.n_head_kv = spec.n_head;
  PAGODA_TRY(check_positive("KV head count", spec.n_head_kv));
  if (spec.n_head % spec.n_head_kv != 0) {
    return invalid_argument("head count " + std::to_string(spec.n_head) +
                            " is not a multiple of the KV head count " +
                            std::to_string(spec.n_head_kv));
  }
  if (spec.head_dim == 0) {
    if (spec.n_embd % spec.n_head != 0) {
      return invalid_argument("embedding size " + std::to_string(spec.n_embd) +
                              " is not divisible by the head count " + std::to_string(spec.n_head) +
                              ": give the head size");
    }
    spec.head_dim = spec.n_embd / spec.n_head;
  }
  PAGODA_TRY(check_positive("head size", spec.head_dim));
  if (spec.head_dim % 2 != 0)
    return invalid_argument("head size must be even for rotary positions");
  if (is_gpt2(spec) &&
      (spec.n_head_kv != spec.n_head || spec.head_dim * spec.n_head != spec.n_embd)) {
    return invalid_argument("gpt2 has one KV head per head and head size = embedding size / heads");
  }
  return spec;
}

std::vector<TensorPlan> plan_tensors(const RandomModelSpec& s) {
  std::vector<TensorPlan> plan;
  plan.push_back({"token_embd.weight", {s.n_embd, s.n_vocab}, TensorRole::kTokenEmbedding});
  if (is_gpt2(s)) {
    plan.push_back({"position_embd.weight", {s.n_embd, s.n_ctx}, TensorRole::kPositionEmbedding});
  }
  for (int32_t i = 0; i < s.n_layer; ++i) {
    if (is_gpt2(s)) {
      plan_gpt2_block(s, i, plan);
    } else {
      plan_gated_block(s, i, plan);
    }
  }
  plan.push_back({"output_norm.weight", {s.n_embd}, TensorRole::kNorm});
  if (is_gpt2(s)) plan.push_back({"output_norm.bias", {s.n_embd}, TensorRole::kBias});
  if (!s.tie_embeddings)
    plan.push_back({"output.weight", {s.n_embd, s.n_vocab}, TensorRole::kOutput});
  return plan;
}

Status write_model_metadata(gguf::Writer& w, const RandomModelSpec& s, uint32_t file_type) {
  const std::string& arch = s.architecture;
  auto key = [&arch](std::string_view suffix) { return arch + "." + std::string(suffix); };
  auto u32 = [](int32_t v) { return static_cast<uint32_t>(v); };
  PAGODA_TRY(w.set_string("general.architecture", arch));
  PAGODA_TRY(w.set_string("general.name", "random " + arch));
  PAGODA_TRY(w.set_u32("general.file_type", file_type));
  PAGODA_TRY(w.set_u32("general.quantization_version", 2));
  PAGODA_TRY(w.set_u32(key("vocab_size"), u32(s.n_vocab)));
  PAGODA_TRY(w.set_u32(key("context_length"), u32(s.n_ctx)));
  PAGODA_TRY(w.set_u32(key("embedding_length"), u32(s.n_embd)));
  PAGODA_TRY(w.set_u32(key("block_count"), u32(s.n_layer)));
  PAGODA_TRY(w.set_u32(key("feed_forward_length"), u32(s.n_ff)));
  PAGODA_TRY(w.set_u32(key("attention.head_count"), u32(s.n_head)));
  PAGODA_TRY(w.set_u32(key("attention.head_count_kv"), u32(s.n_head_kv)));
  if (is_gpt2(s)) return w.set_f32(key("attention.layer_norm_epsilon"), 1e-5f);
  const bool qwen = arch == "qwen2" || arch == "qwen3";
  PAGODA_TRY(w.set_f32(key("attention.layer_norm_rms_epsilon"), qwen ? 1e-6f : 1e-5f));
  PAGODA_TRY(w.set_f32(key("rope.freq_base"), qwen ? 1e6f : 1e4f));
  PAGODA_TRY(w.set_u32(key("rope.dimension_count"), u32(s.head_dim)));
  PAGODA_TRY(w.set_u32(key("attention.key_length"), u32(s.head_dim)));
  return w.set_u32(key("attention.value_length"), u32(s.head_dim));
}

}  // namespace pagoda::tools
