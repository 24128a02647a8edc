// TimedChoice (backend/cpu/matmul/timed_choice.h): both ways first, then the cheaper one,
// the other one call in kExploreEvery (kExploreEveryFar where it costs over kFarRatio
// times as much), and a change of costs followed.

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
  // Calls 16 to 175: those at multiples of 16 try the other way.
  TimedChoice choice;
  run(choice, 2 * TimedChoice::kFirstSamples, 1.2, 1.0);
  EXPECT_EQ(run(choice, 160, 1.2, 1.0), 150);
  TimedChoice other;
  run(other, 2 * TimedChoice::kFirstSamples, 1.0, 1.2);
  EXPECT_FALSE(other.prefers_second());
  EXPECT_EQ(run(other, 160, 1.0, 1.2), 10);
}

TEST(TimedChoice, TriesAFarDearerWayOneCallInSixtyFour) {
  // Twice the cost: calls 64 and 128 of 16 to 175 try it.
  TimedChoice choice;
  run(choice, 2 * TimedChoice::kFirstSamples, 2.0, 1.0);
  EXPECT_EQ(run(choice, 160, 2.0, 1.0), 158);
  TimedChoice other;
  run(other, 2 * TimedChoice::kFirstSamples, 1.0, 2.0);
  EXPECT_EQ(run(other, 160, 1.0, 2.0), 2);
}

TEST(TimedChoice, FollowsWhenTheCostsChange) {
  TimedChoice choice;
  run(choice, 2 * TimedChoice::kFirstSamples + 160, 2.0, 1.0);
  ASSERT_TRUE(choice.prefers_second());
  // The second way now costs three times the first: its own calls see it at once.
  run(choice, 64, 1.0, 3.0);
  EXPECT_FALSE(choice.prefers_second());
  // The other way is tried one call in 16 while the first's average comes down from
  // what it was, then one in 64.
  const int tries = run(choice, 160, 1.0, 3.0);
  EXPECT_GE(tries, 2);
  EXPECT_LE(tries, 10);
  EXPECT_FALSE(choice.prefers_second());
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
