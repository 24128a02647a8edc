// Property test: thousands of random engine-like operations (admissions with prefix
// hits, chunked prefill, decode, rewinds, forks, preemption, finish) on a
// KvCacheManager, with a shadow K/V storage that plays the model runner: each step
// applies the queued block copies and then writes every scheduled token into its row.
// A row records its token and a fingerprint of everything its K/V depends on (the
// request's extra key and all tokens up to it). After every operation the bookkeeping
// invariants are checked, and so is what matters in the end: every request reads back
// its own rows through its block table, a prefix hit hands out exactly the rows the new
// prompt would compute, and every cached block holds the tokens of its key.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "kv/kv_invariants.h"

namespace pagoda::kv {
namespace {

constexpr int32_t kUnwritten = -1;
constexpr int32_t kVocab = 6;  // few token ids: equal blocks (and prefix hits) are common
constexpr int32_t kMaxLen = 72;
constexpr size_t kMaxRequests = 10;

struct SimRequest {
  std::vector<int32_t> tokens;
  int32_t n_computed = 0;
  uint64_t salt = 0;
};

// One row of the shadow K/V storage.
struct Row {
  int32_t token = kUnwritten;
  uint64_t context = 0;  // fingerprint of (salt, tokens[0..position]): what the K/V depend on
  bool operator==(const Row&) const = default;
};

// The rows a request computes for its first n tokens.
std::vector<Row> expected_rows(const SimRequest& request, int32_t n) {
  std::vector<Row> rows(static_cast<size_t>(n));
  uint64_t context = request.salt * 0x9e3779b97f4a7c15ull + 1;
  for (int32_t p = 0; p < n; ++p) {
    context = (context ^ static_cast<uint64_t>(request.tokens[p] + 1)) * 0x100000001b3ull;
    context ^= context >> 29;
    rows[p] = Row{.token = request.tokens[p], .context = context};
  }
  return rows;
}

// What the pool looks like, to check that a refused allocate() changed nothing.
struct PoolSnapshot {
  std::vector<int32_t> ref_counts;
  std::vector<std::optional<BlockHash>> hashes;
  std::vector<BlockId> free_queue;
  int64_t n_evictions = 0;
  bool operator==(const PoolSnapshot&) const = default;
};

class KvSimulation {
 public:
  KvSimulation(int32_t n_blocks, int32_t block_size, bool prefix_cache, uint64_t seed)
      : kv_(n_blocks, block_size, prefix_cache),
        storage_(static_cast<size_t>(n_blocks),
                 std::vector<Row>(static_cast<size_t>(block_size))),
        rng_(seed) {}

  void run(int n_operations) {
    for (int op = 0; op < n_operations && !::testing::Test::HasFatalFailure(); ++op) {
      const int dice = uniform(0, 99);
      if (dice < 70 || requests_.empty()) {
        step();
      } else if (dice < 82) {
        fork();
      } else {
        finish(pick_request());
      }
      check_invariants();
    }
    while (!requests_.empty()) finish(requests_.begin()->first);
    check_invariants();
    EXPECT_EQ(kv_.n_free_blocks(), kv_.n_blocks());
    EXPECT_EQ(kv_.pool().free_queue().size(), static_cast<size_t>(kv_.n_blocks()));
    EXPECT_TRUE(kv_.take_copies().empty());
    for (BlockId b = 0; b < kv_.n_blocks(); ++b) EXPECT_EQ(kv_.pool().ref_count(b), 0);
  }

  int64_t n_copies() const { return n_copies_; }
  int64_t n_preemptions() const { return n_preemptions_; }
  const KvCacheManager& kv() const { return kv_; }

 private:
  struct Work {
    RequestId id;
    int32_t n_new;
  };

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  int32_t random_token() { return uniform(0, kVocab - 1); }
  RequestId pick_request() {
    auto it = requests_.begin();
    std::advance(it, uniform(0, static_cast<int>(requests_.size()) - 1));
    return it->first;
  }

