// The writer's files read back exactly, for every value type, nested arrays, tensors of
// several types and shapes, and alignments other than 32.
#include <gtest/gtest.h>

#include <cstdio>
#include <limits>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "gguf_test_util.h"

namespace pagoda::gguf {
namespace {

using testing::bytes_of;

// One key per value type, with values at the edges of their ranges.
std::vector<std::pair<std::string, Value>> every_value_type() {
  return {
      {"t.u8", Value{uint8_t{255}}},
      {"t.i8", Value{int8_t{-128}}},
      {"t.u16", Value{uint16_t{65535}}},
      {"t.i16", Value{int16_t{-32768}}},
      {"t.u32", Value{uint32_t{4294967295u}}},
      {"t.i32", Value{int32_t{-2147483647 - 1}}},
      {"t.f32", Value{-1.5e-30f}},
      {"t.bool_true", Value{true}},
      {"t.bool_false", Value{false}},
      {"t.string", Value{std::string("héllo\n\0world", 13)}},
      {"t.empty_string", Value{std::string()}},
      {"t.u64", Value{std::numeric_limits<uint64_t>::max()}},
      {"t.i64", Value{std::numeric_limits<int64_t>::min()}},
      {"t.f64", Value{3.141592653589793}},
      {"t.array_u8", make_array(std::vector<uint8_t>{0, 1, 255})},
      {"t.array_i8", make_array(std::vector<int8_t>{-1, 2})},
      {"t.array_u16", make_array(std::vector<uint16_t>{7})},
      {"t.array_i16", make_array(std::vector<int16_t>{-7, 8})},
      {"t.array_u32", make_array(std::vector<uint32_t>{1, 2, 3})},
      {"t.array_i32", make_array(std::vector<int32_t>{-1, 0, 1})},
      {"t.array_f32", make_array(std::vector<float>{0.5f, -0.0f, 1e30f})},
      {"t.array_bool", make_array(std::vector<bool>{true, false, true})},
      {"t.array_string", make_array(std::vector<std::string>{"a", "", "ccc"})},
      {"t.array_u64", make_array(std::vector<uint64_t>{1ull << 40})},
      {"t.array_i64", make_array(std::vector<int64_t>{-(1ll << 40)})},
      {"t.array_f64", make_array(std::vector<double>{1e-300})},
      {"t.array_empty", make_array(std::vector<float>{})},
      {"t.array_nested",
       Value{
           Array{ValueType::ARRAY,
                 {make_array(std::vector<int32_t>{1, 2}), make_array(std::vector<std::string>{"x"}),
                  Value{Array{ValueType::ARRAY, {make_array(std::vector<double>{2.5})}}}}}}},
  };
}

TEST(RoundTrip, EveryValueTypeReadsBackInOrder) {
  Writer writer;
  const auto expected = every_value_type();
  for (const auto& [key, value] : expected) ASSERT_TRUE(writer.set(key, value).ok()) << key;
  const std::vector<uint8_t> bytes = writer.serialize();
  const Expected<Reader> reader = Reader::parse(bytes, "mem.gguf");
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  EXPECT_EQ(reader->version(), 3u);
  EXPECT_EQ(reader->name(), "mem.gguf");
  ASSERT_EQ(reader->metadata().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(reader->metadata()[i].first, expected[i].first);
    EXPECT_EQ(reader->metadata()[i].second, expected[i].second) << expected[i].first;
    ASSERT_NE(reader->find(expected[i].first), nullptr);
    EXPECT_EQ(*reader->find(expected[i].first), expected[i].second);
  }
  EXPECT_TRUE(reader->tensors().empty());
  // Without tensors there is no data section and no padding, as in ggml's vocab files.
  EXPECT_EQ(reader->data_offset(), bytes.size());
}

TEST(RoundTrip, SetReplacesAKeyInPlace) {
  Writer writer;
  ASSERT_TRUE(writer.set_u32("a", 1).ok());
  ASSERT_TRUE(writer.set_u32("b", 2).ok());
  ASSERT_TRUE(writer.set_string("a", "now a string").ok());
  const std::vector<uint8_t> bytes = writer.serialize();
  const Expected<Reader> reader = Reader::parse(bytes, "mem.gguf");
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  ASSERT_EQ(reader->metadata().size(), 2u);
  EXPECT_EQ(reader->metadata()[0].first, "a");
  EXPECT_EQ(reader->metadata()[0].second, Value{std::string("now a string")});
}

TEST(RoundTrip, NestedArraysUpToTheDepthLimit) {
  Value value = make_array(std::vector<uint8_t>{42});
  for (int depth = 1; depth < kMaxArrayDepth; ++depth) {
    value = Value{Array{ValueType::ARRAY, {value}}};
  }
  Writer writer;
  ASSERT_TRUE(writer.set("deep", value).ok());
  const std::vector<uint8_t> bytes = writer.serialize();
  const Expected<Reader> reader = Reader::parse(bytes, "mem.gguf");
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  EXPECT_EQ(*reader->find("deep"), value);
  // One level more is refused by the writer (and by the reader: see corrupt_file_test).
  EXPECT_EQ(writer.set("deeper", Value{Array{ValueType::ARRAY, {value}}}).message(),
            "gguf writer: key 'deeper' nests arrays deeper than 8 levels");
}

struct TensorCase {
  std::string name;
  DType type;
  std::vector<int64_t> shape;
  size_t n_bytes;
};

void expect_tensors_round_trip(const std::vector<TensorCase>& cases, uint32_t alignment) {
  Writer writer;
  if (alignment != kDefaultAlignment) {
    ASSERT_TRUE(writer.set_u32("general.alignment", alignment).ok());
  }
  ASSERT_EQ(writer.alignment(), alignment);
  for (size_t i = 0; i < cases.size(); ++i) {
    const TensorCase& c = cases[i];
    ASSERT_TRUE(
        writer.add_tensor(c.name, c.type, c.shape, bytes_of(c.n_bytes, uint8_t(i * 16))).ok())
        << c.name;
  }
  const std::vector<uint8_t> bytes = writer.serialize();
  const Expected<Reader> reader = Reader::parse(bytes, "mem.gguf");
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  EXPECT_EQ(reader->alignment(), alignment);
  EXPECT_EQ(reader->data_offset() % alignment, 0u);
  ASSERT_EQ(reader->tensors().size(), cases.size());
  uint64_t expected_offset = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const TensorCase& c = cases[i];
    const TensorInfo& t = reader->tensors()[i];
    EXPECT_EQ(t.name, c.name);
    EXPECT_EQ(t.type, c.type);
    EXPECT_EQ(t.shape, c.shape);
    EXPECT_EQ(t.n_bytes, c.n_bytes);
    EXPECT_EQ(t.offset, expected_offset) << c.name;
    EXPECT_EQ(t.data, bytes.data() + reader->data_offset() + t.offset);
    const std::vector<uint8_t> data(t.bytes().begin(), t.bytes().end());
    EXPECT_EQ(data, bytes_of(c.n_bytes, uint8_t(i * 16))) << c.name;
    EXPECT_EQ(reader->find_tensor(c.name), &t);
    expected_offset += (c.n_bytes + alignment - 1) / alignment * alignment;
  }
  EXPECT_EQ(reader->find_tensor("missing"), nullptr);
  EXPECT_EQ(bytes.size(),
            reader->data_offset() + expected_offset);  // the last tensor is padded too
}

const std::vector<TensorCase> kTensorCases = {
    {"token_embd.weight", DType::F32, {8, 3}, 8 * 3 * 4},
    {"norm", DType::F16, {5}, 10},
    {"scalar", DType::F32, {}, 4},
    {"q8", DType::Q8_0, {64, 2}, 2 * 2 * 34},
    {"q4k", DType::Q4_K, {256, 1, 2}, 2 * 144},
    {"four_d", DType::BF16, {2, 3, 4, 5}, 2 * 3 * 4 * 5 * 2},
    {"empty", DType::F32, {4, 0}, 0},
    {"after_empty", DType::I8, {3}, 3},
    {"iq4", DType::IQ4_NL, {32}, 18},
};

TEST(RoundTrip, TensorsOfSeveralTypesAndShapes) {
  expect_tensors_round_trip(kTensorCases, 32);
}
TEST(RoundTrip, TensorsWithAlignment64) {
  expect_tensors_round_trip(kTensorCases, 64);
}
TEST(RoundTrip, TensorsWithAlignment1) {
  expect_tensors_round_trip(kTensorCases, 1);
}
TEST(RoundTrip, TensorsWithAlignment4096) {
  expect_tensors_round_trip(kTensorCases, 4096);
}

TEST(RoundTrip, TensorHelpers) {
  TensorInfo t;
  t.shape = {64, 3, 2};
  EXPECT_EQ(t.n_elements(), 384);
  EXPECT_EQ(t.rows(), 6);
  t.shape = {};
  EXPECT_EQ(t.n_elements(), 1);
  EXPECT_EQ(t.rows(), 1);
}

TEST(RoundTrip, Version2ReadsLikeVersion3) {
  Writer writer;
  writer.set_version(2);
  ASSERT_TRUE(writer.set_u32("k", 9).ok());
  const std::vector<uint8_t> bytes = writer.serialize();
  const Expected<Reader> reader = Reader::parse(bytes, "v2.gguf");
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  EXPECT_EQ(reader->version(), 2u);
  EXPECT_EQ(*reader->get<uint32_t>("k"), 9u);
}

TEST(RoundTrip, ThroughAFile) {
  const std::string path = ::testing::TempDir() + "/pagoda_gguf_round_trip.gguf";
  Writer writer;
  ASSERT_TRUE(writer.set_string("general.architecture", "llama").ok());
  ASSERT_TRUE(writer.add_tensor("w", DType::F32, {2}, bytes_of(8, 7)).ok());
  ASSERT_TRUE(writer.write_file(path).ok());
  {
    const Expected<Reader> reader = Reader::open(path);
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    EXPECT_EQ(reader->name(), path);
    EXPECT_EQ(*reader->get<std::string>("general.architecture"), "llama");
    const std::vector<uint8_t> from_file(reader->bytes().begin(), reader->bytes().end());
    EXPECT_EQ(from_file, writer.serialize());
    // A copy shares the mapping, so its tensors stay valid after the original is gone.
    Reader copy = *reader;
    EXPECT_EQ(copy.find_tensor("w")->data[0], 7);
  }
  std::remove(path.c_str());
}

TEST(RoundTrip, OpenReportsAMissingFile) {
  const Expected<Reader> reader = Reader::open("/nonexistent/model.gguf");
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), ErrorCode::kIo);
  EXPECT_EQ(reader.status().message(),
            "/nonexistent/model.gguf: cannot open: No such file or directory");
}

TEST(RoundTrip, EmptyFileIsCutShort) {
  EXPECT_EQ(testing::parse_message({}),
            "bad.gguf: cut short: the magic at offset 0 needs 4 bytes, only 0 remain");
}

}  // namespace
}  // namespace pagoda::gguf
