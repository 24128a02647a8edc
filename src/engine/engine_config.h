#pragma once
// Everything the engine is built from besides the model: scheduling limits, the KV
// cache's block size, element type and memory budget, prefix caching.

#include <cstdint>
#include <string_view>

#include "core/dtype.h"
#include "core/status.h"
#include "engine/kv_budget.h"
#include "engine/scheduler.h"
#include "engine/speculative_config.h"
#include "kv/block_pool.h"
#include "model/config.h"
#include "model/model.h"

namespace pagoda::engine {

struct EngineConfig {
  // max_model_len <= 0 takes the model's training context.
  SchedulerConfig scheduler{.max_batched_tokens = 512, .max_running = 64, .max_model_len = 0};
  int32_t block_size = 16;     // tokens per KV block
  DType kv_type = DType::F16;  // F16, F32 or Q8_0
  KvMemoryBudget kv_memory;
  bool enable_prefix_cache = true;
  // Which unreferenced cached blocks are reused first when blocks run out.
  kv::EvictionPolicy prefix_cache_eviction = kv::EvictionPolicy::kLru;
  // Refuse a max_model_len past the model's training context. Benchmarks turn it off to
  // time long contexts on any model, as llama-bench does.
  bool limit_to_training_context = true;
  SpeculativeConfig speculative;
  // Choose a request's token where the logits are when it allows (no grammar, at most
  // kMaxDeviceTopLogprobs top log-probabilities): on a GPU only the tokens (and the
  // log-probabilities asked) come back. false samples every token on the host from
  // copied logits: the same tokens, for comparison (`pagoda bench --host-sampling`).
  bool tokens_on_device = true;

  // The model must have been loaded with (at least) these: a step runs up to
  // max_batched_tokens tokens and samples once per running request, or once per row a
  // request verifies when speculating.
  model::LoadOptions load_options() const {
    return {.max_batch_tokens = scheduler.max_batched_tokens, .max_logit_rows = max_logit_rows()};
  }
  int32_t max_logit_rows() const;
  // A draft model's (speculative decoding): it runs what the target runs, each request's
  // one trailing position besides, and one logit row per proposing request.
  model::LoadOptions draft_load_options() const {
    return {.max_batch_tokens = scheduler.max_batched_tokens + scheduler.max_running,
            .max_logit_rows = scheduler.max_running};
  }

  // A copy with max_model_len resolved for `model`, checked: positive limits, a
  // max_model_len within the model's training context, a supported KV type.
  Expected<EngineConfig> resolve(const model::ModelConfig& model) const;

  // The blocks a request of max_model_len tokens spans, and max_running of them.
  int32_t blocks_per_request() const;
  int32_t useful_blocks() const;
};

// "f16", "f32" or "q8_0" (the KV cache types the CLI accepts).
Expected<DType> parse_kv_cache_type(std::string_view name);

}  // namespace pagoda::engine
