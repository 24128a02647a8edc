#pragma once
// The tokenizer of a random model: copied from another GGUF file, or made up.

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/reader.h"
#include "gguf/writer.h"

namespace pagoda::tools {

// The vocabulary size of a GGUF file's tokenizer: the length of tokenizer.ggml.tokens.
Expected<int32_t> tokenizer_vocab_size(const gguf::Reader& file);

// Copies every tokenizer.* key of `from`.
Status copy_tokenizer(const gguf::Reader& from, gguf::Writer& to);

// A SentencePiece vocabulary with byte fallback: <unk>, <s>, </s>, the 256 byte tokens,
// the space piece, then made-up word pieces up to n_vocab tokens (n_vocab >= 260). It encodes and
// decodes any text, which is all a model of random weights needs. `control_tokens` take
// the last ids, typed control (a family's markers such as [TOOL_CALLS], as real
// vocabularies hold them).
Status write_byte_vocab(gguf::Writer& to, int32_t n_vocab,
                        const std::vector<std::string>& control_tokens = {});

constexpr int32_t kMinByteVocab = 3 + 256 + 1;

}  // namespace pagoda::tools
