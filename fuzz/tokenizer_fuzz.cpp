// Encodes arbitrary bytes (invalid UTF-8 included) with special-token parsing on and off,
// then decodes and stream-decodes the result, with the GPT-2 (byte-level BPE) and LLaMA
// (SentencePiece) vocabularies. Also decodes the input read as raw token ids. Nothing
// may crash, every id must be in the vocabulary and streamed text must be valid UTF-8.
//
// The vocabularies are the reference's, committed under tests/data/reference/tokenizer
// (PAGODA_TEST_DATA_DIR, compiled in; the environment variable of that name wins).

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/unicode.h"
#include "gguf/reader.h"
#include "tokenizer/tokenizer.h"

namespace {

using pagoda::tokenizer::DecodeOptions;
using pagoda::tokenizer::StreamingDetokenizer;
using pagoda::tokenizer::TokenId;
using pagoda::tokenizer::Tokenizer;

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "tokenizer_fuzz: %s\n", message.c_str());
  std::abort();
}

Tokenizer load(const std::string& name) {
  const char* data = std::getenv("PAGODA_TEST_DATA_DIR");
  const std::string path = std::string(data != nullptr ? data : PAGODA_TEST_DATA_DIR) +
                           "/reference/tokenizer/ggml-vocab-" + name + ".gguf";
  auto reader = pagoda::gguf::Reader::open(path);
  if (!reader.ok()) fail(reader.status().message());
  auto tokenizer = Tokenizer::from_gguf(*reader);
  if (!tokenizer.ok()) fail(tokenizer.status().message());
  return std::move(tokenizer).value();
}

bool valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const int n = pagoda::utf8_validate_one(text.substr(i));
    if (n <= 0) return false;
    i += static_cast<size_t>(n);
  }
  return true;
}

std::string stream(const Tokenizer& tokenizer, const std::vector<TokenId>& ids, DecodeOptions options) {
  StreamingDetokenizer detokenizer(tokenizer, options);
  std::string text;
  for (TokenId id : ids) text += detokenizer.push(id);
  text += detokenizer.finish();
  if (!valid_utf8(text)) fail("streamed text is not valid UTF-8");
  return text;
}

void check(const Tokenizer& tokenizer, std::string_view text, bool parse_special) {
  const std::vector<TokenId> ids = tokenizer.encode(text, /*add_special=*/true, parse_special);
  for (TokenId id : ids) {
    if (id < 0 || id >= tokenizer.n_vocab()) fail("encode produced id " + std::to_string(id));
  }
  for (const bool special : {false, true}) {
    DecodeOptions options;
    options.special = special;
    const std::string whole = tokenizer.decode(ids, options);
    const std::string streamed = stream(tokenizer, ids, options);
    if (valid_utf8(whole) && streamed != whole) fail("streamed text differs from decode()");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Tokenizer gpt2 = load("gpt-2");
  static const Tokenizer llama = load("llama-spm");
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const Tokenizer* tokenizer : {&gpt2, &llama}) {
    check(*tokenizer, text, /*parse_special=*/false);
    check(*tokenizer, text, /*parse_special=*/true);
    // The same bytes as token ids, in range or not.
    std::vector<TokenId> ids(size / sizeof(TokenId));
    if (!ids.empty()) std::memcpy(ids.data(), data, ids.size() * sizeof(TokenId));
    (void)tokenizer->decode(ids);
    stream(*tokenizer, ids, {});
  }
  return 0;
}
