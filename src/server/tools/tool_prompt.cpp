#include "server/tools/tool_prompt.h"

#include <algorithm>
#include <utility>

namespace pagoda::server::tools {
namespace {

bool has_tool_calls(const Json& message) {
  const auto calls = message.find("tool_calls");
  return calls != message.end() && calls->is_array() && !calls->empty();
}

// function.arguments given as a string of a JSON object -> that object (a string that
// holds no object stays as it is: the template shows it as text).
void arguments_to_objects(Json& messages) {
  for (Json& message : messages) {
    if (!has_tool_calls(message)) continue;
    for (Json& call : message["tool_calls"]) {
      if (!call.is_object() || !call.contains("function")) continue;
      Json& function = call["function"];
      if (!function.is_object()) continue;
      const auto arguments = function.find("arguments");
      if (arguments == function.end() || !arguments->is_string()) continue;
      Json parsed = Json::parse(arguments->get_ref<const std::string&>(), nullptr,
                                /*allow_exceptions=*/false);
      if (parsed.is_object()) *arguments = std::move(parsed);
    }
  }
}

std::string compact(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// An earlier assistant turn of calls, as kGeneric's answer: {"tool_calls": [..]}.
std::string generic_calls_text(const Json& calls) {
  Json list = Json::array();
  for (const Json& call : calls) {
    const Json function = call.value("function", Json::object());
    Json entry = Json::object();
    entry["name"] = function.value("name", "");
    Json arguments = function.value("arguments", Json::object());
    if (arguments.is_string()) {
      Json parsed = Json::parse(arguments.get_ref<const std::string&>(), nullptr, false);
      if (!parsed.is_discarded()) arguments = std::move(parsed);
    }
    entry["arguments"] = std::move(arguments);
    list.push_back(std::move(entry));
  }
  Json answer = Json::object();
  answer["tool_calls"] = std::move(list);
  return compact(answer);
}

// The function an earlier call id belongs to ("" when unknown).
std::string function_of_call(const Json& messages, size_t before, const std::string& id) {
  for (size_t i = before; i-- > 0;) {
    if (!has_tool_calls(messages[i])) continue;
    for (const Json& call : messages[i]["tool_calls"]) {
      if (call.value("id", "") == id) return call.value("function", Json::object()).value("name", "");
    }
  }
  return {};
}

std::string content_text(const Json& message) {
  const auto content = message.find("content");
  if (content == message.end() || content->is_null()) return {};
  return content->is_string() ? content->get<std::string>() : compact(*content);
}

// kGeneric: calls and results as plain turns any template renders. The results of one
// turn's calls share one user turn, a line each (templates that want user and assistant
// turns to alternate accept it).
Json generic_messages(const Json& messages) {
  Json result = Json::array();
  bool after_result = false;  // result's last turn holds tool results
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& message = messages[i];
    const std::string role = message.value("role", "");
    if (role == "assistant" && has_tool_calls(message)) {
      std::string text = content_text(message);
      if (!text.empty()) text += "\n";
      Json turn = Json::object();
      turn["role"] = "assistant";
      turn["content"] = text + generic_calls_text(message["tool_calls"]);
      result.push_back(std::move(turn));
    } else if (role == "tool") {
      const std::string id = message.value("tool_call_id", "");
      std::string name = function_of_call(messages, i, id);
      Json output = Json::object();
      output["tool_result"] = Json::object();
      Json& tool_result = output["tool_result"];
      if (!name.empty()) tool_result["name"] = std::move(name);
      if (!id.empty()) tool_result["tool_call_id"] = id;
      tool_result["content"] = content_text(message);
      if (after_result) {
        result.back()["content"] = result.back()["content"].get<std::string>() + "\n" + compact(output);
        continue;
      }
      Json turn = Json::object();
      turn["role"] = "user";
      turn["content"] = compact(output);
      result.push_back(std::move(turn));
      after_result = true;
      continue;
    } else {
      result.push_back(message);
    }
    after_result = false;
  }
  return result;
}

// Puts `text` in the conversation's system message (after the client's own).
void add_system_text(Json& messages, const std::string& text) {
  if (!messages.empty() && messages[0].value("role", "") == "system") {
    std::string own = content_text(messages[0]);
    messages[0]["content"] = own.empty() ? text : own + "\n\n" + text;
    return;
  }
  Json system = Json::object();
  system["role"] = "system";
  system["content"] = text;
  messages.insert(messages.begin(), std::move(system));
}

}  // namespace

std::string generic_tools_instructions(const ToolsRequest& tools) {
  std::string text = "You can call these functions:\n";
  for (const ToolFunction& function : tools.functions) {
    if (tools.choice == ToolChoice::kFunction && function.name != tools.forced_function) continue;
    text += "- " + function.name;
    if (!function.description.empty()) text += ": " + function.description;
    text += "\n  arguments (JSON Schema): " + compact(function.parameters) + "\n";
  }
  text +=
      "\nAnswer with one JSON object and nothing else.\n"
      "To call functions, answer:\n"
      "{\"tool_calls\": [{\"name\": \"<function name>\", \"arguments\": {<the arguments>}}]}\n";
  if (tools.choice == ToolChoice::kAuto) {
    text +=
        "To answer the user without calling a function, answer:\n"
        "{\"content\": \"<your answer>\"}\n";
  } else if (tools.choice == ToolChoice::kFunction) {
    text += "Call the function " + tools.forced_function + " now.\n";
  } else {
    text += "Call a function now.\n";
  }
  if (!tools.parallel_tool_calls) text += "Call one function at a time.\n";
  return text;
}

ToolPrompt prepare_tool_prompt(ToolFamily family, Json messages, const ToolsRequest& tools) {
  ToolPrompt prompt;
  if (family != ToolFamily::kGeneric) {
    arguments_to_objects(messages);
    prompt.messages = std::move(messages);
    if (!tools.empty()) prompt.template_variables["tools"] = tools.tools;
    return prompt;
  }
  const bool has_calls = std::any_of(messages.begin(), messages.end(), has_tool_calls);
  if (tools.empty() && !has_calls) {  // nothing of tools: the conversation as written
    prompt.messages = std::move(messages);
    return prompt;
  }
  prompt.messages = generic_messages(messages);
  if (tools.may_call()) add_system_text(prompt.messages, generic_tools_instructions(tools));
  return prompt;
}

}  // namespace pagoda::server::tools
