#pragma once
// What a tensor read from a GGUF file is for, from the name GGUF gives it
// ("blk.3.ffn_down.weight": the feed-forward down projection of block 3), so that a model
// read from a file gets its tensors' types by the same rules (weight_scheme.h) as the
// models mkmodel plans itself.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tools/random_model_layout.h"

namespace pagoda::tools {

// The plan of a tensor named `name` of `shape` (ne[0] first). Matrices whose name says no
// known role are kOtherMatrix; tensors of one dimension are kBias when named "*.bias",
// kNorm otherwise. The layer is N of a "blk.N." prefix, -1 without one.
TensorPlan tensor_plan_of(std::string name, std::vector<int64_t> shape);

// Blocks of a model whose tensors are `tensors`: one more than the highest layer, 0 when
// no tensor belongs to a block.
int32_t layer_count(const std::vector<TensorPlan>& tensors);

}  // namespace pagoda::tools
