#include "engine/stop_checker.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace pagoda::engine {
namespace {

constexpr int32_t kEos = 2;
constexpr int32_t kEot = 7;
constexpr int32_t kText = 100;  // any ordinary token

StopChecker make_checker(std::vector<std::string> stops, int32_t max_tokens = 100,
                         bool ignore_eog = false) {
  StopConditions conditions;
  conditions.max_tokens = max_tokens;
  conditions.stop_strings = std::move(stops);
  conditions.ignore_eog = ignore_eog;
  Expected<StopChecker> checker = StopChecker::create(
      std::move(conditions), [](int32_t token) { return token == kEos || token == kEot; });
  EXPECT_TRUE(checker.ok()) << checker.status().message();
  return std::move(checker).value();
}

// Feeds pieces as ordinary tokens; returns what each call released.
std::vector<std::string> feed(StopChecker& checker, const std::vector<std::string>& pieces) {
  std::vector<std::string> released;
  for (const std::string& piece : pieces) released.emplace_back(checker.push(kText, piece).text);
  return released;
}

TEST(StopChecker, StopStringSpanningTokensCutsTheOutputBeforeIt) {
  StopChecker checker = make_checker({"###"});
  EXPECT_EQ(feed(checker, {"Hello #", "#"}), (std::vector<std::string>{"Hello ", ""}));
  const StopUpdate last = checker.push(kText, "# world");
  EXPECT_EQ(last.text, "");
  EXPECT_EQ(last.finish, FinishReason::kStop);
  EXPECT_EQ(checker.finish(), FinishReason::kStop);
  EXPECT_EQ(checker.push(kText, "more").text, "");  // finished: nothing more comes out
  EXPECT_EQ(checker.n_generated(), 3);
}

TEST(StopChecker, HeldBackTextIsReleasedWhenTheMatchFails) {
  StopChecker checker = make_checker({"###"});
  EXPECT_EQ(feed(checker, {"a#", "#", "b", "c"}), (std::vector<std::string>{"a", "", "##b", "c"}));
  EXPECT_EQ(checker.finish(), FinishReason::kNone);
}

TEST(StopChecker, StopStringInsideOneTokenKeepsTheTextBeforeIt) {
  StopChecker checker = make_checker({"</s>", "\n\n"});
  const StopUpdate update = checker.push(kText, "abc</s>def");
  EXPECT_EQ(update.text, "abc");
  EXPECT_EQ(update.finish, FinishReason::kStop);
}

TEST(StopChecker, TheEarliestOfSeveralStopStringsWins) {
  StopChecker checker = make_checker({"world", "lo w", "xyz"});
  EXPECT_EQ(feed(checker, {"hel"}), (std::vector<std::string>{"he"}));  // "l" may start "lo w"
  const StopUpdate update = checker.push(kText, "lo world");
  EXPECT_EQ(update.text, "l");
  EXPECT_EQ(update.finish, FinishReason::kStop);
}

TEST(StopChecker, OverlappingPrefixesHoldTheLongestPossibleStart) {
  StopChecker checker = make_checker({"abab"});
  // "xaba" could be the start of "abab" from its 'a' at 1 ("aba"); after "b" it is a match.
  EXPECT_EQ(feed(checker, {"xaba"}), (std::vector<std::string>{"x"}));
  const StopUpdate update = checker.push(kText, "b!");
  EXPECT_EQ(update.text, "");
  EXPECT_EQ(update.finish, FinishReason::kStop);
}

TEST(StopChecker, EndOfGenerationTokensStopWithoutTheirText) {
  for (int32_t eog : {kEos, kEot}) {
    StopChecker checker = make_checker({"###"});
    EXPECT_EQ(feed(checker, {"ok #"}), (std::vector<std::string>{"ok "}));
    const StopUpdate update = checker.push(eog, "</s>");
    EXPECT_EQ(update.text, "#");  // held text that never became a stop string
    EXPECT_EQ(update.finish, FinishReason::kStop);
  }
}

TEST(StopChecker, IgnoreEogTreatsEogTokensAsText) {
  StopChecker checker = make_checker({}, 100, /*ignore_eog=*/true);
  const StopUpdate update = checker.push(kEos, "</s>");
  EXPECT_EQ(update.text, "</s>");
  EXPECT_EQ(update.finish, FinishReason::kNone);
}

TEST(StopChecker, MaxTokensEndsWithLengthAndReleasesHeldText) {
  StopChecker checker = make_checker({"###"}, 3);
  EXPECT_EQ(feed(checker, {"a", "b"}), (std::vector<std::string>{"a", "b"}));
  const StopUpdate update = checker.push(kText, "c#");
  EXPECT_EQ(update.text, "c#");
  EXPECT_EQ(update.finish, FinishReason::kLength);
  EXPECT_EQ(finish_reason_name(update.finish), "length");
}

TEST(StopChecker, AStopStringCompletedByTheLastAllowedTokenStillStops) {
  StopChecker checker = make_checker({"##"}, 2);
  EXPECT_EQ(feed(checker, {"a#"}), (std::vector<std::string>{"a"}));
  EXPECT_EQ(checker.push(kText, "#").finish, FinishReason::kStop);
}

TEST(StopChecker, FlushReleasesWhatIsHeld) {
  StopChecker checker = make_checker({"###"});
  EXPECT_EQ(feed(checker, {"x##"}), (std::vector<std::string>{"x"}));
  EXPECT_EQ(checker.flush(), "##");
  EXPECT_EQ(checker.flush(), "");
}

TEST(StopChecker, RejectsBadConditions) {
  StopConditions no_tokens;
  no_tokens.max_tokens = 0;
  EXPECT_FALSE(StopChecker::create(no_tokens, nullptr).ok());
  StopConditions empty_stop;
  empty_stop.stop_strings = {"ok", ""};
  EXPECT_FALSE(StopChecker::create(empty_stop, nullptr).ok());
}

}  // namespace
}  // namespace pagoda::engine
