#pragma once
// The model's output -> OpenAI's message content and tool calls, for a family's syntax:
// whole (parse_tool_calls) or as it streams (ToolCallStreamParser, which emits OpenAI's
// tool-call deltas). Text that is not a call - before, between or after calls, or a
// call that does not parse - is content: nothing the model wrote is dropped, except the
// whitespace (and Llama's ';') between calls.
//
// Arguments are the JSON text of the call's arguments as the model wrote it (OpenAI's
// `function.arguments` is a string); arguments written as a JSON string are its value.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/tools/tool_call_syntax.h"
#include "server/tools/tool_family.h"

namespace pagoda::server::tools {

// "call_" + 24 random letters and digits.
std::string random_tool_call_id();
using ToolCallIdSource = std::function<std::string()>;

struct ToolCall {
  std::string id;         // "call_..."
  std::string name;       // function.name
  std::string arguments;  // function.arguments: JSON text
};

struct ParsedOutput {
  std::string content;          // the text that is not calls ("" when none)
  std::vector<ToolCall> calls;  // in the order written
};

// One piece of a streamed call, as delta.tool_calls[0] shows it: the first piece of
// call `index` has its id and name and empty arguments; later pieces only arguments.
struct ToolCallDelta {
  int index = 0;
  std::string id;    // first piece only
  std::string name;  // first piece only
  std::string arguments;
  bool first() const { return !id.empty(); }
};

// What one fed piece of text turns into, in order: content first, then call pieces.
// (Content after a call comes in a later delta: a delta never holds content that
// follows its calls.)
struct StreamDelta {
  std::string content;
  std::vector<ToolCallDelta> calls;
  bool empty() const { return content.empty() && calls.empty(); }
};

class ToolCallStreamParser {
 public:
  // `incremental`: emit a call's pieces as its text arrives (streams); otherwise only
  // once its block is complete (whole responses: a cut-off call stays content).
  explicit ToolCallStreamParser(ToolFamily family, bool incremental = true,
                                ToolCallIdSource make_id = random_tool_call_id);

  // Text that may be the start of a call's syntax is held back until it is clear.
  // `out` gets what the text amounts to so far; several deltas when content follows
  // a call.
  void feed(std::string_view text, std::vector<StreamDelta>& out);
  // No more text: what was held back is content (or the end of a call).
  void finish(std::vector<StreamDelta>& out);

  int calls_made() const { return calls_made_; }  // calls started so far

 private:
  void process(bool final, std::vector<StreamDelta>& out);
  // Text mode: content up to the next opening; returns false when it must wait.
  bool process_text(bool final, std::vector<StreamDelta>& out);
  // Block mode: the block's calls so far; returns false when it must wait.
  bool process_block(bool final, std::vector<StreamDelta>& out);
  void emit_calls(const BlockScan& block, std::vector<StreamDelta>& out);
  void emit_content(std::string text, std::vector<StreamDelta>& out);

  struct EmittedCall {
    std::string arguments;  // the arguments' text sent so far
  };

  ToolFamily family_;
  bool incremental_;
  ToolCallIdSource make_id_;
  std::string pending_;    // text not yet sent
  bool in_block_ = false;  // pending_ starts with an opening
  size_t opening_size_ = 0;
  std::vector<EmittedCall> block_calls_;  // the current block's calls sent so far
  int calls_made_ = 0;                    // calls of earlier blocks and this one
  int block_first_index_ = 0;             // index of the block's first call
  bool after_call_ = false;  // separators after a call are held (dropped before a call or
                             // at the end)
};

// The whole output at once (what a stream with incremental = false amounts to).
ParsedOutput parse_tool_calls(ToolFamily family, std::string_view text,
                              const ToolCallIdSource& make_id = random_tool_call_id);

}  // namespace pagoda::server::tools
