#pragma once
// Helpers for the gguf tests: a small valid file built by the Writer, and ways to find
// and overwrite its fields so each test can break exactly one thing.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"

namespace pagoda::gguf::testing {

// Overwrites `width` bytes at `pos` with `value`, little-endian.
inline void put_le(std::vector<uint8_t>& bytes, size_t pos, uint64_t value, size_t width) {
  ASSERT_LE(pos + width, bytes.size());
  for (size_t i = 0; i < width; ++i) bytes[pos + i] = static_cast<uint8_t>(value >> (8 * i));
}
inline void put_u32(std::vector<uint8_t>& bytes, size_t pos, uint32_t value) {
  put_le(bytes, pos, value, 4);
}
inline void put_u64(std::vector<uint8_t>& bytes, size_t pos, uint64_t value) {
  put_le(bytes, pos, value, 8);
}

inline uint64_t get_u64(const std::vector<uint8_t>& bytes, size_t pos) {
  uint64_t value = 0;
  for (size_t i = 0; i < 8; ++i) value |= uint64_t{bytes.at(pos + i)} << (8 * i);
  return value;
}

// Offset of the first occurrence of `text` in `bytes`; fails the test if there is none.
inline size_t find_text(const std::vector<uint8_t>& bytes, std::string_view text) {
  const std::string_view all(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const size_t pos = all.find(text);
  EXPECT_NE(pos, std::string_view::npos) << "'" << text << "' not in the file";
  return pos == std::string_view::npos ? 0 : pos;
}

// Where a key's or tensor name's fields lie: the string's text starts at `text`, its
// uint64 length 8 bytes before, and the field after it at `after`.
struct Field {
  size_t length_prefix;
  size_t text;
  size_t after;
};
inline Field find_field(const std::vector<uint8_t>& bytes, std::string_view text) {
  const size_t pos = find_text(bytes, text);
  return {pos - 8, pos, pos + text.size()};
}

// What Reader::parse says about `bytes`: "ok" or the error message.
inline std::string parse_message(const std::vector<uint8_t>& bytes, std::string name = "bad.gguf") {
  const Expected<Reader> reader = Reader::parse(bytes, std::move(name));
  return reader.ok() ? "ok" : reader.status().message();
}

// n bytes counting up from `first` (so misplaced data shows).
inline std::vector<uint8_t> bytes_of(size_t n, uint8_t first = 0) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(first + i);
  return bytes;
}

// A small valid file: four keys (string, uint32, float32 array, string array) and two
// tensors, 'a.weight' f32 [4, 2] (32 bytes at offset 0) and 'b.weight' q8_0 [32]
// (34 bytes at offset 32).
inline std::vector<uint8_t> small_file() {
  Writer writer;
  EXPECT_TRUE(writer.set_string("general.architecture", "llama").ok());
  EXPECT_TRUE(writer.set_u32("llama.block_count", 5).ok());
  EXPECT_TRUE(writer.set_array<float>("tokenizer.ggml.scores", {0.5f, -1.0f}).ok());
  EXPECT_TRUE(writer.set_string_array("tokenizer.ggml.tokens", {"a", "bc"}).ok());
  EXPECT_TRUE(writer.add_tensor("a.weight", DType::F32, {4, 2}, bytes_of(32, 1)).ok());
  EXPECT_TRUE(writer.add_tensor("b.weight", DType::Q8_0, {32}, bytes_of(34, 100)).ok());
  return writer.serialize();
}

}  // namespace pagoda::gguf::testing
