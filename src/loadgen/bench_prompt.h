#pragma once
// One request of a benchmark run, as the prompt source made it.

#include <cstdint>
#include <string>

namespace pagoda::loadgen {

struct BenchPrompt {
  std::string text;           // the prompt (a completion prompt, or the user message for chat)
  int32_t max_tokens = 0;     // tokens to generate (sent with ignore_eos)
  int32_t prompt_tokens = 0;  // its length in tokens as known before sending (measured or
                              // estimated); the server's usage count replaces it
};

// Where token counts made before the run came from.
enum class TokenCountSource {
  kTokenizeEndpoint,  // measured through the server's POST /tokenize
  kEstimate,          // estimated without the server's tokenizer
};
const char* token_count_source_name(TokenCountSource source);  // "tokenize" | "estimate"

}  // namespace pagoda::loadgen
