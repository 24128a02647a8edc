#include "server/service/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace pagoda::server {

int64_t RateLimitDecision::retry_after_header() const {
  if (allowed) return 0;
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(retry_after_seconds)));
}

RateLimiter::RateLimiter(int64_t requests_per_minute, int64_t burst, size_t max_keys)
    : rate_per_second_(requests_per_minute > 0 ? static_cast<double>(requests_per_minute) / 60.0 : 0.0),
      capacity_(static_cast<double>(burst > 0 ? burst : std::max<int64_t>(requests_per_minute, 1))),
      max_keys_(std::max<size_t>(max_keys, 1)) {}

size_t RateLimiter::tracked_keys() const {
  std::lock_guard lock(mutex_);
  return lru_.size();
}

void RateLimiter::refill(Bucket& bucket, Clock::time_point now) const {
  if (now <= bucket.updated) return;  // a clock that went back (or no time) adds nothing
  const double elapsed = std::chrono::duration<double>(now - bucket.updated).count();
  bucket.tokens = std::min(capacity_, bucket.tokens + elapsed * rate_per_second_);
  bucket.updated = now;
}

void RateLimiter::drop_idle(Clock::time_point now) {
  while (!lru_.empty()) {
    Bucket& oldest = lru_.back();
    refill(oldest, now);
    if (oldest.tokens < capacity_) return;
    drop_oldest();
  }
}

void RateLimiter::drop_oldest() {
  index_.erase(lru_.back().key);
  lru_.pop_back();
}

RateLimitDecision RateLimiter::try_acquire(std::string_view key, Clock::time_point now) {
  if (!enabled()) return {};
  std::lock_guard lock(mutex_);
  drop_idle(now);
  auto found = index_.find(key);
  if (found != index_.end()) {
    lru_.splice(lru_.begin(), lru_, found->second);  // iterators stay valid
  } else {
    while (lru_.size() >= max_keys_) drop_oldest();
    lru_.push_front(Bucket{.key = std::string(key), .tokens = capacity_, .updated = now});
    index_.emplace(lru_.front().key, lru_.begin());
  }
  Bucket& bucket = lru_.front();
  refill(bucket, now);
  if (bucket.tokens >= 1.0) {
    bucket.tokens -= 1.0;
    return {};
  }
  return {.allowed = false, .retry_after_seconds = (1.0 - bucket.tokens) / rate_per_second_};
}

}  // namespace pagoda::server
