#pragma once
// A stand-in for the ModelRunner that checks the KV bookkeeping end to end without a
// model. Every K/V row it "computes" holds a value that depends on the row's token and
// on the row before it, read back through the request's block table, like a
// transformer's K/V depends on the earlier ones through attention. A step's sampled
// token is a hash of the last row's value and the request's seed. So a request's
// tokens depend only on its token history and seed (not on its id, the batch or the
// schedule), and any row lost or clobbered by wrong block tables, a missing copy or a
// wrong prefix hit changes the tokens that follow. Every read is also checked against
// the value the request's own tokens give, and bad rows are counted.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/scheduler.h"
#include "kv/kv_cache_manager.h"

namespace pagoda::engine::testing {

inline uint64_t mix64(uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline constexpr uint64_t kUnwrittenRow = 0;            // never a row value (see below)
inline constexpr uint64_t kBeforeFirstRow = 0x5eedull;  // the "row" before position 0

// The K/V value of a position: a function of the previous row and this token (never 0).
inline uint64_t row_value(uint64_t previous_row, int32_t token) {
  const uint64_t value = mix64(
      previous_row ^ (static_cast<uint64_t>(static_cast<uint32_t>(token)) * 0x9e3779b97f4a7c15ull));
  return value == kUnwrittenRow ? 1 : value;
}

// The token sampled after a row: the row's value and the request's seed.
inline int32_t sample_token(uint64_t last_row, uint64_t seed, int32_t n_vocab) {
  return static_cast<int32_t>(mix64(last_row + seed * 0xd1b54a32d192ed03ull) %
                              static_cast<uint64_t>(n_vocab));
}

// The rows a request's tokens give when every read is right: [tokens.size()].
inline std::vector<uint64_t> expected_rows(std::span<const int32_t> tokens) {
  std::vector<uint64_t> rows;
  uint64_t previous = kBeforeFirstRow;
  for (const int32_t token : tokens) rows.push_back(previous = row_value(previous, token));
  return rows;
}

class FakeRunner {
 public:
  FakeRunner(const Scheduler& scheduler, const kv::KvCacheManager& kv, int32_t n_vocab)
      : scheduler_(scheduler),
        kv_(kv),
        n_vocab_(n_vocab),
        rows_(static_cast<size_t>(kv.n_blocks()) * static_cast<size_t>(kv.block_size()),
              kUnwrittenRow) {}

  // Copies the step's blocks, runs every scheduled token in batch order, then checks
  // that each scheduled request's rows are all still right (two requests writing one
  // block in a step would show here). Returns a token per entry that samples.
  std::vector<SampledTokenUpdate> execute(const SchedulerOutput& output) {
    for (const kv::BlockCopy& copy : output.block_copies) copy_block(copy);
    std::vector<SampledTokenUpdate> sampled;
    for (const ScheduledRequest& entry : output.scheduled) {
      const std::optional<int32_t> token = run(entry);
      if (token) sampled.push_back({.id = entry.id, .token = *token});
    }
    for (const ScheduledRequest& entry : output.scheduled) {
      const Request* request = scheduler_.find(entry.id);
      if (request != nullptr)
        n_bad_rows_ += count_bad_rows(*request, entry.first_position + entry.n_tokens);
    }
    return sampled;
  }

  // Rows read or left with a value their request's tokens do not give (0 when right).
  int64_t n_bad_rows() const { return n_bad_rows_; }
  // Entries whose rows the block table did not cover (0 when right).
  int64_t n_uncovered_entries() const { return n_uncovered_entries_; }
  int64_t n_tokens_run() const { return n_tokens_run_; }

 private:
  uint64_t& row(std::span<const kv::BlockId> table, int32_t position) {
    const int32_t block_size = kv_.block_size();
    const size_t block = static_cast<size_t>(table[static_cast<size_t>(position / block_size)]);
    return rows_[block * static_cast<size_t>(block_size) +
                 static_cast<size_t>(position % block_size)];
  }

  void copy_block(const kv::BlockCopy& copy) {
    const size_t block_size = static_cast<size_t>(kv_.block_size());
    const auto src =
        rows_.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(copy.src) * block_size);
    std::copy(
        src, src + static_cast<std::ptrdiff_t>(block_size),
        rows_.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(copy.dst) * block_size));
  }

  // Bad rows among positions [0, n_positions) of the request's table.
  int64_t count_bad_rows(const Request& request, int32_t n_positions) {
    const std::span<const kv::BlockId> table = kv_.block_table(request.id);
    if (static_cast<int64_t>(table.size()) * kv_.block_size() < n_positions) return n_positions;
    const std::vector<uint64_t> expected =
        expected_rows(std::span(request.tokens).first(static_cast<size_t>(n_positions)));
    int64_t n_bad = 0;
    for (int32_t p = 0; p < n_positions; ++p) n_bad += row(table, p) != expected[p];
    return n_bad;
  }

  std::optional<int32_t> run(const ScheduledRequest& entry) {
    const Request* request = scheduler_.find(entry.id);
    const int32_t end = entry.first_position + entry.n_tokens;
    const std::span<const kv::BlockId> table = kv_.block_table(entry.id);
    if (request == nullptr || end > request->num_tokens() ||
        static_cast<int64_t>(table.size()) * kv_.block_size() < end) {
      ++n_uncovered_entries_;
      return std::nullopt;
    }
    // Attention reads every earlier row: check them all, continue from the last one.
    n_bad_rows_ += count_bad_rows(*request, entry.first_position);
    uint64_t previous =
        entry.first_position == 0 ? kBeforeFirstRow : row(table, entry.first_position - 1);
    for (int32_t p = entry.first_position; p < end; ++p) {
      previous = row_value(previous, request->tokens[static_cast<size_t>(p)]);
      row(table, p) = previous;
    }
    n_tokens_run_ += entry.n_tokens;
    if (!entry.samples) return std::nullopt;
    return sample_token(previous, request->sampling.seed.value_or(0), n_vocab_);
  }

  const Scheduler& scheduler_;
  const kv::KvCacheManager& kv_;
  int32_t n_vocab_;
  std::vector<uint64_t> rows_;  // [n_blocks * block_size] one value per KV row
  int64_t n_bad_rows_ = 0;
  int64_t n_uncovered_entries_ = 0;
  int64_t n_tokens_run_ = 0;
};

}  // namespace pagoda::engine::testing
