#pragma once
// Hyper-parameters of a model, read from GGUF metadata (`{arch}.*` keys) with the
// defaults the reference implementation uses when a key is absent. Keys the reference
// requires (the norm epsilon of the architecture, the sizes) are required here too;
// values that contradict each other are errors naming the keys.

#include <cstdint>
#include <string>

#include "core/status.h"
#include "gguf/reader.h"

namespace pagoda::model {

struct ModelConfig {
  std::string architecture;  // general.architecture: "llama", "qwen2", "qwen3", "gpt2"
  std::string name;          // general.name, for logs
  int32_t n_vocab = 0;       // vocab_size, else the token embedding's row count
  int32_t n_ctx_train = 0;   // context_length
  int32_t n_embd = 0;        // embedding_length
  int32_t n_layer = 0;       // block_count
  int32_t n_head = 0;        // attention.head_count
  int32_t n_head_kv = 0;     // attention.head_count_kv (default n_head)
  int32_t head_dim = 0;      // attention.key_length (default n_embd / n_head)
  int32_t head_dim_v = 0;    // attention.value_length (default head_dim)
  int32_t n_ff = 0;          // feed_forward_length
  int32_t n_rot = 0;         // rope.dimension_count (default head_dim)
  float rms_eps = 1e-5f;     // attention.layer_norm_rms_epsilon (RMSNorm models)
  float norm_eps = 1e-5f;    // attention.layer_norm_epsilon (LayerNorm models)
  float rope_freq_base = 10000.0f;  // rope.freq_base
  float rope_freq_scale = 1.0f;     // 1 / rope.scaling.factor for linear scaling
  bool rope_neox = false;    // NeoX-style pairs (qwen2, qwen3, gpt-neox, ...)

  int32_t q_dim() const { return n_head * head_dim; }       // width of all query heads
  int32_t kv_dim() const { return n_head_kv * head_dim; }   // width of all K (or V) heads

  // Fails on an unknown architecture, a missing required key, a key of the wrong type,
  // or values that contradict each other ("model.gguf: llama.attention.head_count (6) is
  // not a multiple of llama.attention.head_count_kv (4)").
  static Expected<ModelConfig> from_gguf(const gguf::Reader& file);
};

}  // namespace pagoda::model
