#include "core/unicode.h"

#include <memory>

namespace pagoda {
namespace {

// One flags byte per code point (1.1 MB), expanded once from the generated ranges so
// that the splitters' per-character lookups are a single load.
const uint8_t* flag_table() {
  static const std::unique_ptr<uint8_t[]> table = [] {
    auto flags = std::make_unique<uint8_t[]>(kMaxCodepoint + 1);
    using unicode_data::kCodepointRanges;
    for (size_t i = 0; i < unicode_data::kCodepointRangeCount; ++i) {
      const uint32_t end = i + 1 < unicode_data::kCodepointRangeCount
                               ? kCodepointRanges[i + 1].first
                               : kMaxCodepoint + 1;
      for (uint32_t cpt = kCodepointRanges[i].first; cpt < end; ++cpt) {
        flags[cpt] = kCodepointRanges[i].flags;
      }
    }
    return flags;
  }();
  return table.get();
}

bool is_continuation(uint8_t byte) { return (byte & 0xC0) == 0x80; }

}  // namespace

CodepointFlags codepoint_flags(uint32_t cpt) {
  if (cpt > kMaxCodepoint) return CodepointFlags{static_cast<uint8_t>(Category::kUndefined)};
  return CodepointFlags{flag_table()[cpt]};
}

uint32_t decode_utf8(std::string_view text, size_t& offset) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[offset + i]); };
  const size_t left = text.size() - offset;
  const uint8_t lead = byte(0);
  size_t length = 0;
  uint32_t cpt = 0;
  if (lead < 0x80) {
    length = 1;
    cpt = lead;
  } else if ((lead & 0xE0) == 0xC0) {
    length = 2;
    cpt = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    cpt = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    cpt = lead & 0x07;
  }
  bool valid = length != 0 && length <= left;
  for (size_t i = 1; valid && i < length; ++i) {
    valid = is_continuation(byte(i));
    cpt = (cpt << 6) | (byte(i) & 0x3F);
  }
  if (!valid || cpt > kMaxCodepoint) {
    offset += 1;
    return kReplacementCharacter;
  }
  offset += length;
  return cpt;
}

std::vector<uint32_t> decode_utf8(std::string_view text) {
  std::vector<uint32_t> cpts;
  cpts.reserve(text.size());
  size_t offset = 0;
  while (offset < text.size()) cpts.push_back(decode_utf8(text, offset));
  return cpts;
}

void append_utf8(std::string& out, uint32_t cpt) {
  if (cpt > kMaxCodepoint) cpt = kReplacementCharacter;
  if (cpt < 0x80) {
    out.push_back(static_cast<char>(cpt));
  } else if (cpt < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cpt >> 6)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else if (cpt < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cpt >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cpt >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  }
}

int utf8_validate_one(std::string_view text) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(0);
  if (lead < 0x80) return 1;
  // Allowed range of the second byte (Unicode Table 3-7); later bytes are 80..BF.
  int length = 0;
  uint8_t low = 0x80, high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return -1;
  }
  for (int i = 1; i < length; ++i) {
    if (static_cast<size_t>(i) >= text.size()) return kUtf8Incomplete;
    const uint8_t b = byte(i);
    const bool ok = i == 1 ? (b >= low && b <= high) : is_continuation(b);
    if (!ok) return -i;
  }
  return length;
}

}  // namespace pagoda
