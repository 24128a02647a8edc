#pragma once
// A conversation with tools, made ready for the model's chat template:
//  - kHermes, kLlama3, kMistral: the tools go to the template as its `tools` variable
//    (OpenAI's list of {"type": "function", "function": {..}}), and the arguments of
//    earlier assistant calls, sent by OpenAI clients as a JSON string, become the object
//    they hold (the templates write them with `tojson`).
//  - kGeneric (a template that knows no tools): a system message describes the tools and
//    the JSON answer the model gives, earlier calls become that JSON answer as the
//    assistant's text, and tool results become user messages; the template gets no
//    `tools` variable.

#include <string>

#include "server/openai/openai_request.h"
#include "server/tools/tool_family.h"

namespace pagoda::server::tools {

struct ToolPrompt {
  Json messages;                          // to render
  Json template_variables = Json::object();  // {"tools": [..]} or {}
};

// `messages` as the request parser normalised them. kGeneric rewrites the turns whenever
// the request has tools or the history has calls (a template that knows no tools cannot
// render an assistant turn of calls, whose content is null), and leaves any other
// conversation as it is; the other families only turn arguments into objects.
ToolPrompt prepare_tool_prompt(ToolFamily family, Json messages, const ToolsRequest& tools);

// kGeneric's system message: the functions, and the answer's JSON shape for `tools.choice`.
std::string generic_tools_instructions(const ToolsRequest& tools);

}  // namespace pagoda::server::tools
