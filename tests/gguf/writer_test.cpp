// The writer's encoding, byte for byte as the GGUF format defines it, and its refusals.
#include "gguf/writer.h"

#include <gtest/gtest.h>

#include "gguf_test_util.h"

namespace pagoda::gguf {
namespace {

TEST(Writer, EncodesAKeyAsTheFormatDefines) {
  Writer writer;
  ASSERT_TRUE(writer.set_u32("ab", 0x01020304).ok());
  const std::vector<uint8_t> expected = {
      'G', 'G', 'U', 'F',              // magic
      3,   0,   0,   0,                // version
      0,   0,   0,   0,   0, 0, 0, 0,  // tensor count
      1,   0,   0,   0,   0, 0, 0, 0,  // metadata count
      2,   0,   0,   0,   0, 0, 0, 0,  // key length
      'a', 'b',                        // key
      4,   0,   0,   0,                // type: uint32
      4,   3,   2,   1,                // value, little-endian
  };
  EXPECT_EQ(writer.serialize(), expected);
}

TEST(Writer, EncodesArraysStringsAndBools) {
  Writer writer;
  ASSERT_TRUE(
      writer.set("s", Value{Array{ValueType::ARRAY, {make_array(std::vector<std::string>{"x"})}}})
          .ok());
  ASSERT_TRUE(writer.set_bool("b", true).ok());
  const std::vector<uint8_t> bytes = writer.serialize();
  const std::vector<uint8_t> expected_tail = {
      1, 0, 0, 0, 0, 0, 0, 0, 's',  // key "s"
      9, 0, 0, 0,                   // type: array
      9, 0, 0, 0,                   // of arrays
      1, 0, 0, 0, 0, 0, 0, 0,       // one item:
      8, 0, 0, 0,                   //   an array of strings
      1, 0, 0, 0, 0, 0, 0, 0,       //   with one item:
      1, 0, 0, 0, 0, 0, 0, 0, 'x',  //     "x"
      1, 0, 0, 0, 0, 0, 0, 0, 'b',  // key "b"
      7, 0, 0, 0,                   // type: bool
      1,                            // true
  };
  ASSERT_EQ(bytes.size(), 24 + expected_tail.size());
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin() + 24, bytes.end()), expected_tail);
}

TEST(Writer, EncodesTensorInfosAndPadsTheData) {
  Writer writer;
  ASSERT_TRUE(writer.add_tensor("t", DType::Q8_0, {32, 1}, testing::bytes_of(34, 1)).ok());
  ASSERT_TRUE(writer.add_tensor("u", DType::F16, {1}, testing::bytes_of(2, 200)).ok());
  const std::vector<uint8_t> bytes = writer.serialize();
  const std::vector<uint8_t> first_info = {
      1,  0, 0, 0, 0, 0, 0, 0, 't',                       // name
      2,  0, 0, 0,                                        // n_dims
      32, 0, 0, 0, 0, 0, 0, 0, 1,   0, 0, 0, 0, 0, 0, 0,  // ne[0], ne[1]
      8,  0, 0, 0,                                        // type q8_0
      0,  0, 0, 0, 0, 0, 0, 0,                            // offset
  };
  ASSERT_GT(bytes.size(), 24 + first_info.size());
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin() + 24, bytes.begin() + 24 + first_info.size()),
            first_info);
  // The second tensor starts at the next multiple of 32: offset 64.
  EXPECT_EQ(testing::get_u64(bytes, 24 + first_info.size() + 9 + 4 + 8 + 4), 64u);
  // Infos end at 102; data at 128; 't' fills 34 bytes, zeros to 192, then 'u', zeros to 224.
  ASSERT_EQ(bytes.size(), 224u);
  EXPECT_EQ(bytes[128], 1);
  EXPECT_EQ(bytes[128 + 33], 34);
  EXPECT_EQ(bytes[128 + 34], 0);
  EXPECT_EQ(bytes[192], 200);
  EXPECT_EQ(bytes[193], 201);
  EXPECT_EQ(bytes[194], 0);
}

TEST(Writer, RefusesWhatNoReaderAccepts) {
  Writer writer;
  EXPECT_EQ(writer.set_u32("", 1).message(), "gguf writer: empty key");
  const Value mixed{Array{ValueType::UINT32, {Value{uint32_t{1}}, Value{1.0f}}}};
  EXPECT_EQ(writer.set("mixed", mixed).message(),
            "gguf writer: key 'mixed' item 1 has type float32, not the array's uint32");
  const auto data = testing::bytes_of(16);
  EXPECT_EQ(writer.add_tensor("t", DType::F32, {3}, data).message(),
            "gguf writer: tensor 't' has 16 bytes of data, its type and shape take 12");
  EXPECT_EQ(writer.add_tensor("t", DType::Q4_0, {16}, data).message(),
            "gguf writer: tensor 't' rows are not whole blocks of q4_0");
  EXPECT_EQ(writer.add_tensor("t", DType::F32, {1, 1, 1, 1, 4}, data).message(),
            "gguf writer: tensor 't' has more than 4 dimensions");
  EXPECT_EQ(writer.add_tensor("t", DType::F32, {-4}, data).message(),
            "gguf writer: tensor 't' has a negative dimension or too many elements");
  EXPECT_EQ(writer.add_tensor("t", static_cast<DType>(4), {4}, data).message(),
            "gguf writer: tensor 't' has unknown type id 4");
  ASSERT_TRUE(writer.add_tensor("t", DType::F32, {4}, data).ok());
  EXPECT_EQ(writer.add_tensor("t", DType::F32, {4}, data).message(),
            "gguf writer: tensor 't' is already added");
}

TEST(Writer, LaysOutWithDefaultAlignmentWhenTheKeyIsUnusable) {
  // A broken general.alignment is written as given (so tests can build such files), but
  // the layout uses the default.
  Writer writer;
  ASSERT_TRUE(writer.set_u32("general.alignment", 48).ok());
  EXPECT_EQ(writer.alignment(), 32u);
  ASSERT_TRUE(writer.set_i32("general.alignment", 64).ok());
  EXPECT_EQ(writer.alignment(), 32u);
  ASSERT_TRUE(writer.set_u32("general.alignment", 64).ok());
  EXPECT_EQ(writer.alignment(), 64u);
}

TEST(Writer, WriteFileReportsAnUnwritablePath) {
  Writer writer;
  const Status status = writer.write_file("/nonexistent/dir/out.gguf");
  EXPECT_EQ(status.code(), ErrorCode::kIo);
  EXPECT_EQ(status.message(),
            "/nonexistent/dir/out.gguf.tmp: cannot create: No such file or directory");
}

}  // namespace
}  // namespace pagoda::gguf
