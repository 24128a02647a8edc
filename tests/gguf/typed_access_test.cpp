// Reader::get / get_or / get_int / get_array: strict on type, with exact messages.
#include <gtest/gtest.h>

#include <limits>

#include "gguf/reader.h"
#include "gguf/writer.h"

namespace pagoda::gguf {
namespace {

class TypedAccess : public ::testing::Test {
 protected:
  void SetUp() override {
    Writer writer;
    ASSERT_TRUE(writer.set_u32("llama.block_count", 5).ok());
    ASSERT_TRUE(writer.set_f32("llama.rope.freq_base", 10000.0f).ok());
    ASSERT_TRUE(writer.set_string("general.architecture", "llama").ok());
    ASSERT_TRUE(writer.set_bool("tokenizer.ggml.add_bos_token", true).ok());
    ASSERT_TRUE(writer.set("i8", Value{int8_t{-3}}).ok());
    ASSERT_TRUE(writer.set_i32("i32", -70000).ok());
    ASSERT_TRUE(writer.set_u64("u64.small", 1ull << 40).ok());
    ASSERT_TRUE(writer.set_u64("u64.big", 1ull << 63).ok());
    ASSERT_TRUE(writer.set("i64", Value{std::numeric_limits<int64_t>::min()}).ok());
    ASSERT_TRUE(writer.set_array<float>("tokenizer.ggml.scores", {0.25f, -2.0f}).ok());
    ASSERT_TRUE(writer.set_array<bool>("flags", {true, false}).ok());
    ASSERT_TRUE(writer.set_string_array("tokenizer.ggml.tokens", {"<s>", "</s>", "é"}).ok());
    ASSERT_TRUE(
        writer.set("nested", Value{Array{ValueType::ARRAY, {make_array(std::vector<uint8_t>{1})}}})
            .ok());
    bytes_ = writer.serialize();
    Expected<Reader> reader = Reader::parse(bytes_, "model.gguf");
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    reader_ = std::move(reader).value();
  }

  std::vector<uint8_t> bytes_;
  Reader reader_;
};

TEST_F(TypedAccess, GetReturnsTheValueOfTheRightType) {
  EXPECT_EQ(*reader_.get<uint32_t>("llama.block_count"), 5u);
  EXPECT_EQ(*reader_.get<float>("llama.rope.freq_base"), 10000.0f);
  EXPECT_EQ(*reader_.get<std::string>("general.architecture"), "llama");
  EXPECT_EQ(*reader_.get<bool>("tokenizer.ggml.add_bos_token"), true);
  EXPECT_EQ(*reader_.get<int8_t>("i8"), -3);
  EXPECT_EQ(reader_.get<Array>("tokenizer.ggml.scores")->items.size(), 2u);
  EXPECT_TRUE(reader_.has("i32"));
  EXPECT_FALSE(reader_.has("llama.context_length"));
}

TEST_F(TypedAccess, GetIsStrictOnType) {
  const Expected<uint32_t> wrong = reader_.get<uint32_t>("llama.rope.freq_base");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(),
            "model.gguf: key 'llama.rope.freq_base' has type float32, expected uint32");
  EXPECT_EQ(reader_.get<int32_t>("llama.block_count").status().message(),
            "model.gguf: key 'llama.block_count' has type uint32, expected int32");
  EXPECT_EQ(reader_.get<std::string>("tokenizer.ggml.tokens").status().message(),
            "model.gguf: key 'tokenizer.ggml.tokens' has type array of string, expected string");
}

TEST_F(TypedAccess, GetReportsAMissingKey) {
  const Expected<uint32_t> missing = reader_.get<uint32_t>("llama.context_length");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "model.gguf: key 'llama.context_length' not found");
  EXPECT_EQ(reader_.find("llama.context_length"), nullptr);
}

TEST_F(TypedAccess, GetOrFallsBackWhenMissingOrOfAnotherType) {
  EXPECT_EQ(reader_.get_or<uint32_t>("llama.block_count", 7), 5u);
  EXPECT_EQ(reader_.get_or<uint32_t>("llama.context_length", 2048), 2048u);
  EXPECT_EQ(reader_.get_or<uint32_t>("llama.rope.freq_base", 1), 1u);
  EXPECT_EQ(reader_.get_or<std::string>("general.name", "unnamed"), "unnamed");
}

TEST_F(TypedAccess, GetIntTakesAnyIntegerType) {
  EXPECT_EQ(*reader_.get_int("llama.block_count"), 5);
  EXPECT_EQ(*reader_.get_int("i8"), -3);
  EXPECT_EQ(*reader_.get_int("i32"), -70000);
  EXPECT_EQ(*reader_.get_int("u64.small"), 1ll << 40);
  EXPECT_EQ(*reader_.get_int("i64"), std::numeric_limits<int64_t>::min());
}

TEST_F(TypedAccess, GetIntRefusesOtherTypesAndOutOfRangeValues) {
  EXPECT_EQ(reader_.get_int("u64.big").status().message(),
            "model.gguf: key 'u64.big' value 9223372036854775808 does not fit in int64");
  EXPECT_EQ(reader_.get_int("llama.rope.freq_base").status().message(),
            "model.gguf: key 'llama.rope.freq_base' has type float32, expected an integer");
  EXPECT_EQ(reader_.get_int("tokenizer.ggml.add_bos_token").status().message(),
            "model.gguf: key 'tokenizer.ggml.add_bos_token' has type bool, expected an integer");
  EXPECT_EQ(reader_.get_int("absent").status().message(), "model.gguf: key 'absent' not found");
}

TEST_F(TypedAccess, GetArrayOfScalarsAndStrings) {
  EXPECT_EQ(*reader_.get_array<float>("tokenizer.ggml.scores"), (std::vector<float>{0.25f, -2.0f}));
  EXPECT_EQ(*reader_.get_array<bool>("flags"), (std::vector<bool>{true, false}));
  EXPECT_EQ(*reader_.get_array<std::string>("tokenizer.ggml.tokens"),
            (std::vector<std::string>{"<s>", "</s>", "é"}));
}

TEST_F(TypedAccess, GetArrayIsStrictOnElementType) {
  EXPECT_EQ(
      reader_.get_array<int32_t>("tokenizer.ggml.scores").status().message(),
      "model.gguf: key 'tokenizer.ggml.scores' has type array of float32, expected array of int32");
  EXPECT_EQ(reader_.get_array<float>("llama.block_count").status().message(),
            "model.gguf: key 'llama.block_count' has type uint32, expected array of float32");
  EXPECT_EQ(reader_.get_array<uint8_t>("nested").status().message(),
            "model.gguf: key 'nested' has type array of array of uint8, expected array of uint8");
  EXPECT_EQ(reader_.get_array<std::string>("absent").status().message(),
            "model.gguf: key 'absent' not found");
}

TEST_F(TypedAccess, KeysInMessagesAreEscapedToOneLine) {
  EXPECT_EQ(reader_.get<uint32_t>("bad\nkey").status().message(),
            "model.gguf: key 'bad\\nkey' not found");
}

}  // namespace
}  // namespace pagoda::gguf
