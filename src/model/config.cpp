#include "model/config.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string_view>

#include "model/architecture.h"

namespace pagoda::model {
namespace {

// Reads the `{arch}.*` keys of one file; errors start with the file's name.
class ArchKeys {
 public:
  ArchKeys(const gguf::Reader& file, std::string_view arch) : file_(file), arch_(arch) {}

  std::string key(std::string_view suffix) const { return arch_ + "." + std::string(suffix); }
  // `key` quoted, as messages show it.
  std::string name(std::string_view suffix) const { return gguf::quoted(key(suffix)); }
  bool has(std::string_view suffix) const { return file_.has(key(suffix)); }
  Status error(ErrorCode code, const std::string& problem) const {
    return {code, file_.name() + ": " + problem};
  }

  // A positive count that fits in int32, stored as any integer type. Absent: `fallback`,
  // or an error when there is none.
  Expected<int32_t> count(std::string_view suffix, std::optional<int32_t> fallback = {}) const {
    if (fallback && !has(suffix)) return *fallback;
    PAGODA_ASSIGN_OR_RETURN(const int64_t value, file_.get_int(key(suffix)));
    if (value <= 0 || value > std::numeric_limits<int32_t>::max()) {
      return error(ErrorCode::kInvalidArgument, "key " + name(suffix) + " is " +
                                                    std::to_string(value) +
                                                    ", expected a positive count");
    }
    return static_cast<int32_t>(value);
  }

  // A finite float32 that is at least `min_value`. Absent: `fallback`, or an error.
  Expected<float> real(std::string_view suffix, std::optional<float> fallback = {},
                       float min_value = 0.0f) const {
    if (fallback && !has(suffix)) return *fallback;
    PAGODA_ASSIGN_OR_RETURN(const float value, file_.get<float>(key(suffix)));
    if (!std::isfinite(value) || value < min_value) {
      return error(ErrorCode::kInvalidArgument,
                   "key " + name(suffix) + " is " + std::to_string(value) + ", out of range");
    }
    return value;
  }

