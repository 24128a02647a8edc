#include "server/service/api_service_grammar.h"

#include <algorithm>
#include <utility>
#include <variant>

#include "grammar/choice_gbnf.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/regex_to_gbnf.h"
#include "server/tools/tool_grammar.h"

namespace pagoda::server {
namespace {

// The rules of an output format, its root rule named `root_rule` and every other rule
// prefixed with `prefix` (so that it can sit beside the tools' rules).
struct FormatRules {
  std::string gbnf;
  std::string param;
};

ApiError refused(const std::string& param, const std::string& why) {
  return bad_request("Invalid '" + param + "': " + why, param, "invalid_value");
}

ApiResult<std::optional<FormatRules>> format_rules(const OutputFormat& format,
                                                   const std::string& prefix) {
  const std::string root = prefix + "root";
  grammar::JsonSchemaOptions json;
  json.rule_prefix = prefix;
  if (const auto* object = std::get_if<JsonObjectFormat>(&format)) {
    return std::optional<FormatRules>(
        FormatRules{grammar::any_json_gbnf(json, /*object_only=*/true), object->param});
  }
  if (const auto* schema = std::get_if<JsonSchemaFormat>(&format)) {
    json.strict_properties = schema->strict;
    Expected<std::string> rules = grammar::json_schema_to_gbnf(schema->schema, json);
    if (!rules) return refused(schema->param, rules.status().message());
    return std::optional<FormatRules>(FormatRules{std::move(*rules), schema->param});
  }
  if (const auto* regex = std::get_if<RegexFormat>(&format)) {
    grammar::RegexOptions options;
    options.root_rule = root;
    Expected<std::string> rules = grammar::regex_to_gbnf(regex->pattern, options);
    if (!rules) return refused(regex->param, rules.status().message());
    return std::optional<FormatRules>(FormatRules{std::move(*rules), regex->param});
  }
  if (const auto* choice = std::get_if<ChoiceFormat>(&format)) {
    return std::optional<FormatRules>(
        FormatRules{grammar::choice_gbnf(choice->choices, root), choice->param});
  }
  if (const auto* text = std::get_if<GrammarFormat>(&format)) {
    if (!prefix.empty()) {
      return bad_request("'" + text->param +
                             "' together with 'tools' is not supported: give the grammar "
                             "alone, or use tool_choice \"none\".",
                         text->param, "unsupported_parameter");
    }
    return std::optional<FormatRules>(FormatRules{text->gbnf, text->param});
  }
  return std::optional<FormatRules>();  // TextFormat
}

// JSON Schema -> rules, as the tool grammar asks for them.
Expected<std::string> schema_rules(const Json& schema, const std::string& root_rule,
                                   const std::string& prefix, bool strict) {
  grammar::JsonSchemaOptions options;
  options.rule_prefix = prefix;
  options.strict_properties = strict;
  options.root_rule =
      root_rule.starts_with(prefix) ? root_rule.substr(prefix.size()) : root_rule;
  return grammar::json_schema_to_gbnf(schema, options);
}

}  // namespace

ApiResult<std::optional<RequestGrammar>> request_grammar(const OutputFormat& format,
                                                         const ToolsRequest* tools,
                                                         tools::ToolFamily family) {
  if (tools == nullptr || !tools->may_call()) {
    ApiResult<std::optional<FormatRules>> rules = format_rules(format, "");
    if (!rules.ok()) return std::move(rules).error();
    if (!rules->has_value()) return std::optional<RequestGrammar>();
    return std::optional<RequestGrammar>(
        RequestGrammar{std::move((*rules)->gbnf), {}, std::move((*rules)->param)});
  }
  std::optional<tools::TextFormatRules> text_format;
  if (tools->choice == ToolChoice::kAuto) {
    ApiResult<std::optional<FormatRules>> rules = format_rules(format, "fmt-");
    if (!rules.ok()) return std::move(rules).error();
    if (rules->has_value()) text_format = tools::TextFormatRules{(*rules)->gbnf, "fmt-root"};
  }
  ApiResult<std::optional<tools::ToolGrammar>> grammar =
      tools::build_tool_grammar(family, *tools, schema_rules, text_format);
  if (!grammar.ok()) return std::move(grammar).error();
  if (!grammar->has_value()) return std::optional<RequestGrammar>();
  return std::optional<RequestGrammar>(RequestGrammar{
      std::move((*grammar)->gbnf), std::move((*grammar)->triggers), "tools"});
}

std::vector<int32_t> control_call_markers(const tokenizer::Tokenizer& tokenizer,
                                          tools::ToolFamily family) {
  std::vector<int32_t> tokens;
  for (const std::string_view marker : tools::call_markers(family)) {
    const tokenizer::TokenId id = tokenizer.find_token(marker);
    if (id != tokenizer::kNoToken && tokenizer.is_control(id)) tokens.push_back(id);
  }
  return tokens;
}

GrammarCache::GrammarCache(std::shared_ptr<const grammar::VocabIndex> vocab, size_t capacity,
                           VocabSource make_vocab, std::vector<int32_t> shown_tokens)
    : vocab_(std::move(vocab)),
      make_vocab_(std::move(make_vocab)),
      shown_tokens_(std::move(shown_tokens)),
      capacity_(std::max<size_t>(capacity, 1)) {}

std::shared_ptr<const grammar::VocabIndex> GrammarCache::vocab() {
  const std::lock_guard lock(mutex_);
  if (vocab_ == nullptr && make_vocab_) vocab_ = make_vocab_(shown_tokens_);
  if (vocab_ == nullptr) vocab_ = grammar::VocabIndex::create({}, {});
  return vocab_;
}

ApiResult<std::shared_ptr<const engine::GrammarConstraint>> GrammarCache::constraint(
    const RequestGrammar& request) {
  std::optional<Compiled> compiled = find(request.gbnf);
  if (!compiled) {
    Expected<grammar::Grammar> parsed = grammar::parse_gbnf(request.gbnf);
    if (!parsed) {
      return refused(request.param, "the grammar is not valid: " + parsed.status().message());
    }
    Expected<Compiled> built = grammar::compile_grammar(*parsed, vocab());
    if (!built) {
      return refused(request.param,
                     "the grammar cannot be compiled: " + built.status().message());
    }
    compiled = *built;
    insert(request.gbnf, *compiled);
  }
  auto constraint = std::make_shared<engine::GrammarConstraint>();
  constraint->grammar = std::move(*compiled);
  constraint->triggers = request.triggers;
  constraint->shown_tokens = shown_tokens_;
  return std::shared_ptr<const engine::GrammarConstraint>(std::move(constraint));
}

size_t GrammarCache::size() const {
  const std::lock_guard lock(mutex_);
  return entries_.size();
}

std::optional<GrammarCache::Compiled> GrammarCache::find(const std::string& gbnf) {
  const std::lock_guard lock(mutex_);
  const auto it = index_.find(gbnf);
  if (it == index_.end()) return std::nullopt;
  entries_.splice(entries_.begin(), entries_, it->second);
  return it->second->second;
}

void GrammarCache::insert(const std::string& gbnf, Compiled compiled) {
  const std::lock_guard lock(mutex_);
  if (const auto it = index_.find(gbnf); it != index_.end()) {
    it->second->second = std::move(compiled);
    entries_.splice(entries_.begin(), entries_, it->second);
    return;
  }
  entries_.emplace_front(gbnf, std::move(compiled));
  index_[gbnf] = entries_.begin();
  while (entries_.size() > capacity_) {
    index_.erase(entries_.back().first);
    entries_.pop_back();
  }
}

}  // namespace pagoda::server
