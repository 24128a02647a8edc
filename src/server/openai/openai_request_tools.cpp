// Chat's tool fields: tools, tool_choice, parallel_tool_calls.

#include <optional>
#include <utility>

#include "server/openai/openai_request_parts.h"

namespace pagoda::server {
namespace {

constexpr size_t kMaxFunctionName = 64;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

// A function name as OpenAI takes it: ^[a-zA-Z0-9_-]{1,64}$.
std::optional<ApiError> check_function_name(const std::string& name, const std::string& param) {
  if (name.empty()) return empty_string(param);
  if (name.size() > kMaxFunctionName) {
    return bad_request("Invalid '" + param +
                           "': string too long. Expected a string with maximum length " +
                           std::to_string(kMaxFunctionName) + ", but got a string with length " +
                           std::to_string(name.size()) + " instead.",
                       param, "string_above_max_length");
  }
  for (const char c : name) {
    if (!is_name_char(c)) {
      return invalid_value(param, "Invalid '" + param +
                                      "': string does not match pattern. Expected a string that "
                                      "matches the pattern '^[a-zA-Z0-9_-]+$'.");
    }
  }
  return std::nullopt;
}

// tools[i]: {"type": "function", "function": {"name", "description", "parameters", "strict"}}.
ApiResult<ToolFunction> read_tool(const Json& tool, const std::string& param) {
  if (!tool.is_object()) return invalid_type(param, "an object", tool);
  FieldReader reader(tool, param);
  const std::optional<std::string> type = reader.string("type");
  const Json* function = reader.object("function");
  if (!reader.ok()) return reader.take_error();
  if (!type) return missing_parameter(param + ".type");
  if (*type != "function") {
    return invalid_value(param + ".type",
                         "Invalid value: '" + *type + "'. Supported values are: 'function'.");
  }
  if (function == nullptr) return missing_parameter(param + ".function");
  FieldReader fields(*function, param + ".function");
  ToolFunction result;
  const std::optional<std::string> name = fields.string("name");
  result.description = fields.string("description").value_or("");
  const Json* parameters = fields.object("parameters");
  result.strict = fields.boolean("strict").value_or(false);
  if (!fields.ok()) return fields.take_error();
  if (!name) return missing_parameter(fields.param("name"));
  if (auto error = check_function_name(*name, fields.param("name"))) return std::move(*error);
  result.name = *name;
  // A function without parameters takes none: an empty object.
  result.parameters = parameters != nullptr
                          ? *parameters
                          : Json::parse(R"({"type": "object", "properties": {}})");
  return result;
}

ApiResult<std::vector<ToolFunction>> read_functions(const Json& tools) {
  std::vector<ToolFunction> functions;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string param = "tools[" + std::to_string(i) + "]";
    ApiResult<ToolFunction> function = read_tool(tools[i], param);
    if (!function.ok()) return std::move(function).error();
    for (size_t j = 0; j < functions.size(); ++j) {
      if (functions[j].name == function->name) {
        return invalid_value(param + ".function.name",
                             "Invalid '" + param + ".function.name': the function name '" +
                                 function->name + "' is already used by tools[" +
                                 std::to_string(j) + "].");
      }
    }
    functions.push_back(std::move(function).value());
  }
  return functions;
}

// tool_choice: "none" | "auto" | "required" | {"type": "function", "function": {"name"}}.
std::optional<ApiError> read_tool_choice(const Json& value, ToolsRequest& tools) {
  const std::string param = "tool_choice";
  if (value.is_string()) {
    const std::string& choice = value.get_ref<const std::string&>();
    if (choice == "none") {
      tools.choice = ToolChoice::kNone;
    } else if (choice == "auto") {
      tools.choice = ToolChoice::kAuto;
    } else if (choice == "required") {
      tools.choice = ToolChoice::kRequired;
    } else {
      return invalid_value(param, "Invalid value: '" + choice +
                                      "'. Supported values are: 'none', 'auto', and 'required'.");
    }
  } else if (value.is_object()) {
    FieldReader reader(value, param);
    const std::optional<std::string> type = reader.string("type");
    const Json* function = reader.object("function");
    if (!reader.ok()) return reader.take_error();
    if (!type) return missing_parameter("tool_choice.type");
    if (*type != "function") {
      return invalid_value("tool_choice.type",
                           "Invalid value: '" + *type + "'. Supported values are: 'function'.");
    }
    if (function == nullptr) return missing_parameter("tool_choice.function");
    FieldReader inner(*function, "tool_choice.function");
    const std::optional<std::string> name = inner.string("name");
    if (!inner.ok()) return inner.take_error();
    if (!name) return missing_parameter("tool_choice.function.name");
    tools.choice = ToolChoice::kFunction;
    tools.forced_function = *name;
  } else {
    return invalid_type(param, "a string or an object", value);
  }
  if (tools.choice != ToolChoice::kNone && tools.empty()) {
    return invalid_value(param,
                         "Invalid value for 'tool_choice': 'tool_choice' is only allowed when "
                         "'tools' are specified.");
  }
  if (tools.choice == ToolChoice::kFunction) {
    for (const ToolFunction& function : tools.functions) {
      if (function.name == tools.forced_function) return std::nullopt;
    }
    return invalid_value(param, "Invalid value for 'tool_choice': no function named '" +
                                    tools.forced_function + "' was given in 'tools'.");
  }
  return std::nullopt;
}

}  // namespace

ApiResult<ToolsRequest> read_tools(const Json& document) {
  FieldReader reader(document);
  ToolsRequest tools;
  if (const Json* list = reader.array("tools")) {
    ApiResult<std::vector<ToolFunction>> functions = read_functions(*list);
    if (!functions.ok()) return std::move(functions).error();
    tools.functions = std::move(functions).value();
    tools.tools = *list;
  }
  tools.parallel_tool_calls = reader.boolean("parallel_tool_calls").value_or(true);
  if (!reader.ok()) return reader.take_error();
  tools.choice = tools.empty() ? ToolChoice::kNone : ToolChoice::kAuto;
  if (const Json* choice = reader.find("tool_choice")) {
    if (auto error = read_tool_choice(*choice, tools)) return std::move(*error);
  }
  return tools;
}

}  // namespace pagoda::server
