#include "core/ascii.h"

#include <gtest/gtest.h>

#include <memory>
#include <string_view>

namespace pagoda {
namespace {

// Each string in its own exact-size heap block: a read past either end is a heap
// overflow that the sanitizer build reports (the fuzzer found one in a library iequals).
std::unique_ptr<char[]> exact(std::string_view text) {
  auto block = std::make_unique<char[]>(text.size());
  text.copy(block.get(), text.size());
  return block;
}

TEST(Ascii, EqualsIgnoresCaseOnlyForLetters) {
  EXPECT_TRUE(ascii_iequals("Chunked", "cHUNKED"));
  EXPECT_TRUE(ascii_iequals("", ""));
  EXPECT_FALSE(ascii_iequals("chunked", "chunke"));
  EXPECT_FALSE(ascii_iequals("chunked", "chunkes"));
  EXPECT_FALSE(ascii_iequals("@", "`"));  // 0x40 and 0x60 differ by the case bit but are not letters
  EXPECT_FALSE(ascii_iequals("[", "{"));
  EXPECT_FALSE(ascii_iequals("\xc3\x89", "\xc3\xa9"));  // no case folding outside ASCII
}

TEST(Ascii, EqualsReadsNothingPastEitherString) {
  const auto a = exact("httP");
  const auto b = exact("HTTp");
  EXPECT_TRUE(ascii_iequals({a.get(), 4}, {b.get(), 4}));
  EXPECT_FALSE(ascii_iequals({a.get(), 4}, {b.get(), 3}));
}

TEST(Ascii, StartsWithComparesThePrefixOnly) {
  const auto target = exact("httP://");
  const std::string_view text(target.get(), 7);
  EXPECT_TRUE(ascii_istarts_with(text, "http://"));
  EXPECT_FALSE(ascii_istarts_with(text, "https://"));  // longer than the text
  EXPECT_TRUE(ascii_istarts_with("HTTPS://h/p", "https://"));
  EXPECT_TRUE(ascii_istarts_with("x", ""));
}

TEST(Ascii, ToLowerMapsLettersOnly) {
  EXPECT_EQ(ascii_to_lower("Hello, World! [Z]@"), "hello, world! [z]@");
  EXPECT_EQ(ascii_to_lower(""), "");
}

}  // namespace
}  // namespace pagoda
