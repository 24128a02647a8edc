#include "tokenizer/tokenizer_test_util.h"

namespace pagoda::tokenizer::testing {

bool is_valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const auto b = [&](size_t k) { return static_cast<uint8_t>(text[i + k]); };
    size_t n = 0;
    uint8_t lo = 0x80, hi = 0xBF;
    if (b(0) < 0x80) {
      n = 1;
    } else if (b(0) >= 0xC2 && b(0) <= 0xDF) {
      n = 2;
    } else if (b(0) >= 0xE0 && b(0) <= 0xEF) {
      n = 3;
      lo = b(0) == 0xE0 ? 0xA0 : 0x80;
      hi = b(0) == 0xED ? 0x9F : 0xBF;
    } else if (b(0) >= 0xF0 && b(0) <= 0xF4) {
      n = 4;
      lo = b(0) == 0xF0 ? 0x90 : 0x80;
      hi = b(0) == 0xF4 ? 0x8F : 0xBF;
    } else {
      return false;
    }
    if (i + n > text.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      const uint8_t c = b(k);
      if (k == 1 ? (c < lo || c > hi) : (c & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

std::string stream_decode(const Tokenizer& tokenizer, const std::vector<TokenId>& ids, const DecodeOptions& options) {
  StreamingDetokenizer stream(tokenizer, options);
  std::string text;
  for (TokenId id : ids) {
    const std::string part = stream.push(id);
    EXPECT_TRUE(is_valid_utf8(part)) << "push(" << id << ") returned invalid UTF-8";
    text += part;
  }
  const std::string tail = stream.finish();
  EXPECT_TRUE(is_valid_utf8(tail)) << "finish() returned invalid UTF-8";
  return text + tail;
}

}  // namespace pagoda::tokenizer::testing
