// Broken tensor infos and data placement, each built from a valid file with one thing
// changed, give one exact line naming the file, the tensor and the problem.
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

// Where small_file()'s tensor infos keep their fields.
struct TensorFields {
  size_t n_dims;
  size_t dims;  // ne[0], then ne[1]...
  size_t type(size_t n_dims_value) const { return dims + 8 * n_dims_value; }
  size_t offset(size_t n_dims_value) const { return type(n_dims_value) + 4; }
};
TensorFields fields_of(const std::vector<uint8_t>& bytes, std::string_view name) {
  const size_t after = find_field(bytes, name).after;
  return {after, after + 4};
}

// small_file(): tensor infos at 219..307, data section at 320; 'a.weight' f32 [4, 2]
// at data offset 0 (32 bytes), 'b.weight' q8_0 [32] at data offset 32 (34 bytes); the
// file ends, padded, at 416.
class CorruptTensors : public ::testing::Test {
 protected:
  void SetUp() override {
    bytes_ = testing::small_file();
    ASSERT_EQ(bytes_.size(), 416u);
    const Expected<Reader> reader = Reader::parse(bytes_, "bad.gguf");
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    ASSERT_EQ(reader->data_offset(), 320u);
    a_ = fields_of(bytes_, "a.weight");
    b_ = fields_of(bytes_, "b.weight");
  }
  std::vector<uint8_t> bytes_;
  TensorFields a_{}, b_{};
};

TEST_F(CorruptTensors, TensorCountBeyondTheFile) {
  put_u64(bytes_, 8, 1000000000);
  EXPECT_EQ(
      parse_message(bytes_),
      "bad.gguf: header claims 1000000000 tensors, more than the 197 remaining bytes can hold");
}

TEST_F(CorruptTensors, CutShortInATensorInfo) {
  EXPECT_EQ(parse_message({bytes_.begin(), bytes_.begin() + 300}),
            "bad.gguf: cut short: the data offset of tensor 'b.weight' at offset 299 needs 8 "
            "bytes, only 1 remain");
  EXPECT_EQ(parse_message({bytes_.begin(), bytes_.begin() + 290}),
            "bad.gguf: cut short: the shape of tensor 'b.weight' at offset 287 needs 8 bytes, only "
            "3 remain");
  EXPECT_EQ(
      parse_message({bytes_.begin(), bytes_.begin() + 280}),
      "bad.gguf: cut short: the name of tensor #1 at offset 267 needs 16 bytes, only 13 remain");
  // Cut before the infos can even hold the claimed two tensors.
  EXPECT_EQ(parse_message({bytes_.begin(), bytes_.begin() + 262}),
            "bad.gguf: header claims 2 tensors, more than the 43 remaining bytes can hold");
}

TEST_F(CorruptTensors, DuplicateTensorName) {
  bytes_[find_field(bytes_, "b.weight").text] = 'a';
  EXPECT_EQ(parse_message(bytes_), "bad.gguf: duplicate tensor name 'a.weight'");
}

TEST_F(CorruptTensors, TooManyDimensions) {
  put_u32(bytes_, a_.n_dims, 5);
  EXPECT_EQ(parse_message(bytes_), "bad.gguf: tensor 'a.weight' has 5 dimensions, more than 4");
  put_u32(bytes_, a_.n_dims, 0xffffffff);
  EXPECT_EQ(parse_message(bytes_),
            "bad.gguf: tensor 'a.weight' has 4294967295 dimensions, more than 4");
}

TEST_F(CorruptTensors, NegativeDimension) {
  put_u64(bytes_, a_.dims + 8, static_cast<uint64_t>(int64_t{-2}));
  EXPECT_EQ(parse_message(bytes_), "bad.gguf: tensor 'a.weight' dimension 1 is negative (-2)");
}

TEST_F(CorruptTensors, ZeroDimensionIsAnEmptyTensor) {
  put_u64(bytes_, a_.dims + 8, 0);  // a.weight becomes [4, 0]: no bytes, as ggml allows
  const Expected<Reader> reader = Reader::parse(bytes_, "bad.gguf");
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  EXPECT_EQ(reader->find_tensor("a.weight")->n_elements(), 0);
  EXPECT_EQ(reader->find_tensor("a.weight")->n_bytes, 0u);
}

TEST_F(CorruptTensors, ElementCountOverflow) {
  put_u64(bytes_, a_.dims, uint64_t{1} << 32);
  put_u64(bytes_, a_.dims + 8, uint64_t{1} << 32);
  EXPECT_EQ(
      parse_message(bytes_),
      "bad.gguf: tensor 'a.weight' shape [4294967296, 4294967296] has more than 2^63 - 1 elements");
}

