#include "tokenizer/byte_alphabet.h"

#include <array>
#include <string>

#include "core/unicode.h"

namespace pagoda::tokenizer {
namespace {

struct ByteAlphabet {
  std::array<std::string, 256> utf8;         // byte -> UTF-8 of its stand-in code point
  std::array<int16_t, 512> byte_of_cpt{};    // stand-in code point -> byte, -1 if none

  ByteAlphabet() {
    byte_of_cpt.fill(-1);
    auto printable = [](int byte) {
      return (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE);
    };
    uint32_t next_stand_in = 256;
    for (int byte = 0; byte < 256; ++byte) {
      const uint32_t cpt = printable(byte) ? static_cast<uint32_t>(byte) : next_stand_in++;
      append_utf8(utf8[byte], cpt);
      byte_of_cpt[cpt] = static_cast<int16_t>(byte);
    }
  }
};

const ByteAlphabet& byte_alphabet() {
  static const ByteAlphabet alphabet;
  return alphabet;
}

}  // namespace

std::string_view byte_to_unicode_utf8(uint8_t byte) { return byte_alphabet().utf8[byte]; }

std::optional<uint8_t> unicode_to_byte(uint32_t cpt) {
  if (cpt >= byte_alphabet().byte_of_cpt.size()) return std::nullopt;
  const int16_t byte = byte_alphabet().byte_of_cpt[cpt];
  if (byte < 0) return std::nullopt;
  return static_cast<uint8_t>(byte);
}

}  // namespace pagoda::tokenizer
