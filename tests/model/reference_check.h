#pragma once
// Compares our log-probabilities with the reference's recorded top-k lists
// (tests/data/reference/{generation,scoring}/*.json, see tests/data/README.md).
//
// Rules, for a tolerance `tol` on log-probabilities:
//   - every token the reference lists has our log-probability within tol of its own;
//   - the top-k sets agree wherever the gap between candidates exceeds the tolerance:
//     a token in our top k that the reference does not list must be within tol of the
//     reference's k-th value (it may have fallen just outside its list), and our
//     greedy choice must be within tol of the reference's best;
//   - the mean error over every compared value stays well under tol (checked by the
//     caller from the stats), so that a systematic error cannot hide under a tolerance
//     sized for rare rounding flips.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_data.h"

namespace pagoda::model::testing {

inline nlohmann::json read_reference(const std::string& relative_path) {
  const std::string path = ::pagoda::testing::reference_path(relative_path);
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  if (!in.good()) return nlohmann::json::object();
  return nlohmann::json::parse(in);
}

// Errors seen across a whole reference file.
struct ErrorStats {
  double max_abs = 0.0;
  double sum_abs = 0.0;
  int64_t count = 0;

  void add(double error) {
    max_abs = std::max(max_abs, error);
    sum_abs += error;
    ++count;
  }
  double mean_abs() const { return count == 0 ? 0.0 : sum_abs / static_cast<double>(count); }
  std::string summary() const {
    std::ostringstream s;
    s << count << " log-probabilities, max error " << max_abs << ", mean error " << mean_abs();
    return s.str();
  }
};

// The ids of the k largest values, largest first.
inline std::vector<int32_t> top_k(const std::vector<double>& log_probs, size_t k) {
  std::vector<int32_t> ids(log_probs.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  k = std::min(k, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(),
                    [&](int32_t a, int32_t b) { return log_probs[a] > log_probs[b]; });
  ids.resize(k);
  return ids;
}

// Checks one position: `ours` is the log-softmax over the vocabulary, `top` the
// reference's [[id, logprob], ...] list, best first.
inline void expect_matches_top(const std::vector<double>& ours, const nlohmann::json& top,
                               double tol, const std::string& where, ErrorStats& stats) {
  ASSERT_FALSE(top.empty()) << where;
  std::vector<int32_t> ref_ids;
  for (const auto& entry : top) {
    const int32_t id = entry[0].get<int32_t>();
    const double ref = entry[1].get<double>();
    ASSERT_GE(id, 0) << where;
    ASSERT_LT(static_cast<size_t>(id), ours.size()) << where;
    const double error = std::abs(ours[id] - ref);
    stats.add(error);
    EXPECT_LE(error, tol) << where << ": token " << id << " log-prob " << ours[id]
                          << ", reference " << ref;
    ref_ids.push_back(id);
  }
  const double ref_best = top.front()[1].get<double>();
  const double ref_last = top.back()[1].get<double>();
  for (const int32_t id : top_k(ours, ref_ids.size())) {
    if (std::find(ref_ids.begin(), ref_ids.end(), id) != ref_ids.end()) continue;
    EXPECT_LE(ours[id], ref_last + tol)
        << where << ": token " << id << " is in our top " << ref_ids.size() << " at "
        << ours[id] << ", far above the reference's last listed value " << ref_last;
  }
  const int32_t best = top_k(ours, 1).front();
  EXPECT_GE(ours[best] - ref_best, -tol) << where;
  EXPECT_LE(ours[best] - ref_best, tol)
      << where << ": our best token " << best << " is at " << ours[best]
      << ", the reference's best at " << ref_best;
}

}  // namespace pagoda::model::testing
