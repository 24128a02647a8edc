// Scheduler: admission checks, token budget and chunked prefill, running cap, priority
// and arrival order, abort. The KV-pressure paths (preemption, prefix hits, forks) are
// in scheduler_kv_test.cpp, the randomized run in scheduler_random_test.cpp.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <numeric>
#include <tuple>
#include <vector>

#include "scheduler_driver.h"

namespace pagoda::engine {
namespace {

using testing::RequestSpec;
using testing::SchedulerDriver;

// Tokens start, start + 1, ..., start + n - 1.
std::vector<int32_t> iota_tokens(int32_t n, int32_t start = 1) {
  std::vector<int32_t> tokens(static_cast<size_t>(n));
  std::iota(tokens.begin(), tokens.end(), start);
  return tokens;
}

// (id, first_position, n_tokens, samples) of each scheduled entry.
using Entry = std::tuple<RequestId, int32_t, int32_t, bool>;
std::vector<Entry> entries(const SchedulerOutput& output) {
  std::vector<Entry> result;
  for (const ScheduledRequest& e : output.scheduled) {
    result.emplace_back(e.id, e.first_position, e.n_tokens, e.samples);
  }
  return result;
}

TEST(SchedulerConfigTest, ValidateRejectsOutOfRangeValues) {
  EXPECT_TRUE(SchedulerConfig{}.validate().ok());
  EXPECT_EQ(SchedulerConfig{.max_batched_tokens = 0}.validate().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(SchedulerConfig{.max_running = 0}.validate().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(SchedulerConfig{.max_model_len = 1}.validate().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(SchedulerConfig({.max_batched_tokens = 1, .max_running = 1, .max_model_len = 2})
                  .validate()
                  .ok());
}

TEST(SchedulerTest, AddRejectsRequestsThatCouldNeverRun) {
  // 8 blocks of 4 tokens: exactly one request of the whole 32-token context.
  SchedulerDriver driver({.max_batched_tokens = 16, .max_running = 4, .max_model_len = 32}, 8, 4);
  Scheduler& scheduler = driver.scheduler;
  EXPECT_EQ(scheduler.add(nullptr).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(driver.add({.id = 1, .prompt = {}}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(driver.add({.id = 1, .prompt = iota_tokens(32)}).code(), ErrorCode::kInvalidArgument);
  // 31 prompt tokens leave room for one generated token; the worst case is 31
  // positions, 8 blocks: it fits.
  EXPECT_TRUE(driver.add({.id = 1, .prompt = iota_tokens(31), .max_tokens = 100}).ok());
  EXPECT_EQ(driver.add({.id = 1, .prompt = iota_tokens(3)}).code(), ErrorCode::kInvalidArgument);

  auto no_prompt = testing::make_request({.id = 2, .prompt = iota_tokens(3)});
  no_prompt->n_prompt_tokens = 0;
  EXPECT_EQ(scheduler.add(std::move(no_prompt)).code(), ErrorCode::kInvalidArgument);
  auto long_prompt = testing::make_request({.id = 2, .prompt = iota_tokens(3)});
  long_prompt->n_prompt_tokens = 4;
  EXPECT_EQ(scheduler.add(std::move(long_prompt)).code(), ErrorCode::kInvalidArgument);

  EXPECT_EQ(driver.add({.id = 3, .prompt = iota_tokens(4), .parent = 3}).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(driver.add({.id = 3, .prompt = iota_tokens(31, 2), .parent = 1}).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(driver.add({.id = 3, .prompt = iota_tokens(31), .cache_salt = 9, .parent = 1}).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_TRUE(driver.add({.id = 3, .prompt = iota_tokens(31), .parent = 1}).ok());
  // A parent that is gone is no reason to refuse: the child runs on its own.
  EXPECT_TRUE(driver.add({.id = 4, .prompt = iota_tokens(5), .parent = 77}).ok());
  EXPECT_EQ(scheduler.n_waiting(), 3);
  EXPECT_EQ(scheduler.n_running(), 0);
}

TEST(SchedulerTest, AddRejectsWorstCasesLargerThanTheCache) {
  // 4 blocks of 4 tokens, a 64-token context: the pool is the limit.
  SchedulerDriver driver({.max_batched_tokens = 16, .max_running = 4, .max_model_len = 64}, 4, 4);
  // 10 + 7 tokens at most: 16 positions run, 4 blocks.
  EXPECT_TRUE(driver.add({.id = 1, .prompt = iota_tokens(10), .max_tokens = 7}).ok());
  EXPECT_EQ(driver.add({.id = 2, .prompt = iota_tokens(10), .max_tokens = 8}).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(driver.add({.id = 3, .prompt = iota_tokens(17), .max_tokens = 1}).code(),
            ErrorCode::kInvalidArgument);
}

TEST(SchedulerTest, ChunkedPrefillSharesTheBudgetWithDecodes) {
  SchedulerDriver driver({.max_batched_tokens = 8, .max_running = 4, .max_model_len = 64}, 32, 4);
  ASSERT_TRUE(driver.add({.id = 1, .prompt = iota_tokens(20), .max_tokens = 3}).ok());
  ASSERT_TRUE(driver.add({.id = 2, .prompt = iota_tokens(3, 100), .max_tokens = 2}).ok());

  EXPECT_EQ(entries(driver.step()), (std::vector<Entry>{{1, 0, 8, false}}));
  EXPECT_EQ(driver.scheduler.n_waiting(), 1);  // no budget left for request 2
  EXPECT_EQ(entries(driver.step()), (std::vector<Entry>{{1, 8, 8, false}}));
  EXPECT_EQ(entries(driver.step()), (std::vector<Entry>{{1, 16, 4, true}, {2, 0, 3, true}}));
  EXPECT_EQ(entries(driver.step()), (std::vector<Entry>{{1, 20, 1, true}, {2, 3, 1, true}}));
  EXPECT_TRUE(driver.finished.contains(2));  // two tokens generated

  // A long prompt arriving next to a decode takes what the decode leaves of the budget.
  ASSERT_TRUE(driver.add({.id = 3, .prompt = iota_tokens(20, 50), .max_tokens = 1}).ok());
  EXPECT_EQ(entries(driver.step()), (std::vector<Entry>{{1, 21, 1, true}, {3, 0, 7, false}}));
  EXPECT_EQ(entries(driver.step()), (std::vector<Entry>{{3, 7, 8, false}}));
  EXPECT_EQ(entries(driver.step()), (std::vector<Entry>{{3, 15, 5, true}}));
  EXPECT_FALSE(driver.scheduler.has_requests());

  EXPECT_EQ(driver.scheduler.stats().n_prefilled_tokens, 20 + 3 + 20);
  EXPECT_EQ(driver.scheduler.stats().n_decoded_tokens, 3);
  EXPECT_EQ(driver.finished.at(1)->n_generated(), 3);
  EXPECT_EQ(driver.kv.n_free_blocks(), driver.kv.n_blocks());
  EXPECT_TRUE(driver.violations.empty()) << driver.violations.front();
  EXPECT_EQ(driver.runner.n_bad_rows(), 0);
}

TEST(SchedulerTest, RunningCapAdmitsInArrivalOrder) {
  SchedulerDriver driver({.max_batched_tokens = 64, .max_running = 2, .max_model_len = 64}, 32, 4);
  for (RequestId id = 1; id <= 4; ++id) {
    ASSERT_TRUE(driver
                    .add({.id = id,
                          .prompt = iota_tokens(4, 10 * static_cast<int32_t>(id)),
                          .max_tokens = 2})
                    .ok());
  }
  EXPECT_EQ(entries(driver.step()), (std::vector<Entry>{{1, 0, 4, true}, {2, 0, 4, true}}));
  EXPECT_EQ(driver.scheduler.n_running(), 2);
  EXPECT_EQ(driver.scheduler.n_waiting(), 2);
  // Both finish this step; the slots are free only at the next one.
  EXPECT_EQ(entries(driver.step()), (std::vector<Entry>{{1, 4, 1, true}, {2, 4, 1, true}}));
  EXPECT_EQ(entries(driver.step()), (std::vector<Entry>{{3, 0, 4, true}, {4, 0, 4, true}}));
  EXPECT_TRUE(driver.run_until_idle());
  EXPECT_TRUE(driver.violations.empty()) << driver.violations.front();
}

// The order in which requests are first scheduled.
std::vector<RequestId> admission_order(SchedulerDriver& driver) {
  std::vector<RequestId> order;
  while (driver.scheduler.has_requests()) {
    for (const ScheduledRequest& entry : driver.step().scheduled) {
      if (entry.first_position == 0) order.push_back(entry.id);
    }
  }
  return order;
}

TEST(SchedulerTest, PriorityFirstThenArrival) {
  SchedulerDriver driver({.max_batched_tokens = 64, .max_running = 1, .max_model_len = 64}, 32, 4);
  const int32_t priorities[] = {5, 0, 5, 0, 3};
  for (RequestId id = 1; id <= 5; ++id) {
    ASSERT_TRUE(driver
                    .add({.id = id,
                          .prompt = iota_tokens(3, static_cast<int32_t>(id)),
                          .max_tokens = 1,
                          .priority = priorities[id - 1]})
                    .ok());
  }
  EXPECT_EQ(admission_order(driver), (std::vector<RequestId>{2, 4, 5, 1, 3}));
  EXPECT_TRUE(driver.violations.empty()) << driver.violations.front();
}

TEST(SchedulerTest, LaterHigherPriorityRequestDoesNotPreemptRunningOnes) {
  SchedulerDriver driver({.max_batched_tokens = 64, .max_running = 1, .max_model_len = 64}, 32, 4);
  ASSERT_TRUE(driver.add({.id = 1, .prompt = iota_tokens(3), .max_tokens = 3, .priority = 5}).ok());
  driver.step();
  ASSERT_TRUE(
      driver.add({.id = 2, .prompt = iota_tokens(3, 9), .max_tokens = 1, .priority = 0}).ok());
  EXPECT_EQ(entries(driver.step()), (std::vector<Entry>{{1, 3, 1, true}}));
  EXPECT_EQ(entries(driver.step()), (std::vector<Entry>{{1, 4, 1, true}}));
  EXPECT_EQ(entries(driver.step()), (std::vector<Entry>{{2, 0, 3, true}}));
  EXPECT_EQ(driver.scheduler.stats().n_preemptions, 0);
  EXPECT_TRUE(driver.violations.empty()) << driver.violations.front();
}

TEST(SchedulerTest, AdmissionStopsAtTheFirstRequestTheBlocksCannotHold) {
  // 6 blocks of 4. Request 1 takes 4 for its prompt; request 2 needs 3, request 3 one:
  // request 3 could fit but does not overtake request 2.
  SchedulerDriver driver({.max_batched_tokens = 64, .max_running = 4, .max_model_len = 64}, 6, 4);
  ASSERT_TRUE(driver.add({.id = 1, .prompt = iota_tokens(14), .max_tokens = 6}).ok());
  EXPECT_EQ(entries(driver.step()), (std::vector<Entry>{{1, 0, 14, true}}));
  ASSERT_TRUE(driver.add({.id = 2, .prompt = iota_tokens(12, 30), .max_tokens = 1}).ok());
  ASSERT_TRUE(driver.add({.id = 3, .prompt = iota_tokens(3, 60), .max_tokens = 1}).ok());
  EXPECT_EQ(driver.kv.n_free_blocks(), 2);
  for (int32_t position = 14; position < 19; ++position) {
    EXPECT_EQ(entries(driver.step()), (std::vector<Entry>{{1, position, 1, true}}));
  }
  EXPECT_TRUE(driver.finished.contains(1));
  EXPECT_EQ(entries(driver.step()), (std::vector<Entry>{{2, 0, 12, true}, {3, 0, 3, true}}));
  EXPECT_FALSE(driver.scheduler.has_requests());
  EXPECT_TRUE(driver.violations.empty()) << driver.violations.front();
  // Request 2 was looked up in the prefix cache at each of the 5 steps it waited, but
  // the stats count admissions: one query per request.
  EXPECT_GT(driver.kv.prefix_stats().queries, 3);
  const kv::PrefixCacheStats& admitted = driver.scheduler.stats().prefix_cache;
  EXPECT_EQ(admitted.queries, 3);
  EXPECT_EQ(admitted.queried_tokens, 14 + 12 + 3);
  EXPECT_EQ(admitted.hit_tokens, 0);
}

TEST(SchedulerTest, AbortOfWaitingAndRunningRequestsReturnsTheirBlocks) {
  SchedulerDriver driver({.max_batched_tokens = 8, .max_running = 2, .max_model_len = 64}, 16, 4);
  ASSERT_TRUE(driver.add({.id = 1, .prompt = iota_tokens(30), .max_tokens = 4}).ok());
  ASSERT_TRUE(driver.add({.id = 2, .prompt = iota_tokens(3, 40), .max_tokens = 4}).ok());
  ASSERT_TRUE(driver.add({.id = 3, .prompt = iota_tokens(3, 50), .max_tokens = 4}).ok());
  driver.step();  // request 1 is mid-prefill, requests 2 and 3 wait for budget
  EXPECT_EQ(driver.kv.n_free_blocks(), 14);

  const std::unique_ptr<Request> waiting = driver.scheduler.finish(3);
  ASSERT_NE(waiting, nullptr);
  EXPECT_EQ(waiting->status, RequestStatus::kFinished);
  EXPECT_EQ(driver.kv.n_free_blocks(), 14);
  EXPECT_EQ(driver.scheduler.n_waiting(), 1);

  // Abort between schedule() and update(): the update skips the request.
  const SchedulerOutput output = driver.scheduler.schedule();
  EXPECT_EQ(entries(output), (std::vector<Entry>{{1, 8, 8, false}}));
  const std::unique_ptr<Request> running = driver.scheduler.finish(1);
  ASSERT_NE(running, nullptr);
  EXPECT_EQ(running->num_computed_tokens, 8);
  EXPECT_EQ(driver.kv.n_free_blocks(), driver.kv.n_blocks());
  driver.scheduler.update(output, {});
  EXPECT_EQ(driver.scheduler.finish(1), nullptr);
  EXPECT_EQ(driver.scheduler.finish(12345), nullptr);

  EXPECT_EQ(driver.scheduler.n_running(), 0);
  EXPECT_EQ(driver.scheduler.n_waiting(), 1);
  EXPECT_EQ(driver.scheduler.finish(2)->status, RequestStatus::kFinished);
  EXPECT_FALSE(driver.scheduler.has_requests());
  EXPECT_EQ(driver.kv.n_free_blocks(), driver.kv.n_blocks());
}

TEST(SchedulerTest, NeverSchedulesPastTheContext) {
  // Driven by hand, with nobody finishing the request at the context's end.
  SchedulerDriver driver({.max_batched_tokens = 64, .max_running = 2, .max_model_len = 8}, 16, 4);
  ASSERT_TRUE(driver.add({.id = 1, .prompt = iota_tokens(7), .max_tokens = 100}).ok());
  Scheduler& scheduler = driver.scheduler;
  SchedulerOutput output = scheduler.schedule();
  EXPECT_EQ(entries(output), (std::vector<Entry>{{1, 0, 7, true}}));
  scheduler.update(output, std::vector<SampledTokenUpdate>{{.id = 1, .token = 70}});
  output = scheduler.schedule();  // position 7 is the context's last
  EXPECT_EQ(entries(output), (std::vector<Entry>{{1, 7, 1, true}}));
  scheduler.update(output, std::vector<SampledTokenUpdate>{{.id = 1, .token = 71}});
  EXPECT_TRUE(scheduler.schedule().empty());
  EXPECT_EQ(scheduler.find(1)->num_computed_tokens, 8);
}

TEST(SchedulerTest, UpdateAppliesAStepOnce) {
  SchedulerDriver driver({.max_batched_tokens = 64, .max_running = 2, .max_model_len = 64}, 16, 4);
  ASSERT_TRUE(driver.add({.id = 1, .prompt = iota_tokens(6), .max_tokens = 4}).ok());
  const SchedulerOutput output = driver.scheduler.schedule();
  const std::vector<SampledTokenUpdate> sampled = {{.id = 1, .token = 7}, {.id = 99, .token = 3}};
  driver.scheduler.update(output, sampled);
  driver.scheduler.update(output, sampled);
  const Request& request = *driver.scheduler.find(1);
  EXPECT_EQ(request.num_computed_tokens, 6);
  EXPECT_EQ(request.tokens, (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7}));
  // A token for a request that still has a token to run is not due: ignored.
  driver.scheduler.update({}, std::vector<SampledTokenUpdate>{{.id = 1, .token = 8}});
  EXPECT_EQ(request.num_tokens(), 7);
  EXPECT_EQ(entries(driver.scheduler.schedule()), (std::vector<Entry>{{1, 6, 1, true}}));
}

}  // namespace
}  // namespace pagoda::engine
