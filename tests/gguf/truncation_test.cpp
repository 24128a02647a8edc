// Every prefix of a valid file that cuts into it is refused with one line naming the file, and no
// single corrupted byte makes the reader crash or hand out data outside the file.
#include <gtest/gtest.h>

#include <algorithm>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "gguf_test_util.h"

namespace pagoda::gguf {
namespace {

// A file that exercises every part of the format: scalars, strings, nested arrays,
// tensors with padding between them.
std::vector<uint8_t> rich_file() {
  Writer writer;
  EXPECT_TRUE(writer.set_string("general.architecture", "llama").ok());
  EXPECT_TRUE(writer.set("u8", Value{uint8_t{1}}).ok());
  EXPECT_TRUE(writer.set("i16", Value{int16_t{-2}}).ok());
  EXPECT_TRUE(writer.set_f32("f32", 0.5f).ok());
  EXPECT_TRUE(writer.set("f64", Value{0.25}).ok());
  EXPECT_TRUE(writer.set_bool("flag", true).ok());
  EXPECT_TRUE(writer.set_string_array("tokens", {"<s>", "", "abc"}).ok());
  EXPECT_TRUE(
      writer.set("nested", Value{Array{ValueType::ARRAY, {make_array(std::vector<int64_t>{7, 8})}}})
          .ok());
  EXPECT_TRUE(writer.set_u32("general.alignment", 16).ok());
  EXPECT_TRUE(writer.add_tensor("w", DType::F16, {3, 2}, testing::bytes_of(12)).ok());
  EXPECT_TRUE(writer.add_tensor("q", DType::Q4_0, {32}, testing::bytes_of(18)).ok());
  return writer.serialize();
}

// Reads everything a reader hands out, so a sanitizer sees any bad pointer.
uint64_t touch_everything(const Reader& reader) {
  uint64_t sum = 0;
  for (const auto& [key, value] : reader.metadata()) {
    sum += to_display_string(value).size() + key.size();
  }
  for (const TensorInfo& tensor : reader.tensors()) {
    EXPECT_GE(tensor.data, reader.bytes().data());
    EXPECT_LE(tensor.data + tensor.n_bytes, reader.bytes().data() + reader.bytes().size());
    if (tensor.n_bytes > 0) sum += tensor.data[0] + tensor.data[tensor.n_bytes - 1];
  }
  return sum;
}

// The bytes a file needs: up to the end of its last tensor's data (the padding after it
// is not needed).
size_t needed_size(const std::vector<uint8_t>& file) {
  const Expected<Reader> reader = Reader::parse(file, "full.gguf");
  EXPECT_TRUE(reader.ok());
  size_t end = reader->data_offset();
  for (const TensorInfo& tensor : reader->tensors()) {
    end = std::max<size_t>(end, reader->data_offset() + tensor.offset + tensor.n_bytes);
  }
  return end;
}

TEST(Truncation, EveryPrefixShortOfTheDataIsRefused) {
  const std::vector<uint8_t> full = rich_file();
  const size_t needed = needed_size(full);
  ASSERT_EQ(needed, full.size() - 14);  // 'q' takes 18 bytes, padded to 32
  for (size_t size = needed; size <= full.size(); ++size) {
    EXPECT_EQ(
        testing::parse_message({full.begin(), full.begin() + static_cast<std::ptrdiff_t>(size)}),
        "ok");
  }
  for (size_t size = 0; size < needed; ++size) {
    // A copy of exactly `size` bytes, so reading past it is an error a sanitizer reports.
    const std::vector<uint8_t> prefix(full.begin(),
                                      full.begin() + static_cast<std::ptrdiff_t>(size));
    const Expected<Reader> reader = Reader::parse(prefix, "cut.gguf");
    ASSERT_FALSE(reader.ok()) << "a prefix of " << size << " bytes parsed";
    const std::string& message = reader.status().message();
    EXPECT_EQ(message.rfind("cut.gguf: ", 0), 0u) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_EQ(reader.status().code(), ErrorCode::kCorruptFile) << message;
  }
}

TEST(Truncation, EverySingleByteCorruptionIsSafe) {
  const std::vector<uint8_t> full = rich_file();
  size_t refused = 0;
  for (size_t pos = 0; pos < full.size(); ++pos) {
    for (const uint8_t flip : {0x01, 0x80, 0xff}) {
      std::vector<uint8_t> bytes = full;
      bytes[pos] ^= flip;
      const Expected<Reader> reader = Reader::parse(bytes, "flip.gguf");
      if (reader.ok()) {
        touch_everything(*reader);
      } else {
        ++refused;
        EXPECT_EQ(reader.status().message().rfind("flip.gguf: ", 0), 0u);
        EXPECT_EQ(reader.status().message().find('\n'), std::string::npos);
      }
    }
  }
  // Most of the file is structure, so most corruptions must be caught.
  EXPECT_GT(refused, full.size());
}

}  // namespace
}  // namespace pagoda::gguf
