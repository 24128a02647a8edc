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
#include "model/config.h"
#include "model/forward_batch.h"

namespace pagoda::model {

struct LoadOptions {
  int32_t max_batch_tokens = 512;  // most tokens one forward pass takes (sizes scratch)
  int32_t max_logit_rows = 512;    // most rows needing logits in one pass
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelConfig& config() const = 0;
  // Runs one batch. Writes the logits of batch.logit_rows, in order, to `logits`
  // ([logit_rows.size()][n_vocab] f32, host memory). Fails (without touching the KV
  // cache) on a batch larger than the load options allow.
  virtual Status forward(const ForwardBatch& batch, backend::KvStorage& kv,
                         std::span<float> logits) = 0;
};

// Reads the config, checks every tensor (presence, type, shape), and builds the
// architecture named by general.architecture. `file` must outlive the model.
Expected<std::unique_ptr<Model>> load_model(const gguf::Reader& file, backend::Backend& backend,
                                            const LoadOptions& options);

}  // namespace pagoda::model
