// Scheduler under KV pressure and sharing: preemption by recompute, prefix-cache hits,
// n completions forked from their parent's blocks. Every run is checked against the
// same requests run with nothing constraining them (scheduler_driver.h).
#include <gtest/gtest.h>

#include <numeric>
#include <set>
#include <utility>
#include <vector>

#include "engine/scheduler.h"
#include "scheduler_driver.h"

namespace pagoda::engine {
namespace {

using testing::RequestSpec;
using testing::SchedulerDriver;
using testing::unconstrained_tokens;

std::vector<int32_t> iota_tokens(int32_t n, int32_t start = 1) {
  std::vector<int32_t> tokens(static_cast<size_t>(n));
  std::iota(tokens.begin(), tokens.end(), start);
  return tokens;
}

void expect_clean_end(const SchedulerDriver& driver) {
  EXPECT_TRUE(driver.violations.empty()) << driver.violations.front();
  EXPECT_FALSE(driver.scheduler.has_requests());
  EXPECT_EQ(driver.kv.n_free_blocks(), driver.kv.n_blocks());
  EXPECT_EQ(driver.runner.n_bad_rows(), 0);
  EXPECT_EQ(driver.runner.n_uncovered_entries(), 0);
}

// Two requests of 8 + 12 tokens in 6 blocks of 4: each fits alone (19 positions, 5
// blocks), together they run out when the first needs its 4th block at position 12.
class SchedulerPreemptionTest : public ::testing::Test {
 protected:
  static constexpr SchedulerConfig kConfig{
      .max_batched_tokens = 64, .max_running = 4, .max_model_len = 64};
  std::vector<RequestSpec> specs(int32_t priority_1, int32_t priority_2) const {
    return {{.id = 1,
             .prompt = iota_tokens(8, 1),
             .max_tokens = 12,
             .priority = priority_1,
             .seed = 11},
            {.id = 2,
             .prompt = iota_tokens(8, 50),
             .max_tokens = 12,
             .priority = priority_2,
             .seed = 22}};
  }
};

TEST_F(SchedulerPreemptionTest, PreemptsTheLatestArrivalAndResumesItWithTheSameResult) {
  SchedulerDriver driver(kConfig, 6, 4);
  for (const RequestSpec& spec : specs(0, 0)) ASSERT_TRUE(driver.add(spec).ok());
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(driver.step().preempted.empty()) << "step " << i;
  const SchedulerOutput preempting = driver.step();
  EXPECT_EQ(preempting.preempted, (std::vector<RequestId>{2}));
  ASSERT_EQ(preempting.scheduled.size(), 1u);
  EXPECT_EQ(preempting.scheduled[0].id, 1u);
  EXPECT_EQ(preempting.scheduled[0].first_position, 12);
  const Request& preempted = *driver.scheduler.find(2);
  EXPECT_EQ(preempted.status, RequestStatus::kWaiting);
  EXPECT_EQ(preempted.num_computed_tokens, 0);
  EXPECT_EQ(preempted.n_preemptions, 1);
  EXPECT_EQ(preempted.num_tokens(), 13);  // its generated tokens are kept

  ASSERT_TRUE(driver.run_until_idle());
  expect_clean_end(driver);
  EXPECT_EQ(driver.finished_tokens(), unconstrained_tokens(specs(0, 0)));
  EXPECT_EQ(driver.scheduler.stats().n_preemptions, 1);
  // Request 2 resumes once request 1 is done. Request 1 took two of its three freed
  // blocks (the end of its chain goes first), so the recompute starts after the one
  // block still cached: tokens [4, 13) of its 13.
  bool resumed = false;
  for (const SchedulerOutput& output : driver.outputs) {
    for (const ScheduledRequest& entry : output.scheduled) {
      if (entry.id == 2 && entry.n_tokens > 1 && entry.first_position > 0) {
        EXPECT_EQ(entry.first_position, 4);
        EXPECT_EQ(entry.n_tokens, 9);
        resumed = true;
      }
    }
  }
  EXPECT_TRUE(resumed);
  // Prefill: both prompts, then the recompute; everything else is one decode each.
  EXPECT_EQ(driver.scheduler.stats().n_prefilled_tokens, 8 + 8 + 9);
  // Decodes: request 1's positions 8..18; request 2's 8..11, then 13..18 after the
  // recompute (which ran position 12).
  EXPECT_EQ(driver.scheduler.stats().n_decoded_tokens, (19 - 8) + 4 + (19 - 13));
  EXPECT_EQ(driver.finished.at(2)->n_preemptions, 1);
  EXPECT_EQ(driver.finished.at(2)->n_cached_prompt_tokens, 0);  // set at first admission only
}

TEST_F(SchedulerPreemptionTest, APreemptedRequestKeepsItsPlaceInTheQueue) {
  // Request 3 arrives after request 2 and waits for a running slot. When request 1
  // finishes, the blocks hold request 2's resume or request 3, not both: request 2,
  // the earlier arrival, goes first.
  SchedulerConfig config = kConfig;
  config.max_running = 2;
  SchedulerDriver driver(config, 6, 4);
  std::vector<RequestSpec> three = specs(0, 0);
  three.push_back({.id = 3, .prompt = iota_tokens(16, 80), .max_tokens = 2, .seed = 33});
  for (const RequestSpec& spec : three) ASSERT_TRUE(driver.add(spec).ok());
  while (!driver.finished.contains(1)) ASSERT_LT(driver.step().n_tokens, 64);
  EXPECT_EQ(driver.scheduler.stats().n_preemptions, 1);
  const SchedulerOutput resume = driver.step();
  ASSERT_EQ(resume.scheduled.size(), 1u);
  EXPECT_EQ(resume.scheduled[0].id, 2u);
  EXPECT_EQ(resume.scheduled[0].first_position, 4);
  ASSERT_TRUE(driver.run_until_idle());
  expect_clean_end(driver);
  EXPECT_EQ(driver.finished_tokens(), unconstrained_tokens(three));
}

TEST_F(SchedulerPreemptionTest, PreemptsTheLowestPriorityEvenIfItCameFirst) {
  SchedulerDriver driver(kConfig, 6, 4);
  for (const RequestSpec& spec : specs(1, 0)) ASSERT_TRUE(driver.add(spec).ok());
  for (int i = 0; i < 5; ++i) driver.step();
  EXPECT_EQ(driver.step().preempted, (std::vector<RequestId>{1}));
  ASSERT_TRUE(driver.run_until_idle());
  expect_clean_end(driver);
  EXPECT_EQ(driver.finished_tokens(), unconstrained_tokens(specs(1, 0)));
  EXPECT_EQ(driver.finished.at(1)->n_preemptions, 1);
  EXPECT_EQ(driver.finished.at(2)->n_preemptions, 0);
}

TEST_F(SchedulerPreemptionTest, ALaterHigherPriorityRequestIsPreemptedLast) {
  // Request 1 (priority 1) runs alone for a step; request 2 (priority 0) joins it.
  // When request 1 needs a block at position 12, it is the victim, not request 2.
  SchedulerDriver driver(kConfig, 6, 4);
  const std::vector<RequestSpec> two = specs(1, 0);
  ASSERT_TRUE(driver.add(two[0]).ok());
  driver.step();
  ASSERT_TRUE(driver.add(two[1]).ok());
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(driver.step().preempted.empty());
  const SchedulerOutput output = driver.step();
  EXPECT_EQ(output.preempted, (std::vector<RequestId>{1}));
  ASSERT_EQ(output.scheduled.size(), 1u);
  EXPECT_EQ(output.scheduled[0].id, 2u);  // served first since it was admitted
  ASSERT_TRUE(driver.run_until_idle());
  expect_clean_end(driver);
  EXPECT_EQ(driver.finished_tokens(), unconstrained_tokens(two));
}

TEST_F(SchedulerPreemptionTest, ARequestThatCannotGrowPreemptsItself) {
  // 5 blocks: the two prompts take 4. At the first decode request 2 (first in priority)
  // takes the last block; request 1, last in the queue, is its own victim.
  SchedulerDriver driver(kConfig, 5, 4);
  std::vector<RequestSpec> two = specs(1, 0);
  two[1].max_tokens = 4;  // request 2: 8 + 4 tokens, 3 blocks
  for (const RequestSpec& spec : two) ASSERT_TRUE(driver.add(spec).ok());
  driver.step();
  const SchedulerOutput output = driver.step();
  EXPECT_EQ(output.preempted, (std::vector<RequestId>{1}));
  ASSERT_EQ(output.scheduled.size(), 1u);
  EXPECT_EQ(output.scheduled[0].id, 2u);
  EXPECT_EQ(driver.scheduler.n_running(), 1);
  ASSERT_TRUE(driver.run_until_idle());
  expect_clean_end(driver);
  EXPECT_EQ(driver.finished_tokens(), unconstrained_tokens(two));
}

TEST(SchedulerPrefixTest, HitsSkipCachedTokens) {
  SchedulerDriver driver({.max_batched_tokens = 64, .max_running = 4, .max_model_len = 64}, 32, 4);
  const std::vector<int32_t> prompt = iota_tokens(18);
  std::vector<int32_t> diverging = prompt;
  std::fill(diverging.begin() + 13, diverging.end(), 999);
  std::vector<RequestSpec> specs = {
      {.id = 1, .prompt = prompt, .max_tokens = 2, .seed = 1},
      {.id = 2, .prompt = diverging, .max_tokens = 2, .seed = 2},  // shares 13 tokens: 3 blocks
      {.id = 3, .prompt = prompt, .max_tokens = 2, .seed = 3, .cache_salt = 7},  // another salt
      {.id = 4, .prompt = prompt, .max_tokens = 2, .seed = 4},  // all but the last token's block
  };
  ASSERT_TRUE(driver.add(specs[0]).ok());
  ASSERT_TRUE(driver.run_until_idle());
  const int32_t expected_cached[] = {0, 12, 0, 16};
  int64_t prefilled = driver.scheduler.stats().n_prefilled_tokens;
  EXPECT_EQ(prefilled, 18);
  for (size_t i = 1; i < specs.size(); ++i) {
    ASSERT_TRUE(driver.add(specs[i]).ok());
    const SchedulerOutput first = driver.step();
    ASSERT_EQ(first.scheduled.size(), 1u);
    EXPECT_EQ(first.scheduled[0].first_position, expected_cached[i]) << "request " << specs[i].id;
    EXPECT_EQ(driver.scheduler.find(specs[i].id)->n_cached_prompt_tokens, expected_cached[i]);
    EXPECT_EQ(driver.scheduler.stats().n_prefilled_tokens - prefilled, 18 - expected_cached[i]);
    prefilled = driver.scheduler.stats().n_prefilled_tokens;
    ASSERT_TRUE(driver.run_until_idle());
  }
  expect_clean_end(driver);
  EXPECT_EQ(driver.finished_tokens(), unconstrained_tokens(specs));
}

TEST(SchedulerPrefixTest, NoHitsWithThePrefixCacheOff) {
  SchedulerDriver driver({.max_batched_tokens = 64, .max_running = 4, .max_model_len = 64}, 32, 4,
                         /*prefix_cache=*/false);
  ASSERT_TRUE(driver.add({.id = 1, .prompt = iota_tokens(18), .max_tokens = 2}).ok());
  ASSERT_TRUE(driver.run_until_idle());
  ASSERT_TRUE(driver.add({.id = 2, .prompt = iota_tokens(18), .max_tokens = 2}).ok());
  ASSERT_TRUE(driver.run_until_idle());
  EXPECT_EQ(driver.scheduler.stats().n_prefilled_tokens, 36);
  EXPECT_EQ(driver.finished.at(2)->n_cached_prompt_tokens, 0);
  expect_clean_end(driver);
}

// A parent and three children of a 10-token prompt in blocks of 4.
std::vector<RequestSpec> family(int32_t prompt_length) {
  std::vector<RequestSpec> specs;
  for (RequestId id = 1; id <= 4; ++id) {
    specs.push_back({.id = id,
                     .prompt = iota_tokens(prompt_length, 7),
                     .max_tokens = 6,
                     .seed = 100 + id,
                     .parent = id == 1 ? std::nullopt : std::optional<RequestId>(1)});
  }
  return specs;
}

TEST(SchedulerForkTest, ChildrenShareThePromptAndCopyTheDivergentBlockOnce) {
  SchedulerDriver driver({.max_batched_tokens = 64, .max_running = 8, .max_model_len = 64}, 32, 4);
  for (const RequestSpec& spec : family(10)) ASSERT_TRUE(driver.add(spec).ok());
  const SchedulerOutput prompt_step = driver.step();  // the children wait for the prompt
  ASSERT_EQ(prompt_step.scheduled.size(), 1u);
  EXPECT_EQ(prompt_step.scheduled[0].n_tokens, 10);
  EXPECT_EQ(driver.scheduler.n_waiting(), 3);

  const SchedulerOutput fork_step = driver.step();
  ASSERT_EQ(fork_step.scheduled.size(), 4u);
  const std::vector<kv::BlockId> parent_table(driver.kv.block_table(1).begin(),
                                              driver.kv.block_table(1).end());
  ASSERT_EQ(parent_table.size(), 3u);
  ASSERT_EQ(fork_step.block_copies.size(), 3u);
  std::set<kv::BlockId> copies;
  for (RequestId child = 2; child <= 4; ++child) {
    const ScheduledRequest& entry = fork_step.scheduled[child - 1];
    EXPECT_EQ(entry.id, child);
    EXPECT_EQ(entry.first_position, 9);  // the last prompt token, recomputed
    EXPECT_EQ(entry.n_tokens, 1);
    EXPECT_TRUE(entry.samples);
    const std::span<const kv::BlockId> table = driver.kv.block_table(child);
    ASSERT_EQ(table.size(), 3u);
    EXPECT_EQ(table[0], parent_table[0]);
    EXPECT_EQ(table[1], parent_table[1]);
    EXPECT_EQ(fork_step.block_copies[child - 2],
              (kv::BlockCopy{.src = parent_table[2], .dst = table[2]}));
    copies.insert(table[2]);
    EXPECT_EQ(driver.scheduler.find(child)->n_cached_prompt_tokens, 9);
  }
  EXPECT_EQ(copies.size(), 3u);
  EXPECT_FALSE(copies.contains(parent_table[2]));

  ASSERT_TRUE(driver.run_until_idle());
  size_t n_copies = 0;
  for (const SchedulerOutput& output : driver.outputs) n_copies += output.block_copies.size();
  EXPECT_EQ(n_copies, 3u);  // one per child, never again
  EXPECT_EQ(driver.scheduler.stats().n_prefilled_tokens, 10 + 3);
  expect_clean_end(driver);
  EXPECT_EQ(driver.finished_tokens(), unconstrained_tokens(family(10)));
}

TEST(SchedulerForkTest, ChildrenOfABlockAlignedPromptFinishWithTheirOwnTokens) {
  // The prompt fills two blocks: the parent's first decode opens a third one that the
  // children share and copy when they write into it.
  SchedulerDriver driver({.max_batched_tokens = 64, .max_running = 8, .max_model_len = 64}, 32, 4);
  for (const RequestSpec& spec : family(8)) ASSERT_TRUE(driver.add(spec).ok());
  ASSERT_TRUE(driver.run_until_idle());
  std::set<std::pair<kv::BlockId, kv::BlockId>> copies;
  size_t n_copies = 0;
  for (const SchedulerOutput& output : driver.outputs) {
    for (const kv::BlockCopy& copy : output.block_copies)
      copies.insert({copy.src, copy.dst}), ++n_copies;
  }
  EXPECT_GE(n_copies, 3u);
  EXPECT_EQ(driver.scheduler.stats().n_prefilled_tokens, 8 + 3);
  expect_clean_end(driver);
  EXPECT_EQ(driver.finished_tokens(), unconstrained_tokens(family(8)));
}

TEST(SchedulerForkTest, ChildOfAFinishedParentRunsOnItsOwnFromTheCache) {
  // One running slot: the parent runs to its end before a child can be admitted.
  SchedulerDriver driver({.max_batched_tokens = 64, .max_running = 1, .max_model_len = 64}, 32, 4);
  const std::vector<RequestSpec> specs = family(10);
  for (const RequestSpec& spec : specs) ASSERT_TRUE(driver.add(spec).ok());
  ASSERT_TRUE(driver.run_until_idle());
  for (RequestId child = 2; child <= 4; ++child) {
    EXPECT_EQ(driver.finished.at(child)->n_cached_prompt_tokens, 8);  // two full blocks
  }
  for (const SchedulerOutput& output : driver.outputs) EXPECT_TRUE(output.block_copies.empty());
  EXPECT_EQ(driver.scheduler.stats().n_prefilled_tokens, 10 + 3 * 2);
  expect_clean_end(driver);
  EXPECT_EQ(driver.finished_tokens(), unconstrained_tokens(specs));
}

TEST(SchedulerForkTest, AWaitingChildDoesNotHoldBackLaterRequests) {
  SchedulerDriver driver({.max_batched_tokens = 64, .max_running = 8, .max_model_len = 64}, 32, 4);
  std::vector<RequestSpec> specs = family(10);
  specs.resize(2);
  specs.push_back({.id = 9, .prompt = iota_tokens(5, 70), .max_tokens = 2, .priority = 1});
  for (const RequestSpec& spec : specs) ASSERT_TRUE(driver.add(spec).ok());
  const SchedulerOutput first = driver.step();
  ASSERT_EQ(first.scheduled.size(), 2u);
  EXPECT_EQ(first.scheduled[0].id, 1u);
  EXPECT_EQ(first.scheduled[1].id, 9u);
  ASSERT_TRUE(driver.run_until_idle());
  expect_clean_end(driver);
  EXPECT_EQ(driver.finished_tokens(), unconstrained_tokens(specs));
}

TEST(SchedulerForkTest, AChildWhoseParentMovedOnStartsFromTheCache) {
  // Two running slots: child 3 gets one only when child 2 is done, by which time the
  // parent has blocks the child does not need; it starts from the cached prompt blocks.
  SchedulerDriver driver({.max_batched_tokens = 64, .max_running = 2, .max_model_len = 64}, 32, 4);
  std::vector<RequestSpec> specs = family(10);
  specs.resize(3);
  specs[0].max_tokens = 10;
  specs[1].max_tokens = 2;
  specs[2].max_tokens = 2;
  for (const RequestSpec& spec : specs) ASSERT_TRUE(driver.add(spec).ok());
  driver.step();                                     // the parent's prompt
  EXPECT_EQ(driver.step().block_copies.size(), 1u);  // child 2 forks
  driver.step();                                     // child 2 finishes
  EXPECT_TRUE(driver.finished.contains(2));
  const SchedulerOutput output = driver.step();
  ASSERT_EQ(output.scheduled.size(), 2u);
  EXPECT_EQ(output.scheduled[1].id, 3u);
  EXPECT_EQ(output.scheduled[1].first_position, 8);  // two cached blocks
  EXPECT_EQ(output.scheduled[1].n_tokens, 2);
  EXPECT_TRUE(output.block_copies.empty());
  ASSERT_TRUE(driver.run_until_idle());
  EXPECT_EQ(driver.finished.at(3)->n_cached_prompt_tokens, 8);
  expect_clean_end(driver);
  EXPECT_EQ(driver.finished_tokens(), unconstrained_tokens(specs));
}

TEST(SchedulerForkTest, AChildOfAPreemptedParentRunsOnItsOwn) {
  // 6 blocks. Request 1 (priority 0) and the parent 2 (priority 1) take 3 each at
  // their first decode; child 3 (priority 0, ahead of its parent in the queue) cannot
  // get the block its fork must copy. When request 1 needs a block, the parent is
  // preempted; the child then starts from the parent's one cached block that is left.
  SchedulerDriver driver({.max_batched_tokens = 64, .max_running = 4, .max_model_len = 64}, 6, 4);
  const std::vector<RequestSpec> specs = {
      {.id = 1, .prompt = iota_tokens(8, 1), .max_tokens = 12, .priority = 0, .seed = 1},
      {.id = 2, .prompt = iota_tokens(8, 50), .max_tokens = 12, .priority = 1, .seed = 2},
      {.id = 3,
       .prompt = iota_tokens(8, 50),
       .max_tokens = 4,
       .priority = 0,
       .seed = 3,
       .parent = 2}};
  for (const RequestSpec& spec : specs) ASSERT_TRUE(driver.add(spec).ok());
  for (int i = 0; i < 5; ++i) {
    for (const ScheduledRequest& entry : driver.step().scheduled) EXPECT_NE(entry.id, 3u);
  }
  EXPECT_EQ(driver.step().preempted, (std::vector<RequestId>{2}));
  const SchedulerOutput output = driver.step();
  ASSERT_EQ(output.scheduled.size(), 2u);
  EXPECT_EQ(output.scheduled[1].id, 3u);
  EXPECT_EQ(output.scheduled[1].first_position, 4);
  EXPECT_EQ(output.scheduled[1].n_tokens, 4);
  ASSERT_TRUE(driver.run_until_idle());
  expect_clean_end(driver);
  EXPECT_EQ(driver.finished_tokens(), unconstrained_tokens(specs));
}

TEST(SchedulerForkTest, AbortingTheParentLetsTheChildrenRunAndReturnsEveryBlock) {
  SchedulerDriver driver({.max_batched_tokens = 64, .max_running = 8, .max_model_len = 64}, 32, 4);
  const std::vector<RequestSpec> specs = family(10);
  for (const RequestSpec& spec : specs) ASSERT_TRUE(driver.add(spec).ok());
  driver.step();
  driver.step();  // the children forked
  driver.finish(1);
  driver.finish(3);
  ASSERT_TRUE(driver.run_until_idle());
  expect_clean_end(driver);
  const auto expected = unconstrained_tokens(specs);
  EXPECT_EQ(driver.finished_tokens().at(2), expected.at(2));
  EXPECT_EQ(driver.finished_tokens().at(4), expected.at(4));
}

}  // namespace
}  // namespace pagoda::engine
