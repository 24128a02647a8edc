#include "server/tools/tool_grammar.h"

#include <utility>

namespace pagoda::server::tools {
namespace {

// Whitespace the model may put between the syntax's tokens (bounded: a free run of
// whitespace lets a small model loop).
constexpr std::string_view kSpaceRule = "tool-ws ::= [ \\t\\n]{0,4}\n";

// Parallel calls in one answer, at most: a small model that starts repeating a call would
// otherwise repeat it until max_tokens, and its answer would be no call at all.
constexpr int kMaxParallelCalls = 8;

// `item` repeated 0 to kMaxParallelCalls - 1 times: the calls after the first.
std::string more_calls(const std::string& item) {
  return "(" + item + "){0," + std::to_string(kMaxParallelCalls - 1) + "}";
}

// A JSON string (kGeneric's {"content": ".."}).
constexpr std::string_view kStringRule =
    "tool-string ::= \"\\\"\" tool-char* \"\\\"\"\n"
    "tool-char ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n";

// "\"key\"" tool-ws ":" tool-ws: a JSON key and its colon.
std::string key(std::string_view name) {
  return "\"\\\"" + std::string(name) + "\\\"\" tool-ws \":\" tool-ws";
}

// {"name": "<name>", "<arguments_key>": <arguments>} with the function's rule.
std::string call_rule(const std::string& rule, const std::string& name,
                      std::string_view arguments_key, const std::string& arguments_rule) {
  return rule + " ::= \"{\" tool-ws " + key("name") + " \"\\\"" + name + "\\\"\" tool-ws \",\" tool-ws " +
         key(arguments_key) + " " + arguments_rule + " tool-ws \"}\"\n";
}

std::string_view arguments_key(ToolFamily family) {
  return family == ToolFamily::kLlama3 ? "parameters" : "arguments";
}

// tool-calls: the family's block(s) around tool-call.
std::string calls_rule(ToolFamily family, bool several) {
  switch (family) {
    case ToolFamily::kHermes: {
      const std::string block = "\"<tool_call>\" tool-ws tool-call tool-ws \"</tool_call>\"";
      if (!several) return "tool-calls ::= " + block + "\n";
      return "tool-calls ::= " + block + " " + more_calls("tool-ws " + block) + "\n";
    }
    case ToolFamily::kLlama3:
      // The Llama 3 templates take one call per turn.
      return "tool-calls ::= (\"<|python_tag|>\" tool-ws)? tool-call\n";
    case ToolFamily::kMistral:
      return std::string("tool-calls ::= \"[TOOL_CALLS]\" tool-ws \"[\" tool-ws tool-call ") +
             (several ? more_calls("tool-ws \",\" tool-ws tool-call") + " " : "") +
             "tool-ws \"]\"\n";
    case ToolFamily::kGeneric:
      return "tool-calls ::= \"{\" tool-ws " + key("tool_calls") +
             " \"[\" tool-ws tool-call " +
             (several ? more_calls("tool-ws \",\" tool-ws tool-call") + " " : "") +
             "tool-ws \"]\" tool-ws \"}\"\n";
  }
  return {};
}

std::vector<std::string> triggers_of(ToolFamily family) {
  switch (family) {
    case ToolFamily::kHermes:
      return {std::string(kHermesCallOpen)};
    case ToolFamily::kLlama3:
      return {std::string(kLlamaPythonTag), "{\"name\""};
    case ToolFamily::kMistral:
      return {std::string(kMistralToolCalls)};
    case ToolFamily::kGeneric:
      return {};
  }
  return {};
}

}  // namespace

ApiResult<std::optional<ToolGrammar>> build_tool_grammar(
    ToolFamily family, const ToolsRequest& tools, const SchemaToGbnf& convert,
    const std::optional<TextFormatRules>& text_format) {
  if (!tools.may_call()) return std::optional<ToolGrammar>();
  const bool forced = tools.choice == ToolChoice::kFunction;
  std::string calls;       // tool-call's alternatives
  std::string functions;   // each function's call rule and argument rules
  for (size_t i = 0; i < tools.functions.size(); ++i) {
    const ToolFunction& function = tools.functions[i];
    if (forced && function.name != tools.forced_function) continue;
    const std::string prefix = "tool-fn" + std::to_string(i) + "-";
    const std::string arguments_rule = prefix + "arguments";
    Expected<std::string> rules =
        convert(function.parameters, arguments_rule, prefix, function.strict);
    if (!rules) {
      const std::string param = "tools[" + std::to_string(i) + "].function.parameters";
      return bad_request("Invalid '" + param + "': " + rules.status().message(), param,
                         "invalid_value");
    }
    functions += call_rule(prefix + "call", function.name, arguments_key(family), arguments_rule);
    functions += *rules;
    if (!functions.ends_with('\n')) functions += '\n';
    calls += (calls.empty() ? "" : " | ") + prefix + "call";
  }
  const bool several = tools.parallel_tool_calls && !forced;
  ToolGrammar grammar;
  const bool text_answer = tools.choice == ToolChoice::kAuto;
  std::string root = "root ::= tool-calls";
  if (text_answer && text_format) {
    root += " | " + text_format->root_rule;
  } else if (text_answer && family == ToolFamily::kGeneric) {
    root += " | \"{\" tool-ws " + key("content") + " tool-string tool-ws \"}\"";
  } else if (text_answer) {
    grammar.triggers = triggers_of(family);
  }
  grammar.gbnf = root + "\n" + calls_rule(family, several) + "tool-call ::= " + calls + "\n" +
                 functions + std::string(kSpaceRule) + std::string(kStringRule);
  if (text_answer && text_format) grammar.gbnf += text_format->gbnf;
  return std::optional<ToolGrammar>(std::move(grammar));
}

}  // namespace pagoda::server::tools
