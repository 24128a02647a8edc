#pragma once
// Helpers of the tool-calling tests: the chat templates they read.

#include <fstream>
#include <sstream>
#include <string>

#include "test_data.h"

namespace pagoda::server::tools::testing {

// A committed template (tests/data/chat_templates/<name>), or one of the shared reference
// templates (<shared>/reference/chat_templates/<name>); "" when absent.
inline std::string read_template(const std::string& name) {
  for (const std::string& path : {pagoda::testing::data_path("chat_templates/" + name),
                                  pagoda::testing::data_path("reference/chat_templates/" + name)}) {
    std::ifstream file(path);
    if (!file) continue;
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
  }
  return {};
}

constexpr const char* kQwenTemplate = "Qwen-Qwen2.5-7B-Instruct.jinja";
constexpr const char* kLlamaTemplate = "meta-llama-Llama-3.2-3B-Instruct.jinja";

// A Mistral-style template (tools in [AVAILABLE_TOOLS] before the last user turn, calls
// after [TOOL_CALLS], results in [TOOL_RESULTS]), enough for the family's rendering.
constexpr const char* kMistralTemplate =
    "{{- bos_token }}"
    "{%- for message in messages %}"
    "{%- if message.role == 'user' %}"
    "{%- if tools and loop.last %}[AVAILABLE_TOOLS]{{ tools | tojson }}[/AVAILABLE_TOOLS]{% endif %}"
    "[INST]{{ message.content }}[/INST]"
    "{%- elif message.role == 'assistant' and message.tool_calls %}"
    "[TOOL_CALLS][{%- for call in message.tool_calls %}"
    "{\"name\": \"{{ call.function.name }}\", \"arguments\": {{ call.function.arguments | tojson }}}"
    "{{- ', ' if not loop.last }}{%- endfor %}]{{ eos_token }}"
    "{%- elif message.role == 'assistant' %}{{ message.content }}{{ eos_token }}"
    "{%- elif message.role == 'tool' %}[TOOL_RESULTS]{\"content\": {{ message.content | tojson }}}[/TOOL_RESULTS]"
    "{%- endif %}"
    "{%- endfor %}";

}  // namespace pagoda::server::tools::testing
