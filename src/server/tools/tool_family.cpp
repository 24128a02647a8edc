#include "server/tools/tool_family.h"

#include <array>

namespace pagoda::server::tools {
namespace {

constexpr std::array<std::string_view, 2> kHermesMarkers = {kHermesCallOpen, kHermesCallClose};
constexpr std::array<std::string_view, 1> kLlamaMarkers = {kLlamaPythonTag};
constexpr std::array<std::string_view, 1> kMistralMarkers = {kMistralToolCalls};

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace

std::string_view tool_family_name(ToolFamily family) {
  switch (family) {
    case ToolFamily::kHermes:
      return "hermes";
    case ToolFamily::kLlama3:
      return "llama3";
    case ToolFamily::kMistral:
      return "mistral";
    case ToolFamily::kGeneric:
      return "generic";
  }
  return "generic";
}

ToolFamily detect_tool_family(std::string_view source) {
  // A template that shows no tools cannot have taught the model a syntax for them.
  if (!contains(source, "tools")) return ToolFamily::kGeneric;
  if (contains(source, kHermesCallOpen)) return ToolFamily::kHermes;
  if (contains(source, kMistralToolCalls)) return ToolFamily::kMistral;
  // Llama 3.1 names its tag; 3.2 and 3.3 only describe the JSON with "parameters".
  if (contains(source, kLlamaPythonTag)) return ToolFamily::kLlama3;
  if (contains(source, "<|start_header_id|>") && contains(source, "\"parameters\"")) {
    return ToolFamily::kLlama3;
  }
  return ToolFamily::kGeneric;
}

std::span<const std::string_view> call_markers(ToolFamily family) {
  switch (family) {
    case ToolFamily::kHermes:
      return kHermesMarkers;
    case ToolFamily::kLlama3:
      return kLlamaMarkers;
    case ToolFamily::kMistral:
      return kMistralMarkers;
    case ToolFamily::kGeneric:
      return {};
  }
  return {};
}

}  // namespace pagoda::server::tools
