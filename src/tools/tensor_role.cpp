#include "tools/tensor_role.h"

#include <algorithm>
#include <charconv>
#include <utility>

namespace pagoda::tools {
namespace {

constexpr std::string_view kBlockPrefix = "blk.";

// Splits "blk.N.rest" into N and "rest"; layer -1 and the whole name otherwise.
std::pair<int32_t, std::string_view> split_layer(std::string_view name) {
  if (!name.starts_with(kBlockPrefix)) return {-1, name};
  const std::string_view tail = name.substr(kBlockPrefix.size());
  int32_t layer = -1;
  const auto [end, error] = std::from_chars(tail.data(), tail.data() + tail.size(), layer);
  if (error != std::errc() || end == tail.data() + tail.size() || *end != '.' || layer < 0) {
    return {-1, name};
  }
  return {layer, tail.substr(static_cast<size_t>(end - tail.data()) + 1)};
}

// The role of a matrix from its name without the block prefix: "attn_q.weight",
// "ffn_down_exps.weight" (the experts of a mixture share their dense role).
TensorRole matrix_role(std::string_view stem) {
  const size_t dot = stem.find('.');
  std::string_view base = stem.substr(0, dot);
  for (const std::string_view suffix : {"_exps", "_shexp"}) {
    if (base.ends_with(suffix)) base.remove_suffix(suffix.size());
  }
  struct Named {
    std::string_view name;
    TensorRole role;
  };
  static constexpr Named kRoles[] = {
      {"token_embd", TensorRole::kTokenEmbedding},
      {"position_embd", TensorRole::kPositionEmbedding},
      {"output", TensorRole::kOutput},
      {"attn_q", TensorRole::kAttnQ},
      {"attn_k", TensorRole::kAttnK},
      {"attn_v", TensorRole::kAttnV},
      {"attn_qkv", TensorRole::kAttnQkv},
      {"attn_output", TensorRole::kAttnOutput},
      {"ffn_gate", TensorRole::kFfnGate},
      {"ffn_up", TensorRole::kFfnUp},
      {"ffn_down", TensorRole::kFfnDown},
  };
  for (const Named& named : kRoles) {
    if (base == named.name) return named.role;
  }
  return TensorRole::kOtherMatrix;
}

}  // namespace

TensorPlan tensor_plan_of(std::string name, std::vector<int64_t> shape) {
  const auto [layer, stem] = split_layer(name);
  TensorRole role = TensorRole::kNorm;
  if (shape.size() <= 1) {
    role = stem.ends_with(".bias") ? TensorRole::kBias : TensorRole::kNorm;
  } else {
    role = matrix_role(stem);
  }
  return TensorPlan{std::move(name), std::move(shape), role, layer};
}

int32_t layer_count(const std::vector<TensorPlan>& tensors) {
  int32_t highest = -1;
  for (const TensorPlan& tensor : tensors) highest = std::max(highest, tensor.layer);
  return highest + 1;
}

}  // namespace pagoda::tools
