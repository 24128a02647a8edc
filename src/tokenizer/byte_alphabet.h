#pragma once
// The byte-level BPE alphabet: each byte is shown as a printable code point (printable
// Latin-1 bytes as themselves, the others as U+0100 onwards in byte order).

#include <cstdint>
#include <optional>
#include <string_view>

namespace pagoda::tokenizer {

std::string_view byte_to_unicode_utf8(uint8_t byte);
std::optional<uint8_t> unicode_to_byte(uint32_t cpt);

}  // namespace pagoda::tokenizer
