#include "server/config/serve_config_values.h"

#include <gtest/gtest.h>

namespace pagoda::server {
namespace {

TEST(ServeConfigValues, Integers) {
  EXPECT_EQ(*parse_integer("0", 0, 10), 0);
  EXPECT_EQ(*parse_integer("-5", -10, 10), -5);
  EXPECT_EQ(*parse_integer("9223372036854775807", 0, INT64_MAX), INT64_MAX);
  EXPECT_EQ(parse_integer("", 0, 10).status().message(), "'' is not an integer");
  EXPECT_EQ(parse_integer("1.5", 0, 10).status().message(), "'1.5' is not an integer");
  EXPECT_EQ(parse_integer(" 1", 0, 10).status().message(), "' 1' is not an integer");
  EXPECT_EQ(parse_integer("+1", 0, 10).status().message(), "'+1' is not an integer");
  EXPECT_EQ(parse_integer("11", 0, 10).status().message(), "11 is out of range 0..10");
  EXPECT_EQ(parse_integer("99999999999999999999", 0, 10).status().message(),
            "'99999999999999999999' is out of range 0..10");
}

TEST(ServeConfigValues, Numbers) {
  EXPECT_EQ(*parse_number("0.9"), 0.9);
  EXPECT_EQ(*parse_number("1"), 1.0);
  EXPECT_EQ(*parse_number("1e-3"), 1e-3);
  for (const char* bad : {"", "x", "0.9 ", " 1", "1,5", "inf", "nan"}) {
    EXPECT_EQ(parse_number(bad).status().message(), "'" + std::string(bad) + "' is not a number") << bad;
  }
}

TEST(ServeConfigValues, ByteSizes) {
  EXPECT_EQ(*parse_byte_size("0"), 0u);
  EXPECT_EQ(*parse_byte_size("8388608"), 8388608u);
  EXPECT_EQ(*parse_byte_size("512MiB"), 512ull << 20);
  EXPECT_EQ(*parse_byte_size("4GiB"), 4ull << 30);
  EXPECT_EQ(*parse_byte_size("4gib"), 4ull << 30);
  EXPECT_EQ(*parse_byte_size("4G"), 4ull << 30);
  EXPECT_EQ(*parse_byte_size("4GB"), 4000000000ull);
  EXPECT_EQ(*parse_byte_size("64 KB"), 64000u);
  EXPECT_EQ(*parse_byte_size("1.5GiB"), 3ull << 29);
  EXPECT_EQ(*parse_byte_size("2TiB"), 2ull << 40);
  EXPECT_EQ(*parse_byte_size("100B"), 100u);
  EXPECT_EQ(*parse_byte_size("1.9"), 1u);  // rounded down
  for (const char* bad : {"", "GiB", "-1GiB", "1..5G", ".5G", "4 XB", "4GiBs", "1e9"}) {
    EXPECT_FALSE(parse_byte_size(bad).ok()) << bad;
  }
  EXPECT_EQ(parse_byte_size("16777216TiB").status().message(), "'16777216TiB' is too large (at most 16 EiB)");
}

TEST(ServeConfigValues, Booleans) {
  for (const char* yes : {"true", "TRUE", "1", "yes", "On"}) EXPECT_TRUE(*parse_bool(yes)) << yes;
  for (const char* no : {"false", "0", "No", "off"}) EXPECT_FALSE(*parse_bool(no)) << no;
  EXPECT_EQ(parse_bool("2").status().message(), "'2' is not a boolean (true or false)");
}

TEST(ServeConfigValues, ChoicesAndLists) {
  EXPECT_TRUE(check_choice("b", {"a", "b"}).ok());
  EXPECT_EQ(check_choice("B", {"a", "b"}).message(), "'B' is not one of a, b");
  EXPECT_EQ(split_list(" a, b ,,c,"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(split_list(" , ").empty());
  EXPECT_EQ(trim_spaces("\t x y \r\n"), "x y");
}

}  // namespace
}  // namespace pagoda::server
