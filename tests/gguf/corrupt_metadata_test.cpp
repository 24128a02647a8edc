// Broken headers and metadata, each built from a valid file with one thing changed,
// give one exact line naming the file and the problem.
#include <gtest/gtest.h>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "gguf_test_util.h"

namespace pagoda::gguf {
namespace {

using testing::find_field;
using testing::parse_message;
using testing::put_u32;
using testing::put_u64;

// small_file() byte layout, which the offsets in the messages below come from:
//   0 header | 24 'general.architecture' = 'llama' | 69 'llama.block_count' = 5 |
//   102 'tokenizer.ggml.scores' = [0.5, -1] | 155 'tokenizer.ggml.tokens' = ['a', 'bc'] |
//   219 tensor infos | 320 data ('a.weight' 32 bytes, 'b.weight' 34 bytes) | 416 end
class CorruptMetadata : public ::testing::Test {
 protected:
  void SetUp() override {
    bytes_ = testing::small_file();
    ASSERT_EQ(bytes_.size(), 416u);
    ASSERT_EQ(parse_message(bytes_), "ok");
  }
  std::vector<uint8_t> bytes_;
};

TEST_F(CorruptMetadata, BadMagic) {
  bytes_[0] = 'X';
  EXPECT_EQ(parse_message(bytes_), "bad.gguf: not a GGUF file (magic 'XGUF', expected 'GGUF')");
  const std::vector<uint8_t> elf = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
  EXPECT_EQ(parse_message(elf), "bad.gguf: not a GGUF file (magic '\\x7fELF', expected 'GGUF')");
}

TEST_F(CorruptMetadata, UnsupportedVersions) {
  const auto message_for_version = [&](uint32_t version) {
    put_u32(bytes_, 4, version);
    const Expected<Reader> reader = Reader::parse(bytes_, "bad.gguf");
    EXPECT_EQ(reader.status().code(), ErrorCode::kUnsupported);
    return reader.status().message();
  };
  EXPECT_EQ(message_for_version(1), "bad.gguf: unsupported version 1");
  EXPECT_EQ(message_for_version(0), "bad.gguf: unsupported version 0");
  EXPECT_EQ(message_for_version(4), "bad.gguf: unsupported version 4");
  EXPECT_EQ(message_for_version(0x03000000),
            "bad.gguf: unsupported version 50331648 (a big-endian file?)");
  put_u32(bytes_, 4, 2);
  EXPECT_EQ(parse_message(bytes_), "ok");
}

TEST_F(CorruptMetadata, CutShortInTheHeader) {
  EXPECT_EQ(parse_message({bytes_.begin(), bytes_.begin() + 2}),
            "bad.gguf: cut short: the magic at offset 0 needs 4 bytes, only 2 remain");
  EXPECT_EQ(parse_message({bytes_.begin(), bytes_.begin() + 6}),
            "bad.gguf: cut short: the version at offset 4 needs 4 bytes, only 2 remain");
  EXPECT_EQ(parse_message({bytes_.begin(), bytes_.begin() + 15}),
            "bad.gguf: cut short: the tensor count at offset 8 needs 8 bytes, only 7 remain");
  EXPECT_EQ(parse_message({bytes_.begin(), bytes_.begin() + 20}),
            "bad.gguf: cut short: the metadata count at offset 16 needs 8 bytes, only 4 remain");
}

TEST_F(CorruptMetadata, CutShortInAValue) {
  EXPECT_EQ(parse_message({bytes_.begin(), bytes_.begin() + 100}),
            "bad.gguf: cut short: the value of key 'llama.block_count' at offset 98 needs 4 bytes, "
            "only 2 remain");
  EXPECT_EQ(parse_message({bytes_.begin(), bytes_.begin() + 216}),
            "bad.gguf: cut short: an item of key 'tokenizer.ggml.tokens' at offset 209 needs 8 "
            "bytes, only 7 remain");
  EXPECT_EQ(parse_message({bytes_.begin(), bytes_.begin() + 133}),
            "bad.gguf: cut short: the type of key 'tokenizer.ggml.scores' at offset 131 needs 4 "
            "bytes, only 2 remain");
  EXPECT_EQ(parse_message({bytes_.begin(), bytes_.begin() + 140}),
            "bad.gguf: cut short: the array length of key 'tokenizer.ggml.scores' at offset 139 "
            "needs 8 bytes, "
            "only 1 remain");
}

TEST_F(CorruptMetadata, MetadataCountBeyondTheFile) {
  put_u64(bytes_, 16, 1000000000);
  EXPECT_EQ(parse_message(bytes_),
            "bad.gguf: header claims 1000000000 metadata entries, more than the 392 remaining "
            "bytes can hold");
  put_u64(bytes_, 16, ~uint64_t{0});
  EXPECT_EQ(parse_message(bytes_),
            "bad.gguf: header claims 18446744073709551615 metadata entries, more than the 392 "
            "remaining bytes can "
            "hold");
}

TEST_F(CorruptMetadata, StringLengthsBeyondTheFile) {
  put_u64(bytes_, find_field(bytes_, "general.architecture").length_prefix, uint64_t{1} << 40);
  EXPECT_EQ(parse_message(bytes_),
            "bad.gguf: cut short: key #0 at offset 24 needs 1099511627784 bytes, only 392 remain");

  bytes_ = testing::small_file();
  put_u64(bytes_, 56, ~uint64_t{0});  // the length of 'llama'
  EXPECT_EQ(parse_message(bytes_),
            "bad.gguf: cut short: the value of key 'general.architecture' at offset 56 needs "
            "18446744073709551615 "
            "bytes, only 360 remain");

  bytes_ = testing::small_file();
  put_u64(bytes_, 200, 1000000);  // the length of 'a' in tokenizer.ggml.tokens
  EXPECT_EQ(parse_message(bytes_),
            "bad.gguf: cut short: an item of key 'tokenizer.ggml.tokens' at offset 200 needs "
            "1000008 bytes, only "
            "216 remain");
}

TEST_F(CorruptMetadata, ArrayLengthsBeyondTheFile) {
  const size_t scores_length = find_field(bytes_, "tokenizer.ggml.scores").after + 8;
  put_u64(bytes_, scores_length, uint64_t{1} << 62);
  EXPECT_EQ(parse_message(bytes_),
            "bad.gguf: key 'tokenizer.ggml.scores' claims an array of 4611686018427387904 float32, "
            "more than the "
            "269 remaining bytes can hold");

  bytes_ = testing::small_file();
  const size_t tokens_length = find_field(bytes_, "tokenizer.ggml.tokens").after + 8;
  put_u64(bytes_, tokens_length, 100);  // 100 strings take at least 800 bytes
  EXPECT_EQ(parse_message(bytes_),
            "bad.gguf: key 'tokenizer.ggml.tokens' claims an array of 100 string, more than the "
            "216 remaining "
            "bytes can hold");

  bytes_ = testing::small_file();
  EXPECT_EQ(parse_message({bytes_.begin(), bytes_.begin() + 150}),
            "bad.gguf: key 'tokenizer.ggml.scores' claims an array of 2 float32, more than the 3 "
            "remaining bytes "
            "can hold");
}

// A file whose only key is `levels` arrays, each holding the next, the innermost empty.
std::vector<uint8_t> nested_arrays_file(int levels) {
  std::vector<uint8_t> bytes = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
  const auto put = [&](uint64_t value, int width) {
    for (int i = 0; i < width; ++i) bytes.push_back(static_cast<uint8_t>(value >> (8 * i)));
  };
  put(0, 8);  // tensors
  put(1, 8);  // keys
  put(4, 8);
  for (char c : std::string("deep")) bytes.push_back(static_cast<uint8_t>(c));
  put(9, 4);  // the key's type: array
  for (int level = 1; level < levels; ++level) {
    put(9, 4);  // of arrays
    put(1, 8);  // one of them
  }
  put(0, 4);  // the innermost: uint8
  put(0, 8);  // and empty
  return bytes;
}

TEST_F(CorruptMetadata, ArraysNestedTooDeep) {
  EXPECT_EQ(parse_message(nested_arrays_file(kMaxArrayDepth)), "ok");
  EXPECT_EQ(parse_message(nested_arrays_file(kMaxArrayDepth + 1)),
            "bad.gguf: key 'deep' nests arrays deeper than 8 levels");
  EXPECT_EQ(parse_message(nested_arrays_file(100000)),
            "bad.gguf: key 'deep' nests arrays deeper than 8 levels");
}

// A file whose only key is an array of `length` uint8 zeros.
std::vector<uint8_t> byte_array_file(uint64_t length) {
  Writer writer;
  EXPECT_TRUE(writer.set_array<uint8_t>("bytes", {}).ok());
  std::vector<uint8_t> bytes = writer.serialize();
  put_u64(bytes, bytes.size() - 8, length);
  bytes.resize(bytes.size() + length, 0);
  return bytes;
}

TEST_F(CorruptMetadata, ArrayItemsBeyondTheMemoryBudget) {
  // The bytes are all there: only the budget refuses it (before allocating anything).
  EXPECT_EQ(parse_message(byte_array_file(1000)), "ok");
  EXPECT_EQ(parse_message(byte_array_file(kMaxMetadataArrayItems + 1)),
            "bad.gguf: key 'bytes' claims an array of 16777217 uint8, more than the 16777216 array "
            "items a file's metadata may hold");
}

TEST_F(CorruptMetadata, DuplicateKey) {
  const size_t tokens = find_field(bytes_, "tokenizer.ggml.tokens").text;
  for (size_t i = 0; i < 6; ++i) bytes_[tokens + 15 + i] = static_cast<uint8_t>("scores"[i]);
  EXPECT_EQ(parse_message(bytes_), "bad.gguf: duplicate key 'tokenizer.ggml.scores'");
}

TEST_F(CorruptMetadata, EmptyKey) {
  put_u64(bytes_, find_field(bytes_, "llama.block_count").length_prefix, 0);
  EXPECT_EQ(parse_message(bytes_), "bad.gguf: key #1 is empty");
}

TEST_F(CorruptMetadata, InvalidValueTypes) {
  const size_t type = find_field(bytes_, "llama.block_count").after;
  put_u32(bytes_, type, 13);
  EXPECT_EQ(parse_message(bytes_), "bad.gguf: key 'llama.block_count' has invalid value type 13");
  put_u32(bytes_, type, 0xffffffff);
  EXPECT_EQ(parse_message(bytes_),
            "bad.gguf: key 'llama.block_count' has invalid value type 4294967295");

  bytes_ = testing::small_file();
  put_u32(bytes_, find_field(bytes_, "tokenizer.ggml.scores").after + 4, 13);
  EXPECT_EQ(parse_message(bytes_),
            "bad.gguf: key 'tokenizer.ggml.scores' has invalid array element type 13");
}

TEST_F(CorruptMetadata, KeysInMessagesAreOneLine) {
  bytes_[find_field(bytes_, "llama.block_count").text + 5] = '\n';
  put_u32(bytes_, find_field(bytes_, "llama\nblock_count").after, 13);
  EXPECT_EQ(parse_message(bytes_), "bad.gguf: key 'llama\\nblock_count' has invalid value type 13");
}

std::string message_with_alignment(const Value& alignment) {
  Writer writer;
  EXPECT_TRUE(writer.set("general.alignment", alignment).ok());
  EXPECT_TRUE(writer.add_tensor("t", DType::F32, {1}, testing::bytes_of(4)).ok());
  return parse_message(writer.serialize());
}

TEST_F(CorruptMetadata, Alignment) {
  EXPECT_EQ(message_with_alignment(Value{int32_t{32}}),
            "bad.gguf: key 'general.alignment' has type int32, expected uint32");
  EXPECT_EQ(message_with_alignment(make_array(std::vector<uint32_t>{32})),
            "bad.gguf: key 'general.alignment' has type array of uint32, expected uint32");
  EXPECT_EQ(message_with_alignment(Value{uint32_t{48}}),
            "bad.gguf: general.alignment 48 is not a power of two");
  EXPECT_EQ(message_with_alignment(Value{uint32_t{0}}),
            "bad.gguf: general.alignment 0 is not a power of two");
  EXPECT_EQ(message_with_alignment(Value{uint32_t{8}}), "ok");
}

}  // namespace
}  // namespace pagoda::gguf
