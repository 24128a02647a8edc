// The table of supported architectures. Adding one: write its file (weights struct,
// forward pass, create_X) and add a row here.

#include <algorithm>
#include <array>

#include "model/architecture.h"

namespace pagoda::model {
namespace {

constexpr std::array kArchitectures = {
    Architecture{"llama", NormKind::kRms, PositionKind::kRope, &create_llama},
    Architecture{"qwen2", NormKind::kRms, PositionKind::kRopeNeox, &create_qwen2},
    Architecture{"qwen3", NormKind::kRms, PositionKind::kRopeNeox, &create_qwen3},
    Architecture{"gpt2", NormKind::kLayer, PositionKind::kLearned, &create_gpt2},
};

}  // namespace

std::span<const Architecture> architectures() { return kArchitectures; }

const Architecture* find_architecture(std::string_view name) {
  const auto it = std::find_if(kArchitectures.begin(), kArchitectures.end(),
                               [name](const Architecture& a) { return a.name == name; });
  return it == kArchitectures.end() ? nullptr : &*it;
}

std::string supported_architectures() {
  std::string names;
  for (const Architecture& a : kArchitectures) {
    if (!names.empty()) names += ", ";
    names += a.name;
  }
  return names;
}

}  // namespace pagoda::model
