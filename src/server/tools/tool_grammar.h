#pragma once
// The grammar of a request's tool calls, in the family's syntax (GBNF text, and the
// strings that trigger it when the model may also answer in text):
//   tool_choice "required"       one call, or several in a row with parallel_tool_calls
//                                (at most 8 in one answer), constrained from the first
//                                token (no triggers)
//   a named function             one call of that function, from the first token
//   "auto"                       free text until the output holds the family's opening
//                                (triggers: "<tool_call>", "[TOOL_CALLS]", "<|python_tag|>"
//                                and "{\"name\""), then the calls; kGeneric constrains from
//                                the first token to {"tool_calls": [..]} or {"content": ".."}
//   "none", no tools             no grammar
// Every call's arguments match its function's `parameters` (through `convert`, one rule
// set per function, prefixed "tool-fn<i>-").
//
// With an output format (response_format and the like) and tools: the format applies to
// the answer when no call is made. That is a choice from the first token, so "auto" then
// has no triggers: root ::= <calls> | <format's root>. "required" and a named function
// leave no text answer: the format is not used.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "server/openai/api_error.h"
#include "server/openai/openai_request.h"
#include "server/tools/tool_family.h"

namespace pagoda::server::tools {

// JSON Schema -> GBNF rules: the rule `root_rule` matches the schema's JSON, and every
// other rule's name starts with `rule_prefix`; `strict` (the function's "strict": OpenAI's
// strict mode) allows no property the schema does not declare. An error's message says
// why the schema is refused.
using SchemaToGbnf = std::function<Expected<std::string>(
    const Json& schema, const std::string& root_rule, const std::string& rule_prefix,
    bool strict)>;

// An answer's format as rules to embed: `gbnf` defines `root_rule` (and other rules, none
// of them named "root" or starting with "tool-").
struct TextFormatRules {
  std::string gbnf;
  std::string root_rule;
};

struct ToolGrammar {
  std::string gbnf;                   // root rule "root"
  std::vector<std::string> triggers;  // empty: constrained from the first token
};

// nullopt when the request makes no call (no tools, or tool_choice "none"). Errors: a
// function's parameters that `convert` refuses, a 400 naming "tools[i].function.parameters"
// with the converter's message.
ApiResult<std::optional<ToolGrammar>> build_tool_grammar(
    ToolFamily family, const ToolsRequest& tools, const SchemaToGbnf& convert,
    const std::optional<TextFormatRules>& text_format = std::nullopt);

}  // namespace pagoda::server::tools
