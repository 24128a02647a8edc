#pragma once
// Tool calling's model families: how a model writes a function call, told by its chat
// template's source text. Each family has its own call syntax (what the grammar
// constrains and the output parser reads):
//   kHermes   Hermes, Qwen 2.5 and later:  <tool_call>\n{"name": "f", "arguments": {..}}\n</tool_call>
//             (one block per call, several in a row for parallel calls)
//   kLlama3   Llama 3.1 and later:         {"name": "f", "parameters": {..}}, optionally after
//             <|python_tag|> (one call per turn: the templates refuse more)
//   kMistral  Mistral:                     [TOOL_CALLS][{"name": "f", "arguments": {..}}, ..]
//   kGeneric  a template that knows no tools: we describe the tools in a system message
//             and the model answers with one JSON object,
//             {"tool_calls": [{"name": "f", "arguments": {..}}, ..]} or {"content": ".."}

#include <span>
#include <string_view>

namespace pagoda::server::tools {

enum class ToolFamily { kHermes, kLlama3, kMistral, kGeneric };

// "hermes", "llama3", "mistral", "generic".
std::string_view tool_family_name(ToolFamily family);

// The family a template's Jinja source writes calls in. A template that never reads
// `tools` is kGeneric, whatever else it holds.
ToolFamily detect_tool_family(std::string_view template_source);

// The fixed strings of the families' call syntaxes, named once for the detection, the
// call parser, the grammars' triggers and call_markers.
inline constexpr std::string_view kHermesCallOpen = "<tool_call>";
inline constexpr std::string_view kHermesCallClose = "</tool_call>";
inline constexpr std::string_view kLlamaPythonTag = "<|python_tag|>";
inline constexpr std::string_view kMistralToolCalls = "[TOOL_CALLS]";

// The fixed strings of the family's call syntax that a vocabulary may hold as one token
// (those above). Where such a token is a control token (Mistral's [TOOL_CALLS], Llama 3's
// <|python_tag|>), it must be shown as text in the output of a request that may call, or
// the call is not seen.
std::span<const std::string_view> call_markers(ToolFamily family);

}  // namespace pagoda::server::tools
