#include "model/model.h"

#include <string>

#include "model/architecture.h"
#include "model/weight_loader.h"

namespace pagoda::model {

Expected<std::unique_ptr<Model>> load_model(const gguf::Reader& file, backend::Backend& backend,
                                            const LoadOptions& options) {
  if (options.max_batch_tokens <= 0 || options.max_logit_rows <= 0) {
    return invalid_argument("load_model: max_batch_tokens (" +
                            std::to_string(options.max_batch_tokens) + ") and max_logit_rows (" +
                            std::to_string(options.max_logit_rows) + ") must be positive");
  }
  PAGODA_ASSIGN_OR_RETURN(const ModelConfig config, ModelConfig::from_gguf(file));
  // from_gguf accepted the name, so the registry has it.
  const Architecture* arch = find_architecture(config.architecture);
  WeightLoader weights(file, backend);
  return arch->create(config, weights, backend, options);
}

backend::KvCacheShape kv_cache_shape(const ModelConfig& config, int32_t n_blocks,
                                     int32_t block_size, DType type) {
  backend::KvCacheShape shape;
  shape.n_layers = config.n_layer;
  shape.n_kv_heads = config.n_head_kv;
  shape.head_dim = config.head_dim;
  shape.block_size = block_size;
  shape.n_blocks = n_blocks;
  shape.type = type;
  return shape;
}

}  // namespace pagoda::model
