#pragma once
// The registry of supported architectures, keyed by `general.architecture`. Each entry
// says what the configuration reader must know about the architecture (its norm and its
// position encoding) and how to build the model; each architecture lives in its own file
// (llama.cpp, qwen2.cpp, ...) and is listed once in registry.cpp.

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "backend/backend.h"
#include "core/status.h"
#include "model/config.h"
#include "model/model.h"

namespace pagoda::model {

class WeightLoader;

enum class NormKind {
  kRms,    // RMSNorm, epsilon from {arch}.attention.layer_norm_rms_epsilon
  kLayer,  // LayerNorm with bias, epsilon from {arch}.attention.layer_norm_epsilon
};

enum class PositionKind {
  kRope,      // rotary, pairs (2i, 2i+1)
  kRopeNeox,  // rotary, pairs (i, i + n_rot/2)
  kLearned,   // a learned position embedding table added to the token embeddings
};

// Builds the model once the configuration is read: takes its weights from `weights`
// (which checks their presence, type and shape) and allocates its scratch activations.
using CreateModelFn = Expected<std::unique_ptr<Model>> (*)(const ModelConfig& config,
                                                           WeightLoader& weights,
                                                           backend::Backend& backend,
                                                           const LoadOptions& options);

struct Architecture {
  std::string_view name;  // as general.architecture spells it
  NormKind norm;
  PositionKind positions;
  CreateModelFn create;
};

// Every supported architecture, in the order `supported_architectures()` lists them.
std::span<const Architecture> architectures();
// The entry for `name`, or nullptr.
const Architecture* find_architecture(std::string_view name);
// "llama, qwen2, qwen3, gpt2", for error messages.
std::string supported_architectures();

// The factories, one per architecture file.
Expected<std::unique_ptr<Model>> create_llama(const ModelConfig& config, WeightLoader& weights,
                                              backend::Backend& backend,
                                              const LoadOptions& options);
Expected<std::unique_ptr<Model>> create_qwen2(const ModelConfig& config, WeightLoader& weights,
                                              backend::Backend& backend,
                                              const LoadOptions& options);
Expected<std::unique_ptr<Model>> create_qwen3(const ModelConfig& config, WeightLoader& weights,
                                              backend::Backend& backend,
                                              const LoadOptions& options);
Expected<std::unique_ptr<Model>> create_gpt2(const ModelConfig& config, WeightLoader& weights,
                                             backend::Backend& backend,
                                             const LoadOptions& options);

}  // namespace pagoda::model
