#include "engine/engine_config.h"

#include <algorithm>
#include <string>

namespace pagoda::engine {
namespace {

Status check_positive(const char* name, int32_t value) {
  if (value > 0) return Status::ok_status();
  return invalid_argument(std::string(name) + " must be positive, got " + std::to_string(value));
}

}  // namespace

Expected<EngineConfig> EngineConfig::resolve(const model::ModelConfig& model) const {
  EngineConfig resolved = *this;
  SchedulerConfig& s = resolved.scheduler;
  if (s.max_model_len <= 0) s.max_model_len = model.n_ctx_train;
  PAGODA_TRY(s.validate());
  PAGODA_TRY(check_positive("block_size", block_size));
  if (limit_to_training_context && model.n_ctx_train > 0 && s.max_model_len > model.n_ctx_train) {
    return invalid_argument("max_model_len " + std::to_string(s.max_model_len) +
                            " exceeds the model's training context of " +
                            std::to_string(model.n_ctx_train) + " tokens");
  }
  if (kv_type != DType::F16 && kv_type != DType::F32 && kv_type != DType::Q8_0) {
    return unsupported("kv cache type " + std::string(dtype_name(kv_type)) +
                       " (use f16, f32 or q8_0)");
  }
  PAGODA_TRY(speculative.validate());
  if (static_cast<int64_t>(resolved.useful_blocks()) * block_size > INT32_MAX) {
    return invalid_argument("max_running * max_model_len is too large");
  }
  return resolved;
}

int32_t EngineConfig::max_logit_rows() const {
  const int64_t rows = static_cast<int64_t>(scheduler.max_running) * (1 + speculative.max_draft_tokens());
  return static_cast<int32_t>(std::max<int64_t>(
      std::min<int64_t>(rows, std::max(scheduler.max_batched_tokens, scheduler.max_running)), 1));
}

int32_t EngineConfig::blocks_per_request() const {
  return (scheduler.max_model_len + block_size - 1) / block_size;
}

int32_t EngineConfig::useful_blocks() const {
  const int64_t blocks = static_cast<int64_t>(blocks_per_request()) * scheduler.max_running;
  return static_cast<int32_t>(std::min<int64_t>(blocks, INT32_MAX));
}

Expected<DType> parse_kv_cache_type(std::string_view name) {
  if (name == "f16") return DType::F16;
  if (name == "f32") return DType::F32;
  if (name == "q8_0") return DType::Q8_0;
  return invalid_argument("unknown kv cache type '" + std::string(name) +
                          "' (use f16, f32 or q8_0)");
}

}  // namespace pagoda::engine
