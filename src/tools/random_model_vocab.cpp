#include "tools/random_model_vocab.h"

#include <climits>
#include <cstdio>
#include <string>
#include <vector>

namespace pagoda::tools {
namespace {

// tokenizer.ggml.token_type values.
constexpr int32_t kNormal = 1, kUnknown = 2, kControl = 3, kByte = 6;

// Word piece number i: "▁" (the space, as SentencePiece writes it), then "▁" followed
// by i - 1 written in base 26 with letters ("▁a", "▁b", ..., "▁ba", ...), all distinct.
std::string word_piece(int32_t i) {
  if (i == 0) return "\xe2\x96\x81";
  --i;
  std::string letters;
  do {
    letters.insert(letters.begin(), static_cast<char>('a' + i % 26));
    i /= 26;
  } while (i > 0);
  return "\xe2\x96\x81" + letters;
}

}  // namespace

Expected<int32_t> tokenizer_vocab_size(const gguf::Reader& file) {
  const gguf::Value* tokens = file.find("tokenizer.ggml.tokens");
  if (tokens == nullptr || !tokens->holds<gguf::Array>()) {
    return not_found(file.name() + ": no tokenizer.ggml.tokens array to take the vocabulary from");
  }
  const size_t n = tokens->as<gguf::Array>().items.size();
  if (n == 0 || n > static_cast<size_t>(INT32_MAX)) {
    return corrupt_file(file.name() + ": tokenizer.ggml.tokens has " + std::to_string(n) +
                        " tokens");
  }
  return static_cast<int32_t>(n);
}

Status copy_tokenizer(const gguf::Reader& from, gguf::Writer& to) {
  for (const auto& [key, value] : from.metadata()) {
    if (key.starts_with("tokenizer.")) PAGODA_TRY(to.set(key, value));
  }
  return Status::ok_status();
}

Status write_byte_vocab(gguf::Writer& to, int32_t n_vocab,
                        const std::vector<std::string>& control_tokens) {
  const int32_t n_pieces = n_vocab - static_cast<int32_t>(control_tokens.size());
  if (n_pieces < kMinByteVocab) {
    return invalid_argument("the built-in byte vocabulary needs at least " +
                            std::to_string(kMinByteVocab) + " tokens besides its " +
                            std::to_string(control_tokens.size()) + " control tokens, got " +
                            std::to_string(n_vocab) + " in all (or give a tokenizer file)");
  }
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {kUnknown, kControl, kControl};
  for (int byte = 0; byte < 256; ++byte) {
    char text[8];
    std::snprintf(text, sizeof(text), "<0x%02X>", byte);
    tokens.emplace_back(text);
    types.push_back(kByte);
  }
  for (int32_t i = 0; static_cast<int32_t>(tokens.size()) < n_pieces; ++i) {
    tokens.push_back(word_piece(i));
    types.push_back(kNormal);
  }
  for (const std::string& control : control_tokens) {
    tokens.push_back(control);
    types.push_back(kControl);
  }
  // Earlier pieces score higher, so shorter pieces win merges.
  std::vector<float> scores(tokens.size(), 0.0f);
  const size_t first_piece = 3 + 256;
  for (size_t i = first_piece; i < static_cast<size_t>(n_pieces); ++i)
    scores[i] = -static_cast<float>(i - first_piece);
  PAGODA_TRY(to.set_string("tokenizer.ggml.model", "llama"));
  PAGODA_TRY(to.set_string_array("tokenizer.ggml.tokens", tokens));
  PAGODA_TRY(to.set_array("tokenizer.ggml.scores", scores));
  PAGODA_TRY(to.set_array("tokenizer.ggml.token_type", types));
  PAGODA_TRY(to.set_u32("tokenizer.ggml.unknown_token_id", 0));
  PAGODA_TRY(to.set_u32("tokenizer.ggml.bos_token_id", 1));
  PAGODA_TRY(to.set_u32("tokenizer.ggml.eos_token_id", 2));
  PAGODA_TRY(to.set_bool("tokenizer.ggml.add_bos_token", true));
  return to.set_bool("tokenizer.ggml.add_eos_token", false);
}

}  // namespace pagoda::tools
