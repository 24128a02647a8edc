// TimedChoice (backend/cpu/matmul/timed_choice.h): both ways first, then the cheaper one,
// the other one call in kExploreEvery, and a change of costs followed.

#include "backend/cpu/matmul/timed_choice.h"

#include <gtest/gtest.h>

namespace pagoda::backend::cpu {
namespace {

// Runs `calls` calls whose way costs `first` / `second` seconds per byte; returns how
// many took the second way.
int run(TimedChoice& choice, int calls, double first, double second) {
  int seconds = 0;
  for (int i = 0; i < calls; ++i) {
    const bool way = choice.second();
    seconds += way ? 1 : 0;
    choice.record(way, (way ? second : first) * 1000.0, 1000);
  }
  return seconds;
}

TEST(TimedChoice, TriesBothWaysInTurnFirst) {
  TimedChoice choice;
  for (int64_t i = 0; i < 2 * TimedChoice::kFirstSamples; ++i) {
    const bool way = choice.second();
    EXPECT_EQ(way, i % 2 == 1) << "call " << i;
    EXPECT_FALSE(choice.prefers_second()) << "no preference before both ways have their samples";
    choice.record(way, way ? 1.0 : 2.0, 1);
  }
  EXPECT_TRUE(choice.prefers_second());
}

TEST(TimedChoice, RunsTheCheaperWayAndTheOtherOneCallInSixteen) {
  TimedChoice choice;
  run(choice, 2 * TimedChoice::kFirstSamples, 2.0, 1.0);
  EXPECT_EQ(run(choice, 160, 2.0, 1.0), 150);
  TimedChoice other;
  run(other, 2 * TimedChoice::kFirstSamples, 1.0, 2.0);
  EXPECT_FALSE(other.prefers_second());
  EXPECT_EQ(run(other, 160, 1.0, 2.0), 10);
}

TEST(TimedChoice, FollowsWhenTheCostsChange) {
  TimedChoice choice;
  run(choice, 2 * TimedChoice::kFirstSamples + 160, 2.0, 1.0);
  ASSERT_TRUE(choice.prefers_second());
  // The second way now costs three times the first: its own calls see it at once.
  run(choice, 64, 1.0, 3.0);
  EXPECT_FALSE(choice.prefers_second());
  EXPECT_EQ(run(choice, 160, 1.0, 3.0), 10);
}

TEST(TimedChoice, IgnoresEmptyAndInvalidSamples) {
  TimedChoice choice;
  run(choice, 2 * TimedChoice::kFirstSamples, 2.0, 1.0);
  ASSERT_TRUE(choice.prefers_second());
  for (int i = 0; i < 100; ++i) {
    choice.record(true, 1.0e9, 0);
    choice.record(true, -1.0, 1000);
  }
  EXPECT_TRUE(choice.prefers_second());
}

}  // namespace
}  // namespace pagoda::backend::cpu
