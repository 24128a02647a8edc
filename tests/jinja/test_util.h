#pragma once
// Helpers for the template interpreter tests: render a template with JSON variables.
// Every expected string in these tests was checked against Python's jinja2 3.1 set up
// as Hugging Face's chat template environment (trim_blocks, lstrip_blocks, sandbox).

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "jinja/json.h"
#include "jinja/template.h"

namespace pagoda::jinja {

inline Expected<std::string> try_render(
    std::string_view source,
    const nlohmann::ordered_json& variables = nlohmann::ordered_json::object(),
    const RenderOptions& options = {}) {
  PAGODA_ASSIGN_OR_RETURN(Template tmpl, Template::parse(source));
  std::vector<std::pair<std::string, Value>> vars;
  for (const auto& [key, value] : variables.items()) {
    PAGODA_ASSIGN_OR_RETURN(Value converted, from_json(value));
    vars.emplace_back(key, std::move(converted));
  }
  return tmpl.render(vars, options);
}

// The rendered text, or "ERROR: <message>".
inline std::string render(std::string_view source, const nlohmann::ordered_json& variables =
                                                       nlohmann::ordered_json::object()) {
  auto result = try_render(source, variables);
  return result.ok() ? *result : "ERROR: " + result.status().message();
}

}  // namespace pagoda::jinja
