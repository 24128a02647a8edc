// JsonSchemaConverter's rules: names, the shared rules of JSON's grammar, the text.
#include "grammar/grammar.h"
#include "grammar/json_schema_converter.h"
#include "grammar/regex_to_gbnf.h"

namespace pagoda::grammar {

std::string json_text(const Json& value) {
  return value.dump(-1, ' ', false, nlohmann::detail::error_handler_t::replace);
}

std::string json_string_char() {
  // Kept inside the rule that holds the string, so that a run of characters stays in one
  // rule (what the compiled grammar decides fastest).
  return "([^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}))";
}

std::string gbnf_sequence(std::initializer_list<std::string> parts) {
  std::string out;
  for (const std::string& part : parts) {
    if (part.empty()) continue;
    if (!out.empty()) out += ' ';
    out += part;
  }
  return out;
}

std::string parenthesized(const std::string& inner, const char* suffix) {
  std::string out = "(";
  out += inner;
  out += ')';
  return out + suffix;
}

std::string JsonSchemaConverter::reserve_rule(const std::string& hint) {
  const std::string base = Grammar::sanitize_rule_name(options_.rule_prefix + hint);
  std::string name = base;
  for (int suffix = 2; rule_index_.count(name); ++suffix) name = base + "-" + std::to_string(suffix);
  rule_index_[name] = rules_.size();
  rules_.emplace_back(name, "");
  return name;
}

void JsonSchemaConverter::set_rule(const std::string& name, const std::string& body) {
  rules_[rule_index_.at(name)].second = body;
}

std::string JsonSchemaConverter::add_rule(const std::string& hint, const std::string& body) {
  // Schemas repeat shapes (many properties alike): one rule each keeps the grammar, and
  // the positions the compiler classifies tokens at, small.
  if (auto it = rule_by_body_.find(body); it != rule_by_body_.end()) return it->second;
  const std::string name = reserve_rule(hint);
  set_rule(name, body);
  rule_by_body_[body] = name;
  return name;
}

bool JsonSchemaConverter::is_rule_name(const std::string& expression) const {
  return rule_index_.count(expression) > 0;
}

std::string JsonSchemaConverter::ws() { return options_.compact ? "" : shared_rule("ws"); }

std::string JsonSchemaConverter::shared_rule(const std::string& kind) {
  if (auto it = shared_rules_.find(kind); it != shared_rules_.end()) return it->second;
  const std::string name = reserve_rule(kind);
  shared_rules_[kind] = name;  // before the body, which may come back to it (value, object)
  std::string body;
  auto space = [&] {
    std::string out(" ");
    if (!options_.compact) out += shared_rule("ws") + " ";
    return out;
  };
  if (kind == "ws") {
    const size_t indent = options_.max_indent > 0 ? static_cast<size_t>(options_.max_indent) : 0;
    body = "(\" \" | \"\\n\"" + (indent ? " " + gbnf_repeat("\" \"", 0, indent) : std::string()) + ")?";
  } else if (kind == "string") {
    body = "\"\\\"\" " + json_string_char() + "* \"\\\"\"";
  } else if (kind == "integer") {
    body = "\"-\"? (\"0\" | [1-9] [0-9]*)";
  } else if (kind == "number") {
    body = "\"-\"? (\"0\" | [1-9] [0-9]*) (\".\" [0-9]+)? ([eE] [+\\-]? [0-9]+)?";
  } else if (kind == "boolean") {
    body = "\"true\" | \"false\"";
  } else if (kind == "null") {
    body = "\"null\"";
  } else if (kind == "value") {
    body = shared_rule("object") + " | " + shared_rule("array") + " | " + shared_rule("string") + " | " +
           shared_rule("number") + " | " + shared_rule("boolean") + " | " + shared_rule("null");
  } else if (kind == "object") {
    const std::string member = shared_rule("string") + " \":\"" + space() + shared_rule("value");
    body = "\"{\"" + space() + "\"}\" | \"{\"" + space() + member + " (\",\"" + space() + member + ")*" +
           space() + "\"}\"";
  } else if (kind == "array") {
    const std::string value = shared_rule("value");
    body = "\"[\"" + space() + "\"]\" | \"[\"" + space() + value + " (\",\"" + space() + value + ")*" +
           space() + "\"]\"";
  }
  set_rule(name, body);
  return name;
}

std::string JsonSchemaConverter::grammar_text() const {
  std::string text;
  for (const auto& [name, body] : rules_) text += name + " ::= " + body + "\n";
  return text;
}

}  // namespace pagoda::grammar
