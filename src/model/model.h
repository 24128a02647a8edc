#pragma once
// A loaded model: its configuration, its weights (views into the mmapped GGUF, made
// usable by the backend) and a forward pass written only in Backend ops. One class per
// architecture (llama.cpp, qwen2.cpp, ...), created through the registry by
// `general.architecture`.

#include <cstdint>
#include <memory>
#include <span>

#include "backend/backend.h"
#include "core/status.h"
#include "gguf/reader.h"
#include "model/batch_check.h"
#include "model/config.h"
#include "model/forward_batch.h"

namespace pagoda::model {

struct LoadOptions {
  int32_t max_batch_tokens = 512;  // most tokens one forward pass takes (sizes scratch)
  int32_t max_logit_rows = 512;    // most rows needing logits in one pass (positive)
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelConfig& config() const = 0;
  // What a batch may hold: the load options' sizes, and the positions a learned
  // position table covers. check_batch (batch_check.h) takes them.
  virtual BatchLimits batch_limits() const = 0;
  // Runs one batch, which must pass check_batch for this model, its KV storage and
  // `logits`: the engine's ModelRunner checks every batch it builds, so a malformed one
  // here is a bug (asserted, not reported). Writes the logits of batch.logit_rows, in
  // order, to `logits` ([logit_rows.size()][n_vocab] f32, host memory; it may be longer).
  // Fails after the pass if a backend op reported an error.
  virtual Status forward(const ForwardBatch& batch, backend::KvStorage& kv,
                         std::span<float> logits) = 0;
};

// Reads the config, checks every tensor (presence, type, shape; a tensor the
// architecture does not use is an error too), and builds the architecture named by
// general.architecture. `file` and `backend` must outlive the model.
Expected<std::unique_ptr<Model>> load_model(const gguf::Reader& file, backend::Backend& backend,
                                            const LoadOptions& options);

// The KV storage shape a model of this configuration reads and writes: one layer per
// transformer block, its KV heads and head size; the caller picks the block count,
// block size and element type.
backend::KvCacheShape kv_cache_shape(const ModelConfig& config, int32_t n_blocks,
                                     int32_t block_size = 16, DType type = DType::F16);

}  // namespace pagoda::model
