#pragma once
// Reading a family's call syntax from text that may still be growing: a "block" is the
// text from one opening string (<tool_call>, [TOOL_CALLS], <|python_tag|>, ...) to the
// end of the calls it opens. scan_call_block reads as much of a block as the text holds
// and says whether it is complete, may still become complete, or can no longer be one.
// Internal to the tools library (the parsers are built on it).

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/tools/tool_family.h"

namespace pagoda::server::tools {

// The strings that start a block in free text, for `family`.
std::span<const std::string_view> call_openings(ToolFamily family);

// Whether `c` may stand between two blocks (whitespace; ';' for Llama 3).
bool is_call_separator(ToolFamily family, char c);

// One call as far as the text shows it.
struct PartialCall {
  std::string name;
  bool name_done = false;  // the name is complete (its closing quote was read)
  // The arguments' JSON text as written (a string value: its decoded text once complete).
  // While the value is incomplete, everything read of it so far.
  std::string arguments;
  bool arguments_done = false;
};

enum class BlockState {
  kPartial,   // the text so far is the start of a block
  kComplete,  // a whole block: `length` bytes
  kInvalid,   // not a block
};

struct BlockScan {
  BlockState state = BlockState::kPartial;
  size_t length = 0;                   // kComplete: the block's bytes
  std::vector<PartialCall> calls;      // in order; the last may be incomplete
  std::optional<std::string> content;  // kGeneric's {"content": ".."}, when complete
};

// Reads the block at the start of `text` (which starts with one of the openings).
// With `final`, no more text will come: a block that is not complete is kInvalid, except
// one whose calls are all whole and only its closing is missing (the model ended its turn
// there): that one is complete, to the end of the text.
BlockScan scan_call_block(ToolFamily family, std::string_view text, bool final);

}  // namespace pagoda::server::tools
