#pragma once
// Per-key request rate limit (--rate-limit-rpm): one token bucket per key (an API key's
// index, or the client address when auth is off).
//
// Each bucket holds up to `burst` tokens (default: one minute's worth, rpm) and refills
// continuously at rpm / 60 tokens per second; a request takes one token or is refused
// with the time until one is there (the Retry-After header). A fresh key starts full.
//
// Memory stays bounded: keys live in least-recently-used order, a bucket that has
// refilled completely is dropped (a full bucket and a missing one behave the same, so
// this changes no decision), and past max_keys the least recently used key is dropped
// even if not full (it then starts over with a full bucket: the one approximation, and
// only under more distinct active keys than max_keys).
// Thread-safe (one mutex; a decision is a hash lookup and a little arithmetic).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace pagoda::server {

struct RateLimitDecision {
  bool allowed = true;
  double retry_after_seconds = 0.0;  // when refused: until the next token, > 0
  // For the Retry-After header: whole seconds, rounded up, at least 1 (0 when allowed).
  int64_t retry_after_header() const;
};

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  // requests_per_minute 0 (or less): no limit. burst 0: requests_per_minute.
  explicit RateLimiter(int64_t requests_per_minute, int64_t burst = 0, size_t max_keys = 100000);

  bool enabled() const { return rate_per_second_ > 0; }

  // Takes a token from `key`'s bucket as of `now` (monotonic; tests pass their own clock).
  RateLimitDecision try_acquire(std::string_view key, Clock::time_point now);
  RateLimitDecision try_acquire(std::string_view key) { return try_acquire(key, Clock::now()); }

  size_t tracked_keys() const;

 private:
  struct Bucket {
    std::string key;
    double tokens = 0.0;
    Clock::time_point updated;
  };
  using Lru = std::list<Bucket>;  // most recently used first

  void refill(Bucket& bucket, Clock::time_point now) const;
  // Drops full buckets from the least recently used end (amortized O(1): it stops at the
  // first one that is not full).
  void drop_idle(Clock::time_point now);
  void drop_oldest();

  double rate_per_second_;
  double capacity_;
  size_t max_keys_;
  mutable std::mutex mutex_;
  Lru lru_;
  std::unordered_map<std::string_view, Lru::iterator> index_;  // views into lru_'s keys
};

}  // namespace pagoda::server
