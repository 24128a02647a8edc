// apply_top_p (sampling/stages.h) keeps exactly the list a plain reference keeps: every
// candidate sorted (larger logit first, lower id on a tie), the running sum in double of
// softmax_exp(logit - max) walked until it reaches p times the sum of the weights. Over
// lists of 2 to 49152 tokens whose mass sits in a few tokens, in thousands (a flat
// distribution, whose head is found by its bins of distance before it is sorted) or
// anywhere between; with ties, -inf entries, p from 0 to 0.999, and lists top-k sorted
// before.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/exp_sum.h"
#include "core/softmax_exp.h"
#include "sampling/stages.h"

namespace pagoda {
namespace {

// Every candidate in the sampler's order.
std::vector<Candidate> sorted_copy(std::vector<Candidate> items) {
  std::sort(items.begin(), items.end(), ranks_before);
  return items;
}

// The reference's kept length for `unsorted` (the list as apply_top_p gets it).
size_t reference_length(const std::vector<Candidate>& unsorted, float p) {
  std::vector<float> weights(unsorted.size());
  float max = -INFINITY;
  for (const Candidate& c : unsorted) max = std::max(max, c.logit);
  for (size_t i = 0; i < unsorted.size(); ++i) weights[i] = unsorted[i].logit;
  const double target = static_cast<double>(p) * exp_sum(weights.data(), static_cast<int64_t>(weights.size()), max,
                                                         1.0f, weights.data());
  const std::vector<Candidate> sorted = sorted_copy(unsorted);
  double mass = 0.0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    mass += static_cast<double>(softmax_exp(sorted[i].logit - max));
    if (mass >= target) return i + 1;
  }
  return sorted.size();
}

TEST(TopP, KeepsTheReferencesHeadOnEveryShapeOfDistribution) {
  std::mt19937 rng(7);
  int cases = 0, long_heads = 0;
  for (const int n : {2, 5, 64, 300, 5000, 49152}) {
    for (int c = 0; c < 30; ++c) {
      const float sigma = std::vector<float>{0.05f, 0.5f, 2.0f, 6.0f, 20.0f}[static_cast<size_t>(c % 5)];
      std::normal_distribution<float> normal(0.0f, sigma);
      std::vector<Candidate> items(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) items[static_cast<size_t>(i)] = Candidate{i, normal(rng)};
      if (c % 4 == 3) {
        for (Candidate& x : items) x.logit = std::round(x.logit * 4.0f) / 4.0f;  // ties
      }
      if (c % 7 == 6) {
        for (int i = 0; i < n; i += 3) items[static_cast<size_t>(i)].logit = -INFINITY;
      }
      const float p = std::vector<float>{0.0f, 0.1f, 0.5f, 0.9f, 0.95f, 0.999f}[static_cast<size_t>(c % 6)];
      const std::string what = "n " + std::to_string(n) + ", case " + std::to_string(c);
      const size_t want = reference_length(items, p);
      const std::vector<Candidate> sorted = sorted_copy(items);
      std::vector<Candidate> got_items = items;
      std::vector<float> scratch(items.size());
      CandidateList list{got_items, false};
      apply_top_p(list, p, scratch);
      ++cases;
      if (want > 64) ++long_heads;
      EXPECT_TRUE(list.sorted) << what;
      ASSERT_EQ(list.items.size(), want) << what;
      for (size_t i = 0; i < want; ++i) {
        ASSERT_EQ(list.items[i].token, sorted[i].token) << what << ", place " << i;
      }
    }
  }
  EXPECT_EQ(cases, 180);
  EXPECT_GT(long_heads, 30) << "the heads past the first 64 tokens are what the bins find";
}

TEST(TopP, ASortedListIsWalkedAsItIs) {
  // After top-k the list is sorted and its weights are those of its own order.
  std::mt19937 rng(8);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<Candidate> items(1000);
  for (int i = 0; i < 1000; ++i) items[static_cast<size_t>(i)] = Candidate{i, normal(rng)};
  std::sort(items.begin(), items.end(), ranks_before);
  items.resize(300);
  for (const float p : {0.2f, 0.6f, 0.97f}) {
    std::vector<Candidate> copy = items;
    std::vector<float> scratch(copy.size());
    CandidateList list{copy, true};
    apply_top_p(list, p, scratch);
    ASSERT_EQ(list.items.size(), reference_length(items, p)) << p;
    for (size_t i = 0; i < list.items.size(); ++i) EXPECT_EQ(list.items[i].token, items[i].token);
  }
}

}  // namespace
}  // namespace pagoda
