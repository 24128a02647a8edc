#pragma once
// The vocabulary as the grammar matcher sees it (grammar/vocab_index.h), from a
// tokenizer: built once per model and shared by every grammar compiled for it.

#include <cstdint>
#include <memory>
#include <span>

#include "grammar/vocab_index.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::engine {

// Each token's bytes are the text it adds to the output (token_to_piece without
// special: byte tokens as their byte, SentencePiece's U+2581 as a space, user-defined
// tokens such as "<tool_call>" as their text); control and unknown tokens have none, so
// a grammar never allows them, except `text_tokens`: control tokens given their text
// (tool-call markers such as [TOOL_CALLS], which a grammar writes as text and the
// request's output shows: GrammarConstraint::shown_tokens). The end-of-generation tokens
// are the stop tokens, allowed exactly where the grammar can end.
std::shared_ptr<const grammar::VocabIndex> make_vocab_index(
    const tokenizer::Tokenizer& tokenizer, std::span<const int32_t> text_tokens = {});

}  // namespace pagoda::engine