  // One engine step: admissions and running requests allocate in turn (a refusal
  // preempts someone, maybe a request scheduled earlier in this very step), then the
  // runner copies blocks, writes the K/V of every scheduled token, and full blocks are
  // cached.
  void step() {
    std::vector<Work> work;
    std::vector<RequestId> ids;
    for (const auto& entry : requests_) ids.push_back(entry.first);
    for (const RequestId id : ids) {
      // Preempted earlier in this step, or sitting this one out.
      if (!requests_.contains(id) || uniform(0, 9) >= 7) continue;
      schedule(id, requests_.at(id), work);
    }
    if (requests_.size() < kMaxRequests && uniform(0, 9) < 4) admit(work);
    const std::vector<BlockCopy> copies = kv_.take_copies();
    for (const BlockCopy& copy : copies) {
      ASSERT_NE(copy.src, copy.dst);
      ASSERT_GE(kv_.pool().ref_count(copy.dst), 1) << "copy into a block nobody holds";
      storage_[copy.dst] = storage_[copy.src];
    }
    n_copies_ += static_cast<int64_t>(copies.size());
    for (const Work& w : work) {
      SimRequest& request = requests_.at(w.id);
      write_rows(w.id, request, w.n_new);
      request.n_computed += w.n_new;
      kv_.cache_full_blocks(w.id, request.tokens, request.n_computed, request.salt);
    }
  }

  // Picks the request's next chunk: the rest of its prompt in pieces, else 1-3 new
  // tokens (decode, or a few speculative ones); now and then it first moves back and
  // replaces some computed tokens (rejected speculation).
  void schedule(RequestId id, SimRequest& request, std::vector<Work>& work) {
    if (request.n_computed > 0 && uniform(0, 19) == 0) {
      request.n_computed = uniform(0, request.n_computed);
      request.tokens.resize(static_cast<size_t>(request.n_computed));
    }
    if (request.n_computed == static_cast<int32_t>(request.tokens.size())) {
      if (request.tokens.size() + 3 > kMaxLen) return finish(id);  // at the length limit
      for (int i = uniform(1, 3); i > 0; --i) request.tokens.push_back(random_token());
    }
    const int32_t remaining = static_cast<int32_t>(request.tokens.size()) - request.n_computed;
    const int32_t n_new = std::min(remaining, uniform(1, 24));
    const PoolSnapshot before = snapshot();
    const std::vector<BlockId> table_before = table(id);
    if (kv_.allocate(id, request.n_computed, n_new)) {
      work.push_back({id, n_new});
      return;
    }
    EXPECT_EQ(snapshot(), before);
    EXPECT_EQ(table(id), table_before);
    preempt(uniform(0, 1) == 0 ? id : pick_request(), work);
  }

  // A new prompt: the start of some earlier sequence (so that hits happen) with a random
  // tail, looked up in the prefix cache and started from the hit half of the time.
  void admit(std::vector<Work>& work) {
    SimRequest request;
    request.salt = uniform(0, 5) == 0 ? 1 : 0;
    if (!history_.empty() && uniform(0, 3) > 0) {
      const std::vector<int32_t>& source = history_[uniform(0, static_cast<int>(history_.size()) - 1)];
      request.tokens.assign(source.begin(),
                            source.begin() + uniform(0, static_cast<int>(source.size())));
    }
    for (int i = uniform(1, 20); i > 0 && request.tokens.size() < kMaxLen; --i) {
      request.tokens.push_back(random_token());
    }
    const PrefixHit hit = kv_.find_prefix(request.tokens, request.salt);
    check_hit(request, hit);
    const bool use_hit = uniform(0, 1) == 0;
    request.n_computed = use_hit ? hit.n_tokens : 0;
    const int32_t remaining = static_cast<int32_t>(request.tokens.size()) - request.n_computed;
    const int32_t n_new = std::min(remaining, uniform(1, 32));
    const RequestId id = next_id_++;
    const PoolSnapshot before = snapshot();
    if (!kv_.allocate(id, request.n_computed, n_new, use_hit ? &hit : nullptr)) {
      EXPECT_EQ(snapshot(), before);
      EXPECT_FALSE(kv_.has(id));
      return;
    }
    requests_.emplace(id, std::move(request));
    work.push_back({id, n_new});
  }

