#include "gguf/value.h"

#include <gtest/gtest.h>

#include <limits>

namespace pagoda::gguf {
namespace {

TEST(ValueType, NamesAndIdsFollowTheFileNumbering) {
  EXPECT_EQ(value_type_name(ValueType::UINT8), "uint8");
  EXPECT_EQ(value_type_name(ValueType::FLOAT32), "float32");
  EXPECT_EQ(value_type_name(ValueType::STRING), "string");
  EXPECT_EQ(value_type_name(ValueType::ARRAY), "array");
  EXPECT_EQ(value_type_name(ValueType::FLOAT64), "float64");
  EXPECT_EQ(value_type_name(static_cast<ValueType>(13)), "invalid");
  EXPECT_EQ(value_type_from_id(12), ValueType::FLOAT64);
  EXPECT_EQ(value_type_from_id(13), std::nullopt);
  EXPECT_EQ(value_type_size(ValueType::BOOL), 1u);
  EXPECT_EQ(value_type_size(ValueType::INT64), 8u);
  EXPECT_EQ(value_type_size(ValueType::STRING), 0u);
}

TEST(ValueType, OfEachCppType) {
  static_assert(value_type_of<uint8_t>() == ValueType::UINT8);
  static_assert(value_type_of<int8_t>() == ValueType::INT8);
  static_assert(value_type_of<uint16_t>() == ValueType::UINT16);
  static_assert(value_type_of<int16_t>() == ValueType::INT16);
  static_assert(value_type_of<uint32_t>() == ValueType::UINT32);
  static_assert(value_type_of<int32_t>() == ValueType::INT32);
  static_assert(value_type_of<float>() == ValueType::FLOAT32);
  static_assert(value_type_of<bool>() == ValueType::BOOL);
  static_assert(value_type_of<std::string>() == ValueType::STRING);
  static_assert(value_type_of<Array>() == ValueType::ARRAY);
  static_assert(value_type_of<uint64_t>() == ValueType::UINT64);
  static_assert(value_type_of<int64_t>() == ValueType::INT64);
  static_assert(value_type_of<double>() == ValueType::FLOAT64);
  static_assert(!is_value_alternative<long double>);
  EXPECT_EQ(Value{uint16_t{7}}.type(), ValueType::UINT16);
  EXPECT_EQ(Value{std::string("x")}.type(), ValueType::STRING);
}

TEST(Value, DescribeType) {
  EXPECT_EQ(describe_type(Value{3.0}), "float64");
  EXPECT_EQ(describe_type(make_array(std::vector<int32_t>{1})), "array of int32");
  EXPECT_EQ(describe_type(make_array(std::vector<std::string>{})), "array of string");
  const Value nested{Array{ValueType::ARRAY, {make_array(std::vector<uint8_t>{1})}}};
  EXPECT_EQ(describe_type(nested), "array of array of uint8");
  EXPECT_EQ(describe_type(Value{Array{ValueType::ARRAY, {}}}), "array of array");
}

TEST(Value, DisplaysScalars) {
  EXPECT_EQ(to_display_string(Value{uint8_t{200}}), "200");
  EXPECT_EQ(to_display_string(Value{int8_t{-5}}), "-5");
  EXPECT_EQ(to_display_string(Value{std::numeric_limits<uint64_t>::max()}), "18446744073709551615");
  EXPECT_EQ(to_display_string(Value{std::numeric_limits<int64_t>::min()}), "-9223372036854775808");
  EXPECT_EQ(to_display_string(Value{true}), "true");
  EXPECT_EQ(to_display_string(Value{false}), "false");
  EXPECT_EQ(to_display_string(Value{100000.0f}), "100000");
  EXPECT_EQ(to_display_string(Value{9.99999974738e-06f}), "1e-05");  // the float nearest 1e-5
  EXPECT_EQ(to_display_string(Value{0.1f}), "0.1");
  EXPECT_EQ(to_display_string(Value{-0.25}), "-0.25");
  EXPECT_EQ(to_display_string(Value{1e20}), "1e+20");
  EXPECT_EQ(to_display_string(Value{0.0}), "0");
}

TEST(Value, DisplaysStringsQuotedAndEscaped) {
  EXPECT_EQ(to_display_string(Value{std::string("llama")}), "'llama'");
  EXPECT_EQ(to_display_string(Value{std::string("it's\n\t\\")}), "'it\\'s\\n\\t\\\\'");
  EXPECT_EQ(to_display_string(Value{std::string("\x01\x7f", 2)}), "'\\x01\\x7f'");
  EXPECT_EQ(to_display_string(Value{std::string("\0", 1)}), "'\\x00'");
  // Valid UTF-8 stays as it is; invalid bytes are escaped one by one.
  EXPECT_EQ(to_display_string(Value{std::string("Ġt ▁é 🙂")}), "'Ġt ▁é 🙂'");
  EXPECT_EQ(to_display_string(Value{std::string("a\xff\xc3")}), "'a\\xff\\xc3'");
  EXPECT_EQ(quoted("\xe0\x80\x80"), "'\\xe0\\x80\\x80'");           // overlong
  EXPECT_EQ(quoted("\xed\xa0\x80"), "'\\xed\\xa0\\x80'");           // surrogate
  EXPECT_EQ(quoted("\xf4\x90\x80\x80"), "'\\xf4\\x90\\x80\\x80'");  // past U+10FFFF
}

TEST(Value, CutsLongStringsAtACharacterBoundary) {
  EXPECT_EQ(quoted("abcdefgh", 5), "'abcde'... (8 bytes)");
  EXPECT_EQ(quoted("abcde", 5), "'abcde'");
  // "é" is two bytes: the cut keeps whole characters, so it may run past max_bytes.
  EXPECT_EQ(quoted("aéb", 2), "'aé'... (4 bytes)");
}

TEST(Value, DisplaysArraysAbbreviated) {
  const Value tokens = make_array(std::vector<std::string>{"<unk>", "<s>", "</s>", "a"});
  EXPECT_EQ(to_display_string(tokens, 2), "[array of 4 string] ['<unk>', '<s>', ...]");
  EXPECT_EQ(to_display_string(tokens, 4), "[array of 4 string] ['<unk>', '<s>', '</s>', 'a']");
  EXPECT_EQ(to_display_string(tokens, 0), "[array of 4 string] [...]");
  EXPECT_EQ(to_display_string(make_array(std::vector<int32_t>{})), "[array of 0 int32] []");
  const Value nested{Array{ValueType::ARRAY,
                           {make_array(std::vector<bool>{true}), make_array(std::vector<bool>{})}}};
  EXPECT_EQ(to_display_string(nested),
            "[array of 2 array] [[array of 1 bool] [true], [array of 0 bool] []]");
}

TEST(Value, ComparesDeeply) {
  EXPECT_EQ(make_array(std::vector<float>{1, 2}), make_array(std::vector<float>{1, 2}));
  EXPECT_NE(make_array(std::vector<float>{1, 2}), make_array(std::vector<float>{1, 3}));
  EXPECT_NE(make_array(std::vector<float>{}), make_array(std::vector<double>{}));
  EXPECT_NE(Value{uint32_t{1}}, Value{int32_t{1}});
}

}  // namespace
}  // namespace pagoda::gguf