TEST_F(CorruptTensors, ByteSizeOverflow) {
  put_u64(bytes_, a_.dims, uint64_t{1} << 62);  // 2^62 f32 values: 2^64 bytes
  put_u64(bytes_, a_.dims + 8, 1);
  EXPECT_EQ(
      parse_message(bytes_),
      "bad.gguf: tensor 'a.weight' shape [4611686018427387904, 1] takes more than 2^64 - 1 bytes");
}

TEST_F(CorruptTensors, RowNotAMultipleOfTheBlockSize) {
  put_u64(bytes_, b_.dims, 33);
  EXPECT_EQ(parse_message(bytes_),
            "bad.gguf: tensor 'b.weight' of type q8_0 has rows of 33 values, not a multiple of the "
            "block size 32");
}

TEST_F(CorruptTensors, UnknownType) {
  put_u32(bytes_, a_.type(2), 4);  // a retired ggml type (Q4_2)
  EXPECT_EQ(parse_message(bytes_), "bad.gguf: tensor 'a.weight' has unknown type id 4");
  put_u32(bytes_, a_.type(2), 1000);
  EXPECT_EQ(parse_message(bytes_), "bad.gguf: tensor 'a.weight' has unknown type id 1000");
}

TEST_F(CorruptTensors, OffsetNotAligned) {
  put_u64(bytes_, b_.offset(1), 33);
  EXPECT_EQ(parse_message(bytes_),
            "bad.gguf: tensor 'b.weight' offset 33 is not a multiple of the alignment 32");
}

TEST_F(CorruptTensors, DataPastTheEndOfTheFile) {
  EXPECT_EQ(parse_message({bytes_.begin(), bytes_.begin() + 380}),
            "bad.gguf: tensor 'b.weight' data [offset 352, 34 bytes] runs past the end of the file "
            "(380 bytes)");
  put_u64(bytes_, b_.offset(1), 64);  // 384 + 34 > 416
  EXPECT_EQ(parse_message(bytes_),
            "bad.gguf: tensor 'b.weight' data [offset 384, 34 bytes] runs past the end of the file "
            "(416 bytes)");
  put_u64(bytes_, b_.offset(1), ~uint64_t{31});  // aligned, and beyond any file
  EXPECT_EQ(parse_message(bytes_),
            "bad.gguf: tensor 'b.weight' data [offset 320 + 18446744073709551584, 34 bytes] runs "
            "past the end of "
            "the file (416 bytes)");
}

TEST_F(CorruptTensors, DataSectionPastTheEndOfTheFile) {
  Writer writer;
  ASSERT_TRUE(writer.add_tensor("e", DType::F32, {0}, {}).ok());
  std::vector<uint8_t> bytes = writer.serialize();
  ASSERT_EQ(bytes.size(), 64u);  // infos end at 57; the (empty) data section starts at 64
  EXPECT_EQ(parse_message(bytes), "ok");
  bytes.resize(57);
  EXPECT_EQ(parse_message(bytes),
            "bad.gguf: cut short: the data section starts at offset 64, past the end of the file "
            "(57 bytes)");
}

TEST_F(CorruptTensors, OverlappingTensors) {
  put_u64(bytes_, b_.offset(1), 0);
  EXPECT_EQ(parse_message(bytes_),
            "bad.gguf: tensors 'a.weight' [offset 320, 32 bytes] and 'b.weight' [offset 320, 34 "
            "bytes] overlap");
  bytes_ = testing::small_file();
  put_u64(bytes_, a_.offset(2), 64);  // a: 384..416, b: 352..386
  EXPECT_EQ(parse_message(bytes_),
            "bad.gguf: tensors 'b.weight' [offset 352, 34 bytes] and 'a.weight' [offset 384, 32 "
            "bytes] overlap");
}

TEST_F(CorruptTensors, TensorsMayLieInAnyOrder) {
  Writer writer;
  ASSERT_TRUE(writer.add_tensor("x", DType::F32, {8}, testing::bytes_of(32, 0)).ok());
  ASSERT_TRUE(writer.add_tensor("y", DType::F32, {8}, testing::bytes_of(32, 100)).ok());
  std::vector<uint8_t> bytes = writer.serialize();
  put_u64(bytes, fields_of(bytes, "x").offset(1), 32);
  put_u64(bytes, fields_of(bytes, "y").offset(1), 0);
  const Expected<Reader> reader = Reader::parse(bytes, "swapped.gguf");
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  EXPECT_EQ(reader->find_tensor("x")->data[0], 100);
  EXPECT_EQ(reader->find_tensor("y")->data[0], 0);
}

TEST_F(CorruptTensors, NamesInMessagesAreOneLine) {
  bytes_[find_field(bytes_, "a.weight").text + 1] = 0x01;
  put_u32(bytes_, a_.n_dims, 7);
  EXPECT_EQ(parse_message(bytes_), "bad.gguf: tensor 'a\\x01weight' has 7 dimensions, more than 4");
}

}  // namespace
}  // namespace pagoda::gguf