  // A hit covers whole blocks, never the last token, and its blocks hold the K/V the
  // prompt's own computation would give.
  void check_hit(const SimRequest& request, const PrefixHit& hit) {
    const int32_t block_size = kv_.block_size();
    ASSERT_EQ(hit.n_tokens, static_cast<int32_t>(hit.blocks.size()) * block_size);
    ASSERT_LT(hit.n_tokens, std::max<int32_t>(1, static_cast<int32_t>(request.tokens.size())));
    const std::vector<Row> expected = expected_rows(request, hit.n_tokens);
    for (int32_t p = 0; p < hit.n_tokens; ++p) {
      ASSERT_EQ(storage_[hit.blocks[p / block_size]][p % block_size], expected[p])
          << "hit position " << p;
    }
  }

  void fork() {
    const RequestId parent = pick_request();
    if (requests_.size() >= kMaxRequests) return;
    const RequestId child = next_id_++;
    kv_.fork(parent, child);
    requests_.emplace(child, requests_.at(parent));
  }

  void preempt(RequestId id, std::vector<Work>& work) {
    std::erase_if(work, [id](const Work& w) { return w.id == id; });
    finish(id);
    ++n_preemptions_;
  }

  void finish(RequestId id) {
    const SimRequest& request = requests_.at(id);
    history_.push_back(std::vector<int32_t>(request.tokens.begin(),
                                            request.tokens.begin() + request.n_computed));
    if (history_.size() > 16) history_.erase(history_.begin());
    kv_.free(id);
    requests_.erase(id);
  }

  void write_rows(RequestId id, const SimRequest& request, int32_t n_new) {
    const std::span<const BlockId> blocks = kv_.block_table(id);
    const int32_t block_size = kv_.block_size();
    const std::vector<Row> rows = expected_rows(request, request.n_computed + n_new);
    for (int32_t p = request.n_computed; p < request.n_computed + n_new; ++p) {
      ASSERT_LT(p / block_size, static_cast<int32_t>(blocks.size()));
      const BlockId block = blocks[p / block_size];
      ASSERT_EQ(kv_.pool().ref_count(block), 1) << "a step writes into a shared block";
      ASSERT_FALSE(kv_.pool().cached_hash(block)) << "a step writes into a cached block";
      storage_[block][p % block_size] = rows[p];
    }
  }

  std::vector<BlockId> table(RequestId id) const {
    const std::span<const BlockId> blocks = kv_.block_table(id);
    return {blocks.begin(), blocks.end()};
  }

  PoolSnapshot snapshot() const {
    PoolSnapshot s;
    for (BlockId b = 0; b < kv_.n_blocks(); ++b) {
      s.ref_counts.push_back(kv_.pool().ref_count(b));
      s.hashes.push_back(kv_.pool().cached_hash(b));
    }
    s.free_queue = kv_.pool().free_queue();
    s.n_evictions = kv_.pool().n_evictions();
    return s;
  }

  void check_invariants() const {
    std::vector<RequestId> ids;
    for (const auto& entry : requests_) ids.push_back(entry.first);
    ASSERT_NO_FATAL_FAILURE(check_kv_invariants(kv_, ids));
    ASSERT_NO_FATAL_FAILURE(check_cached_rows());
    ASSERT_NO_FATAL_FAILURE(check_requests_read_their_tokens());
    ASSERT_NO_FATAL_FAILURE(check_cached_identities_match_their_holders());
  }

  // Every cached block holds the K/V of its key's tokens.
  void check_cached_rows() const {
    for (BlockId b = 0; b < kv_.n_blocks(); ++b) {
      const BlockKey* key = kv_.pool().cached_key(b);
      if (key == nullptr) continue;
      for (size_t r = 0; r < key->tokens.size(); ++r) {
        ASSERT_EQ(storage_[b][r].token, key->tokens[r]) << "cached block " << b << " row " << r;
      }
    }
  }

