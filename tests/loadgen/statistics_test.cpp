#include "loadgen/statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace pagoda::loadgen {
namespace {

TEST(Statistics, SummaryOfUnsortedSampleMatchesHandComputedValues) {
  // Sorted: 1 1 2 3 4 5 6 9. Mean 31/8; squared deviations sum to 52.875.
  const Summary s = summarize({3, 1, 4, 1, 5, 9, 2, 6});
  EXPECT_EQ(s.count, 8u);
  EXPECT_DOUBLE_EQ(s.mean, 3.875);
  EXPECT_DOUBLE_EQ(s.std, std::sqrt(52.875 / 8));
  EXPECT_DOUBLE_EQ(s.p50, 3.5);   // rank 3.5: halfway between 3 and 4
  EXPECT_DOUBLE_EQ(s.p90, 6.9);   // rank 6.3: 6 + 0.3 * (9 - 6)
  EXPECT_DOUBLE_EQ(s.p99, 8.79);  // rank 6.93: 6 + 0.93 * (9 - 6)
}

TEST(Statistics, OneToTen) {
  const Summary s = summarize({10, 9, 8, 7, 6, 5, 4, 3, 2, 1});
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_DOUBLE_EQ(s.std, std::sqrt(8.25));
  EXPECT_DOUBLE_EQ(s.p50, 5.5);
  EXPECT_DOUBLE_EQ(s.p90, 9.1);
  EXPECT_DOUBLE_EQ(s.p99, 9.91);
}

TEST(Statistics, SingleValueAndEmptySample) {
  const Summary one = summarize({42.0});
  EXPECT_EQ(one.count, 1u);
  EXPECT_DOUBLE_EQ(one.mean, 42.0);
  EXPECT_DOUBLE_EQ(one.std, 0.0);
  EXPECT_DOUBLE_EQ(one.p50, 42.0);
  EXPECT_DOUBLE_EQ(one.p99, 42.0);

  const Summary none = summarize({});
  EXPECT_EQ(none.count, 0u);
  EXPECT_DOUBLE_EQ(none.mean, 0.0);
  EXPECT_DOUBLE_EQ(none.p99, 0.0);
}

TEST(Statistics, PercentileEndsAndClamping) {
  const std::vector<double> sorted = {10, 20, 30};
  EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, 0), 10);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, 100), 30);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, 25), 15);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, 150), 30);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, -5), 10);
  EXPECT_DOUBLE_EQ(percentile_of_sorted({}, 50), 0);
}

}  // namespace
}  // namespace pagoda::loadgen
