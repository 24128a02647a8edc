#include "jinja/template.h"

#include "jinja/builtins.h"
#include "jinja/parser.h"

namespace pagoda::jinja {

Expected<Template> Template::parse(std::string_view source, const LexerOptions& options) {
  PAGODA_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(source, options));
  PAGODA_ASSIGN_OR_RETURN(Body body, parse_tokens(std::move(tokens)));
  return Template(std::make_shared<const Body>(std::move(body)));
}

Expected<std::string> Template::render(const std::vector<std::pair<std::string, Value>>& variables,
                                       const RenderOptions& options) const {
  auto globals = std::make_shared<Scope>();
  add_globals(*globals);
  for (const auto& [name, value] : variables) globals->set(name, value);
  Interpreter interpreter(options.limits, options.now);
  return interpreter.render(*body_, globals);
}

}  // namespace pagoda::jinja
