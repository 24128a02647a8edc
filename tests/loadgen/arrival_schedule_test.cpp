#include "loadgen/arrival_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace pagoda::loadgen {
namespace {

TEST(ArrivalSchedule, ExactSequenceForASeed) {
  // Computed independently: MT19937-64 seeded with 42, u = ((word >> 11) + 1) / 2^53,
  // gap = -ln(u) / 4.
  auto offsets = poisson_arrival_offsets(6, 4.0, 42);
  ASSERT_TRUE(offsets.ok());
  const double expected[] = {0.0,
                             0.07020788675892702,
                             0.1821583107960173,
                             0.25336478268849727,
                             0.7516391261685598,
                             0.7770728539664556};
  ASSERT_EQ(offsets->size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_DOUBLE_EQ((*offsets)[i], expected[i]) << i;
}

TEST(ArrivalSchedule, SameSeedSameScheduleOtherSeedOther) {
  auto a = poisson_arrival_offsets(50, 10.0, 7);
  auto b = poisson_arrival_offsets(50, 10.0, 7);
  auto c = poisson_arrival_offsets(50, 10.0, 8);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_NE(*a, *c);
}

TEST(ArrivalSchedule, MeanRateAndExponentialGapsOverManyDraws) {
  const double rate = 25.0;
  const size_t n = 200001;
  auto offsets = poisson_arrival_offsets(n, rate, 1234);
  ASSERT_TRUE(offsets.ok());
  const double observed_rate = static_cast<double>(n - 1) / offsets->back();
  EXPECT_NEAR(observed_rate, rate, rate * 0.01);
  // Exponential gaps: variance = mean^2, and P(gap > mean) = 1/e.
  double sum = 0, squares = 0;
  size_t above_mean = 0;
  for (size_t i = 1; i < n; ++i) {
    const double gap = (*offsets)[i] - (*offsets)[i - 1];
    ASSERT_GE(gap, 0.0);
    sum += gap;
    squares += gap * gap;
    above_mean += gap > 1.0 / rate ? 1 : 0;
  }
  const double mean = sum / (n - 1);
  const double variance = squares / (n - 1) - mean * mean;
  EXPECT_NEAR(std::sqrt(variance) / mean, 1.0, 0.02);
  EXPECT_NEAR(static_cast<double>(above_mean) / (n - 1), std::exp(-1.0), 0.005);
}

TEST(ArrivalSchedule, InfiniteRateSendsEverythingAtOnce) {
  auto offsets = poisson_arrival_offsets(5, std::numeric_limits<double>::infinity(), 3);
  ASSERT_TRUE(offsets.ok());
  EXPECT_EQ(*offsets, std::vector<double>(5, 0.0));
}

TEST(ArrivalSchedule, RejectsRatesThatAreNotPositive) {
  EXPECT_FALSE(poisson_arrival_offsets(3, 0.0, 1).ok());
  EXPECT_FALSE(poisson_arrival_offsets(3, -2.0, 1).ok());
  EXPECT_FALSE(poisson_arrival_offsets(3, std::nan(""), 1).ok());
}

TEST(ArrivalSchedule, UnitExponentialExtremes) {
  EXPECT_DOUBLE_EQ(unit_exponential(~uint64_t{0}), 0.0);      // u = 1
  EXPECT_DOUBLE_EQ(unit_exponential(0), 53 * std::log(2.0));  // u = 2^-53: finite
}

}  // namespace
}  // namespace pagoda::loadgen
