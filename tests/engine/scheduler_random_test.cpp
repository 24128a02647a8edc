// Scheduler: many random requests through a tiny KV cache (preemptions, prefix hits,
// forks, aborts all mixed), with every invariant checked after every step and every
// request that was not aborted finishing with the tokens it gives unconstrained.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/scheduler.h"
#include "scheduler_driver.h"

namespace pagoda::engine {
namespace {

using testing::RequestSpec;
using testing::SchedulerDriver;
using testing::unconstrained_tokens;

constexpr int32_t kMaxModelLen = 48;
constexpr int32_t kBlockSize = 4;
constexpr int32_t kBlocks = 16;  // 64 token rows: room for one request and a bit

struct Scenario {
  SchedulerConfig config;
  std::vector<RequestSpec> specs;
  std::map<RequestId, int> add_step;    // the step before which each request is added
  std::map<RequestId, int> abort_step;  // the step before which it is aborted, if at all
};

int uniform(std::mt19937_64& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

// Prompts are a shared prefix (one of three) cut anywhere, then a random tail, so that
// prefix hits of every length happen; some prompts get one to three children.
Scenario make_scenario(uint64_t seed) {
  std::mt19937_64 rng(seed);
  Scenario scenario;
  const int32_t budgets[] = {3, 8, 16};
  const int32_t caps[] = {2, 4, 8};
  scenario.config = {.max_batched_tokens = budgets[uniform(rng, 0, 2)],
                     .max_running = caps[uniform(rng, 0, 2)],
                     .max_model_len = kMaxModelLen};
  std::vector<std::vector<int32_t>> prefixes(3);
  for (auto& prefix : prefixes) {
    for (int i = uniform(rng, 8, 24); i > 0; --i) prefix.push_back(uniform(rng, 0, 999));
  }
  RequestId next_id = 1;
  for (int group = 0; group < 30; ++group) {
    const std::vector<int32_t>& prefix = prefixes[static_cast<size_t>(uniform(rng, 0, 2))];
    std::vector<int32_t> prompt(prefix.begin(),
                                prefix.begin() + uniform(rng, 0, static_cast<int>(prefix.size())));
    for (int i = uniform(rng, 1, 12); i > 0; --i) prompt.push_back(uniform(rng, 0, 999));
    const RequestSpec parent = {.id = next_id++,
                                .prompt = prompt,
                                .max_tokens = uniform(rng, 1, 16),
                                .priority = uniform(rng, 0, 2),
                                .seed = rng(),
                                .cache_salt = static_cast<uint64_t>(uniform(rng, 0, 3) == 0)};
    const int add_step = uniform(rng, 0, 60);
    const int n_children = uniform(rng, 0, 4) == 0 ? uniform(rng, 1, 3) : 0;
    for (int c = 0; c <= n_children; ++c) {
      RequestSpec spec = parent;
      if (c > 0) {
        spec.id = next_id++;
        spec.parent = parent.id;
        spec.seed = rng();
        spec.max_tokens = uniform(rng, 1, 16);
      }
      scenario.specs.push_back(spec);
      scenario.add_step[spec.id] = add_step;
      if (uniform(rng, 0, 9) == 0) scenario.abort_step[spec.id] = add_step + uniform(rng, 0, 30);
    }
  }
  return scenario;
}

struct Coverage {
  int64_t preemptions = 0, copies = 0, hit_tokens = 0, aborted = 0;
};

void run_scenario(uint64_t seed, Coverage& coverage) {
  SCOPED_TRACE("scenario seed " + std::to_string(seed));
  const Scenario scenario = make_scenario(seed);
  SchedulerDriver driver(scenario.config, kBlocks, kBlockSize);
  std::set<RequestId> aborted;
  size_t n_added = 0;
  for (int step = 0;
       step < 5000 && (n_added < scenario.specs.size() || driver.scheduler.has_requests());
       ++step) {
    for (const RequestSpec& spec : scenario.specs) {
      if (scenario.add_step.at(spec.id) != step) continue;
      ASSERT_TRUE(driver.add(spec).ok()) << driver.add(spec).message();
      ++n_added;
    }
    for (const auto& [id, abort_step] : scenario.abort_step) {
      if (abort_step == step && driver.scheduler.find(id) != nullptr) {
        driver.finish(id);
        aborted.insert(id);
      }
    }
    driver.step();
  }
  ASSERT_EQ(n_added, scenario.specs.size());
  EXPECT_FALSE(driver.scheduler.has_requests()) << "requests left after 5000 steps";
  EXPECT_TRUE(driver.violations.empty())
      << driver.violations.size() << " violations, first: " << driver.violations.front();
  EXPECT_EQ(driver.kv.n_free_blocks(), kBlocks);
  EXPECT_EQ(driver.runner.n_bad_rows(), 0);
  EXPECT_EQ(driver.runner.n_uncovered_entries(), 0);

  const auto expected = unconstrained_tokens(scenario.specs, kMaxModelLen);
  ASSERT_EQ(expected.size(), scenario.specs.size());
  for (const auto& [id, tokens] : driver.finished_tokens()) {
    if (!aborted.contains(id)) {
      EXPECT_EQ(tokens, expected.at(id)) << "request " << id;
    }
  }
  coverage.preemptions += driver.scheduler.stats().n_preemptions;
  coverage.hit_tokens += driver.kv.prefix_stats().hit_tokens;
  coverage.aborted += static_cast<int64_t>(aborted.size());
  for (const SchedulerOutput& output : driver.outputs) {
    coverage.copies += static_cast<int64_t>(output.block_copies.size());
  }
}

TEST(SchedulerRandomTest, InvariantsHoldAndResultsMatchAnUnconstrainedRun) {
  Coverage coverage;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    run_scenario(seed, coverage);
    if (HasFatalFailure()) return;
  }
  // The scenarios must have exercised what they are meant to.
  EXPECT_GT(coverage.preemptions, 100);
  EXPECT_GT(coverage.copies, 20);
  EXPECT_GT(coverage.hit_tokens, 1000);
  EXPECT_GT(coverage.aborted, 20);
  std::cout << "preemptions " << coverage.preemptions << ", block copies " << coverage.copies
            << ", prefix-hit tokens " << coverage.hit_tokens << ", aborted " << coverage.aborted
            << "\n";
}

}  // namespace
}  // namespace pagoda::engine
