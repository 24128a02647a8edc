#pragma once
// A Jinja template: parse once, render many times (from any number of threads at
// once: rendering only reads the parsed tree).
//
//   PAGODA_ASSIGN_OR_RETURN(auto tmpl, jinja::Template::parse("Hello {{ name }}!"));
//   PAGODA_ASSIGN_OR_RETURN(std::string text, tmpl.render({{"name", jinja::Value("you")}}));
//
// The dialect is jinja2's as Hugging Face configures it for chat templates:
// trim_blocks and lstrip_blocks on, loop controls on, a sandbox that forbids modifying
// lists and dicts, undefined variables that print as "", the globals range, dict,
// namespace, cycler, joiner, raise_exception and strftime_now, and tojson as
// json.dumps(ensure_ascii=False). See interpreter.h for the limits on a render.

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "jinja/ast.h"
#include "jinja/interpreter.h"
#include "jinja/lexer.h"
#include "jinja/value.h"

namespace pagoda::jinja {

struct RenderOptions {
  RenderLimits limits;
  // The time strftime_now() reports; the clock when unset. Tests fix it.
  std::optional<std::time_t> now;
};

class Template {
 public:
  // Errors: "template syntax error, line N: ...".
  static Expected<Template> parse(std::string_view source, const LexerOptions& options = {});

  // Renders with these variables (they shadow the globals of the same name). Errors:
  // "template error, line N: ...", or raise_exception's message as it is.
  Expected<std::string> render(const std::vector<std::pair<std::string, Value>>& variables,
                               const RenderOptions& options = {}) const;

 private:
  explicit Template(std::shared_ptr<const Body> body) : body_(std::move(body)) {}

  std::shared_ptr<const Body> body_;
};

}  // namespace pagoda::jinja
