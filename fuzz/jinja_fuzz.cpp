// Parses arbitrary bytes as a chat template and renders it against a fixed
// conversation (system / user / assistant with a tool call / tool, and tools), with
// tight render limits. Nothing may crash, hang or leak: a bad template is an error
// value, a runaway one stops at a limit, and output never exceeds its limit.

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "tokenizer/chat_template.h"

namespace {

using Json = nlohmann::ordered_json;

[[noreturn]] void fail(const char* message) {
  std::fprintf(stderr, "jinja_fuzz: %s\n", message);
  std::abort();
}

const Json& conversation() {
  static const Json messages = Json::parse(R"([
    {"role": "system", "content": "You are helpful. \u00e9\u00df\u03a3 \ud83d\ude00"},
    {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
    {"role": "assistant", "content": null, "tool_calls": [
      {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "{\"t\": 21.5}"},
    {"role": "assistant", "content": "Sunny, 21.5 C.\n"},
    {"role": "user", "content": ""}
  ])");
  return messages;
}

const Json& extra() {
  static const Json variables = Json::parse(R"({"bos_token": "<s>", "eos_token": "</s>",
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]})");
  return variables;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  auto tmpl = pagoda::tokenizer::ChatTemplate::parse(source);
  if (!tmpl.ok()) {
    if (tmpl.status().message().empty()) fail("a parse error without a message");
    return 0;
  }
  pagoda::tokenizer::ChatRenderOptions options;
  options.limits.max_steps = 200'000;
  options.limits.max_output_bytes = 1 << 20;
  options.limits.max_call_depth = 32;
  options.now = 1721988000;
  for (const bool prompt : {false, true}) {
    auto text = tmpl->render(conversation(), prompt, extra(), options);
    if (text.ok() && text->size() > options.limits.max_output_bytes) fail("output over the limit");
    if (!text.ok() && text.status().message().empty()) fail("a render error without a message");
  }
  return 0;
}
