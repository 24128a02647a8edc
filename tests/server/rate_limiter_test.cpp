#include "server/service/rate_limiter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace pagoda::server {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const RateLimiter::Clock::time_point kStart{seconds(1000)};

// prefix + i (built by append: GCC 12 warns falsely about "literal" + std::string).
std::string key(std::string prefix, int i) { return prefix.append(std::to_string(i)); }

TEST(RateLimiter, OffWhenZero) {
  RateLimiter limiter(0);
  EXPECT_FALSE(limiter.enabled());
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(limiter.try_acquire("k", kStart).allowed);
  EXPECT_EQ(limiter.tracked_keys(), 0u);
}

TEST(RateLimiter, AllowsAMinutesWorthThenRefillsAtTheRate) {
  RateLimiter limiter(60);  // one token a second, up to 60
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(limiter.try_acquire("k", kStart).allowed) << i;
  RateLimitDecision refused = limiter.try_acquire("k", kStart);
  EXPECT_FALSE(refused.allowed);
  EXPECT_DOUBLE_EQ(refused.retry_after_seconds, 1.0);
  EXPECT_EQ(refused.retry_after_header(), 1);

  refused = limiter.try_acquire("k", kStart + milliseconds(250));
  EXPECT_FALSE(refused.allowed);
  EXPECT_DOUBLE_EQ(refused.retry_after_seconds, 0.75);
  EXPECT_EQ(refused.retry_after_header(), 1);  // rounded up

  EXPECT_TRUE(limiter.try_acquire("k", kStart + seconds(1)).allowed);
  EXPECT_FALSE(limiter.try_acquire("k", kStart + seconds(1)).allowed);
  // Ten seconds later, ten more and no eleventh.
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(limiter.try_acquire("k", kStart + seconds(11)).allowed);
  EXPECT_FALSE(limiter.try_acquire("k", kStart + seconds(11)).allowed);
}

TEST(RateLimiter, RetryAfterRoundsUpWholeSeconds) {
  RateLimiter limiter(6, 1);  // one request every ten seconds, no burst
  EXPECT_TRUE(limiter.try_acquire("k", kStart).allowed);
  const RateLimitDecision refused = limiter.try_acquire("k", kStart + milliseconds(500));
  EXPECT_FALSE(refused.allowed);
  EXPECT_DOUBLE_EQ(refused.retry_after_seconds, 9.5);
  EXPECT_EQ(refused.retry_after_header(), 10);
  EXPECT_TRUE(limiter.try_acquire("k", kStart + seconds(10)).allowed);
  EXPECT_EQ(RateLimitDecision{}.retry_after_header(), 0);
}

TEST(RateLimiter, KeysHaveTheirOwnBuckets) {
  RateLimiter limiter(2);
  EXPECT_TRUE(limiter.try_acquire("a", kStart).allowed);
  EXPECT_TRUE(limiter.try_acquire("a", kStart).allowed);
  EXPECT_FALSE(limiter.try_acquire("a", kStart).allowed);
  EXPECT_TRUE(limiter.try_acquire("b", kStart).allowed);
  EXPECT_TRUE(limiter.try_acquire("b", kStart).allowed);
  EXPECT_FALSE(limiter.try_acquire("b", kStart).allowed);
  // A refused request takes nothing: 30 s later a's one token is there.
  EXPECT_TRUE(limiter.try_acquire("a", kStart + seconds(30)).allowed);
}

TEST(RateLimiter, AClockThatGoesBackAddsNothing) {
  RateLimiter limiter(60, 1);
  EXPECT_TRUE(limiter.try_acquire("k", kStart).allowed);
  EXPECT_FALSE(limiter.try_acquire("k", kStart - seconds(30)).allowed);
  EXPECT_TRUE(limiter.try_acquire("k", kStart + seconds(1)).allowed);
}

TEST(RateLimiter, DropsIdleKeysAndBoundsMemory) {
  RateLimiter limiter(60, 60, /*max_keys=*/100);
  for (int i = 0; i < 50; ++i) limiter.try_acquire(key("idle", i), kStart);
  EXPECT_EQ(limiter.tracked_keys(), 50u);
  // A minute later every one of them has refilled: they go, and the new key stays.
  limiter.try_acquire("new", kStart + seconds(61));
  EXPECT_EQ(limiter.tracked_keys(), 1u);

  // Past max_keys the least recently used go, even when not full.
  for (int i = 0; i < 1000; ++i) limiter.try_acquire(key("k", i), kStart + seconds(62));
  EXPECT_EQ(limiter.tracked_keys(), 100u);
  // The most recent ones are still tracked (their buckets are not fresh).
  for (int i = 0; i < 59; ++i) EXPECT_TRUE(limiter.try_acquire("k999", kStart + seconds(62)).allowed);
  EXPECT_FALSE(limiter.try_acquire("k999", kStart + seconds(62)).allowed);
}

TEST(RateLimiter, IsThreadSafeAndExact) {
  RateLimiter limiter(1000);  // 1000 tokens at the start, nothing more at a fixed time
  std::atomic<int> allowed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        if (limiter.try_acquire(i % 2 ? "shared" : key("own", t), kStart).allowed) {
          allowed.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  // "shared": 2000 attempts, 1000 allowed; each "own<t>": 500 attempts, all allowed.
  EXPECT_EQ(allowed.load(), 1000 + 4 * 500);
}

}  // namespace
}  // namespace pagoda::server
