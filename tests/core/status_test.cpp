#include "core/status.h"

#include <gtest/gtest.h>

#include <string>

#include "core/dtype.h"

namespace pagoda {
namespace {

Expected<int> parse_positive(int v) {
  if (v <= 0) return invalid_argument("not positive: " + std::to_string(v));
  return v;
}

Expected<int> doubled(int v) {
  PAGODA_ASSIGN_OR_RETURN(int x, parse_positive(v));
  return 2 * x;
}

TEST(Status, ExpectedCarriesValueOrError) {
  Expected<int> good = doubled(4);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 8);
  Expected<int> bad = doubled(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "not positive: -1");
}

// An error of another type than Status, as the server's ApiResult (Expected<T, ApiError>)
// carries.
struct TestError {
  int code = 0;
};

TEST(Status, ExpectedCarriesAnotherErrorType) {
  Expected<std::string, TestError> good = std::string("yes");
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, "yes");
  Expected<std::string, TestError> bad = TestError{7};
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, 7);
  EXPECT_EQ(std::move(bad).error().code, 7);
}

TEST(DType, TraitsMatchTheFileFormat) {
  EXPECT_EQ(row_bytes(DType::Q4_K, 512), 288);
  EXPECT_EQ(row_bytes(DType::Q8_0, 64), 68);
  EXPECT_EQ(row_bytes(DType::F16, 3), 6);
  EXPECT_EQ(dtype_name(DType::Q6_K), "q6_K");
  EXPECT_EQ(dtype_from_name("Q4_k"), DType::Q4_K);
  EXPECT_FALSE(dtype_traits(4).has_value());  // ids 4 and 5 were removed from the format
  EXPECT_FALSE(dtype_traits(1000).has_value());
  EXPECT_EQ(dtype_traits(30)->name, "bf16");
}

}  // namespace
}  // namespace pagoda