  // A request's table covers its computed tokens, and reading them back through the
  // table gives its own rows (no write of another request, no missed copy).
  void check_requests_read_their_tokens() const {
    const int32_t block_size = kv_.block_size();
    for (const auto& [id, request] : requests_) {
      const std::span<const BlockId> blocks = kv_.block_table(id);
      ASSERT_GE(static_cast<int32_t>(blocks.size()) * block_size, request.n_computed);
      const std::vector<Row> expected = expected_rows(request, request.n_computed);
      for (int32_t p = 0; p < request.n_computed; ++p) {
        ASSERT_EQ(storage_[blocks[p / block_size]][p % block_size], expected[p])
            << "request " << id << " position " << p;
      }
    }
  }

  // A cached block that a request holds among its computed full blocks is cached under
  // that request's own chain: its identity describes the K/V it holds.
  void check_cached_identities_match_their_holders() const {
    const size_t block_size = static_cast<size_t>(kv_.block_size());
    for (const auto& [id, request] : requests_) {
      const std::span<const BlockId> blocks = kv_.block_table(id);
      BlockHash parent = kRootBlockHash;
      for (size_t j = 0; j < static_cast<size_t>(request.n_computed) / block_size; ++j) {
        const std::span<const int32_t> tokens =
            std::span(request.tokens).subspan(j * block_size, block_size);
        const BlockHash hash = hash_block(parent, request.salt, tokens);
        if (const BlockKey* key = kv_.pool().cached_key(blocks[j])) {
          ASSERT_EQ(*kv_.pool().cached_hash(blocks[j]), hash) << "request " << id << " block " << j;
          ASSERT_EQ(key->parent, parent);
          ASSERT_EQ(key->extra_key, request.salt);
          ASSERT_TRUE(std::ranges::equal(key->tokens, tokens));
        }
        parent = hash;
      }
    }
  }

  KvCacheManager kv_;
  std::vector<std::vector<Row>> storage_;  // [n_blocks][block_size]
  std::mt19937_64 rng_;
  std::map<RequestId, SimRequest> requests_;
  std::vector<std::vector<int32_t>> history_;  // computed tokens of ended requests
  RequestId next_id_ = 1;
  int64_t n_copies_ = 0;
  int64_t n_preemptions_ = 0;
};

struct PoolShape {
  int32_t n_blocks;
  int32_t block_size;
};

class KvProperty : public ::testing::TestWithParam<PoolShape> {};

TEST_P(KvProperty, RandomOperationsKeepEveryInvariant) {
  const PoolShape shape = GetParam();
  for (const uint64_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    KvSimulation sim(shape.n_blocks, shape.block_size, /*prefix_cache=*/true, seed);
    sim.run(3000);
    // The run must have exercised what it checks.
    EXPECT_GT(sim.n_copies(), 0);
    EXPECT_GT(sim.n_preemptions(), 0);
    EXPECT_GT(sim.kv().prefix_stats().hit_tokens, 0);
    EXPECT_GT(sim.kv().pool().n_evictions(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, KvProperty,
                         ::testing::Values(PoolShape{48, 4}, PoolShape{24, 1}, PoolShape{24, 16},
                                           PoolShape{12, 2}, PoolShape{40, 3}),
                         [](const ::testing::TestParamInfo<PoolShape>& info) {
                           return "blocks" + std::to_string(info.param.n_blocks) + "_size" +
                                  std::to_string(info.param.block_size);
                         });

TEST(KvPropertyNoPrefixCache, RandomOperationsKeepEveryInvariant) {
  KvSimulation sim(32, 4, /*prefix_cache=*/false, 7);
  sim.run(3000);
  EXPECT_GT(sim.n_copies(), 0);
  EXPECT_EQ(sim.kv().pool().n_cached(), 0);
  EXPECT_EQ(sim.kv().prefix_stats().queries, 0);
}

}  // namespace
}  // namespace pagoda::kv