 private:
  const gguf::Reader& file_;
  std::string arch_;
};

// The attention geometry: heads, head sizes, rotated dimensions.
Status read_attention(const ArchKeys& keys, ModelConfig& c) {
  PAGODA_ASSIGN_OR_RETURN(c.n_head, keys.count("attention.head_count"));
  PAGODA_ASSIGN_OR_RETURN(c.n_head_kv, keys.count("attention.head_count_kv", c.n_head));
  if (c.n_head % c.n_head_kv != 0) {
    return keys.error(ErrorCode::kInvalidArgument,
                      keys.name("attention.head_count") + " (" + std::to_string(c.n_head) +
                          ") is not a multiple of " + keys.name("attention.head_count_kv") +
                          " (" + std::to_string(c.n_head_kv) + ")");
  }
  if (!keys.has("attention.key_length") && c.n_embd % c.n_head != 0) {
    return keys.error(ErrorCode::kInvalidArgument,
                      keys.name("embedding_length") + " (" + std::to_string(c.n_embd) +
                          ") is not divisible by " + keys.name("attention.head_count") + " (" +
                          std::to_string(c.n_head) + ") and " +
                          keys.name("attention.key_length") + " is absent");
  }
  PAGODA_ASSIGN_OR_RETURN(c.head_dim, keys.count("attention.key_length", c.n_embd / c.n_head));
  PAGODA_ASSIGN_OR_RETURN(c.head_dim_v, keys.count("attention.value_length", c.head_dim));
  if (c.head_dim_v != c.head_dim) {
    return keys.error(ErrorCode::kUnsupported,
                      keys.name("attention.value_length") + " (" + std::to_string(c.head_dim_v) +
                          ") differs from the key length (" + std::to_string(c.head_dim) +
                          "): not supported");
  }
  PAGODA_ASSIGN_OR_RETURN(c.n_rot, keys.count("rope.dimension_count", c.head_dim));
  if (c.n_rot > c.head_dim || c.n_rot % 2 != 0) {
    return keys.error(ErrorCode::kInvalidArgument,
                      keys.name("rope.dimension_count") + " (" + std::to_string(c.n_rot) +
                          ") must be even and at most the head size (" +
                          std::to_string(c.head_dim) + ")");
  }
  return {};
}

// Rotary frequencies: base, and linear position scaling (the only scaling supported).
Status read_rope(const gguf::Reader& file, const ArchKeys& keys, ModelConfig& c) {
  PAGODA_ASSIGN_OR_RETURN(c.rope_freq_base, keys.real("rope.freq_base", 10000.0f,
                                                      std::numeric_limits<float>::min()));
  const std::string scaling = file.get_or<std::string>(keys.key("rope.scaling.type"), "linear");
  if (scaling != "linear" && scaling != "none") {
    return keys.error(ErrorCode::kUnsupported,
                      "rope scaling " + gguf::quoted(scaling) + " is not supported");
  }
  // A factor of 0 means none, as in the reference; the old key name is read too.
  PAGODA_ASSIGN_OR_RETURN(const float old_factor, keys.real("rope.scale_linear", 0.0f));
  PAGODA_ASSIGN_OR_RETURN(const float factor, keys.real("rope.scaling.factor", old_factor));
  c.rope_freq_scale = (scaling == "none" || factor == 0.0f) ? 1.0f : 1.0f / factor;
  return {};
}

// The vocabulary size: {arch}.vocab_size, else the rows of the token embedding.
Status read_vocab_size(const gguf::Reader& file, const ArchKeys& keys, ModelConfig& c) {
  if (keys.has("vocab_size")) {
    PAGODA_ASSIGN_OR_RETURN(c.n_vocab, keys.count("vocab_size"));
    return {};
  }
  const gguf::TensorInfo* embd = file.find_tensor("token_embd.weight");
  if (embd == nullptr) {
    return keys.error(ErrorCode::kNotFound, "missing tensor 'token_embd.weight'");
  }
  if (embd->shape.size() != 2 || embd->shape[1] > std::numeric_limits<int32_t>::max()) {
    return keys.error(ErrorCode::kInvalidArgument,
                      "tensor 'token_embd.weight' is not a [n_embd, n_vocab] matrix");
  }
  c.n_vocab = static_cast<int32_t>(embd->shape[1]);
  return {};
}

}  // namespace

Expected<ModelConfig> ModelConfig::from_gguf(const gguf::Reader& file) {
  ModelConfig c;
  PAGODA_ASSIGN_OR_RETURN(c.architecture, file.get<std::string>("general.architecture"));
  const Architecture* arch = find_architecture(c.architecture);
  if (arch == nullptr) {
    return unsupported(file.name() + ": unknown architecture " + gguf::quoted(c.architecture) +
                       " (supported: " + supported_architectures() + ")");
  }
  c.name = file.get_or<std::string>("general.name", "");

  const ArchKeys keys(file, c.architecture);
  PAGODA_ASSIGN_OR_RETURN(c.n_ctx_train, keys.count("context_length"));
  PAGODA_ASSIGN_OR_RETURN(c.n_embd, keys.count("embedding_length"));
  PAGODA_ASSIGN_OR_RETURN(c.n_layer, keys.count("block_count"));
  PAGODA_ASSIGN_OR_RETURN(c.n_ff, keys.count("feed_forward_length"));
  PAGODA_TRY(read_attention(keys, c));
  PAGODA_TRY(read_vocab_size(file, keys, c));

  // The reference requires the epsilon of the norm the architecture uses.
  if (arch->norm == NormKind::kRms) {
    PAGODA_ASSIGN_OR_RETURN(c.rms_eps, keys.real("attention.layer_norm_rms_epsilon"));
  } else {
    PAGODA_ASSIGN_OR_RETURN(c.norm_eps, keys.real("attention.layer_norm_epsilon"));
  }
  if (arch->positions != PositionKind::kLearned) PAGODA_TRY(read_rope(file, keys, c));
  c.rope_neox = arch->positions == PositionKind::kRopeNeox;
  return c;
}

}  // namespace pagoda::model
