#include "sampling/stages.h"

#include <algorithm>
#include <cmath>

#include "core/exp_sum.h"
#include "core/softmax_exp.h"

namespace pagoda {
namespace {

float max_logit(const CandidateList& list) {
  if (list.sorted) return list.items.front().logit;
  float best = -INFINITY;
  for (const Candidate& c : list.items) best = std::max(best, c.logit);
  return best;
}

// The list's logits into scratch, then their unnormalized softmax at `temperature` in
// place (exp_sum: vectorized); returns its sum.
double softmax_weights(const CandidateList& list, float max, float temperature, std::span<float> scratch) {
  const size_t n = list.items.size();
  for (size_t i = 0; i < n; ++i) scratch[i] = list.items[i].logit;
  return exp_sum(scratch.data(), static_cast<int64_t>(n), max, 1.0f / temperature, scratch.data());
}

}  // namespace

void apply_top_k(CandidateList& list, int32_t k) {
  if (k <= 0 || static_cast<size_t>(k) >= list.items.size()) return;
  auto first = list.items.begin();
  std::partial_sort(first, first + k, list.items.end(), ranks_before);
  list.items = list.items.first(static_cast<size_t>(k));
  list.sorted = true;
}

void apply_top_p(CandidateList& list, float p, std::span<float> scratch) {
  if (p >= 1.0f || list.items.size() <= 1) return;
  const float max = max_logit(list);
  const double target = static_cast<double>(p) * softmax_weights(list, max, 1.0f, scratch);
  auto first = list.items.begin();
  const size_t n = list.items.size();
  // Sort a head, grow it fourfold while its mass falls short: the mass usually sits in
  // a few dozen tokens, so a full sort of the vocabulary is rarely needed.
  size_t sorted_end = list.sorted ? n : 0;
  size_t head = std::min<size_t>(n, 64);
  double mass = 0.0;
  for (size_t i = 0; i < n; ++i) {
    if (i == sorted_end) {
      std::partial_sort(first + i, first + head, list.items.end(), ranks_before);
      sorted_end = head;
      head = std::min(n, head * 4);
    }
    mass += static_cast<double>(softmax_exp(list.items[i].logit - max));  // the weights' exp
    if (mass >= target) {
      list.items = list.items.first(i + 1);
      list.sorted = true;
      return;
    }
  }
  list.sorted = true;  // rounding left the mass a hair short: everything stays, now sorted
}

void apply_min_p(CandidateList& list, float min_p) {
  if (min_p <= 0.0f) return;
  apply_log_min_p(list, std::log(min_p));
}

void apply_log_min_p(CandidateList& list, float log_min_p) {
  if (!(log_min_p > -INFINITY) || list.items.empty()) return;
  const float threshold = max_logit(list) + log_min_p;
  size_t kept = 0;
  for (const Candidate& c : list.items) {
    if (c.logit >= threshold) list.items[kept++] = c;
  }
  list.items = list.items.first(kept);  // the best candidate always passes
}

size_t best_index(const CandidateList& list) {
  if (list.sorted) return 0;
  size_t best = 0;
  for (size_t i = 1; i < list.items.size(); ++i) {
    if (ranks_before(list.items[i], list.items[best])) best = i;
  }
  return best;
}

size_t sample_index(const CandidateList& list, float temperature, double uniform, std::span<float> scratch) {
  const double total = softmax_weights(list, max_logit(list), temperature, scratch);
  return draw_index(scratch.first(list.items.size()), total, uniform);
}

}  // namespace pagoda
