#pragma once
// What a random model of a given architecture and shape consists of: its tensors (name,
// shape, role) and its `general.*` / `{arch}.*` metadata, named as GGUF files of that
// architecture name them.

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/writer.h"
#include "tools/random_model.h"

namespace pagoda::tools {

// What a tensor is for: decides its type (weight_scheme.h) and its random values.
enum class TensorRole {
  kTokenEmbedding,
  kPositionEmbedding,
  kOutput,
  kAttnQ,
  kAttnK,
  kAttnV,
  kAttnQkv,
  kAttnOutput,
  kFfnGate,
  kFfnUp,
  kFfnDown,
  kOtherMatrix,  // a matrix none of the above names (a model read from a file): the base type
  kNorm,  // f32, values near 1
  kBias,  // f32, values near 0
};

struct TensorPlan {
  std::string name;
  std::vector<int64_t> shape;  // ne[0] (the row) first
  TensorRole role = TensorRole::kNorm;
  int32_t layer = -1;  // -1 outside the blocks

  int64_t n_elements() const;
};

// The spec with defaults filled in (n_head_kv, head_dim), checked for consistency.
Expected<RandomModelSpec> resolve_spec(RandomModelSpec spec);

// Every tensor of a resolved spec, in file order (embeddings, blocks, output).
std::vector<TensorPlan> plan_tensors(const RandomModelSpec& spec);

// The architecture's hyper-parameter keys and general.* keys.
Status write_model_metadata(gguf::Writer& writer, const RandomModelSpec& spec, uint32_t file_type);

}  // namespace pagoda::tools
