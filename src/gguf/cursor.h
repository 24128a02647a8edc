#pragma once
// Internal to gguf/: a bounds-checked read position over a file's bytes.
// A read that does not fit consumes nothing and records where it was and what it
// needed, for the caller's "cut short" message.

#include <cstdint>
#include <limits>
#include <span>
#include <string_view>

#include "gguf/little_endian.h"

namespace pagoda::gguf {

class Cursor {
 public:
  explicit Cursor(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  uint64_t offset() const { return pos_; }
  uint64_t size() const { return bytes_.size(); }
  uint64_t remaining() const { return bytes_.size() - pos_; }

  // The failed read: its file offset and the bytes it needed there.
  uint64_t failed_offset() const { return failed_offset_; }
  uint64_t failed_needed() const { return failed_needed_; }

  // A little-endian integer or float (read bool as uint8_t: any non-zero byte is true).
  template <LittleEndianScalar T>
  bool read(T& out) {
    if (!fits(sizeof(T))) return false;
    out = load_little_endian<T>(bytes_.data() + pos_);
    pos_ += sizeof(T);
    return true;
  }

  // n raw bytes, viewed in place.
  bool read_bytes(uint64_t n, std::string_view& out) {
    if (!fits(n)) return false;
    out = std::string_view(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return true;
  }

  // A GGUF string: uint64 length, then that many bytes (not NUL-terminated), in place.
  bool read_string(std::string_view& out) {
    const uint64_t start = pos_;
    uint64_t length = 0;
    if (!read(length)) return false;
    if (length > remaining()) {
      pos_ = start;
      failed_offset_ = start;
      constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
      failed_needed_ = length > kMax - sizeof(length) ? kMax : length + sizeof(length);
      return false;
    }
    return read_bytes(length, out);
  }

 private:
  bool fits(uint64_t n) {
    if (n <= remaining()) return true;
    failed_offset_ = pos_;
    failed_needed_ = n;
    return false;
  }

  std::span<const uint8_t> bytes_;
  uint64_t pos_ = 0;
  uint64_t failed_offset_ = 0;
  uint64_t failed_needed_ = 0;
};

}  // namespace pagoda::gguf
