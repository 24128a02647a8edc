#include "sampling/stages.h"

#include <algorithm>
#include <cmath>

#include "core/exp_sum.h"

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

// weights[j] = softmax_exp(items[j].logit - max): the weights top-p walks, by exp_sum
// (vectorized; with scale 1 its operations are these). weights: [items.size()].
void head_weights(std::span<const Candidate> items, float max, std::span<float> weights) {
  for (size_t j = 0; j < items.size(); ++j) weights[j] = items[j].logit;
  exp_sum(weights.data(), static_cast<int64_t>(items.size()), max, 1.0f, weights.data());
}

// Brings to the front of `rest` (unsorted, every token ranking after those before it),
// sorted, the tokens whose distance below `max` falls in the first bins (of an eighth
// each) whose weights pass `needed`, with room for the sums' rounding; returns how many
// it sorted (should the walk go past them, the caller calls it again on what is left).
// A flat distribution's long head is sorted alone, not the whole vocabulary. scratch:
// [rest.size()].
size_t sort_head_by_mass(std::span<Candidate> rest, float max, double needed, std::span<float> scratch) {
  constexpr int kBins = 256;
  const auto bin_of = [max](float logit) {
    const float t = (max - logit) * 8.0f;
    return t < static_cast<float>(kBins - 1) ? static_cast<int>(t) : kBins - 1;  // NaN: the last
  };
  head_weights(rest, max, scratch);
  double bin_mass[kBins] = {};
  bool any_nan = false;
  for (size_t j = 0; j < rest.size(); ++j) {
    bin_mass[bin_of(rest[j].logit)] += static_cast<double>(scratch[j]);
    any_nan = any_nan || std::isnan(rest[j].logit);
  }
  int last_bin = kBins - 1;
  double mass = 0.0;
  for (int b = 0; b < kBins && std::isfinite(needed); ++b) {
    mass += bin_mass[b];
    if (mass >= needed * (1.0 + 0x1p-20)) {
      last_bin = b;
      break;
    }
  }
  const auto head_end =
      std::partition(rest.begin(), rest.end(), [&](const Candidate& c) { return bin_of(c.logit) <= last_bin; });
  // With a NaN ranks_before orders nothing strictly, which std::sort may run past the
  // range on; a heap sort (partial_sort to the end) stays inside it.
  if (any_nan) {
    std::partial_sort(rest.begin(), head_end, head_end, ranks_before);
    std::partial_sort(head_end, rest.end(), rest.end(), ranks_before);
    return rest.size();
  }
  std::sort(rest.begin(), head_end, ranks_before);
  return static_cast<size_t>(head_end - rest.begin());
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
  const auto first = list.items.begin(), end = list.items.end();
  const size_t n = list.items.size();
  // Sorted, scratch holds the walk's weights already. Unsorted, the mass usually sits in
  // a few dozen tokens, so those are sorted first; past them, the head still to sort is
  // found before sorting (sort_head_by_mass). scratch[i] is then the weight of items[i]
  // for i below sorted_end.
  constexpr size_t kFirstHead = 64;
  size_t sorted_end = n;
  if (!list.sorted) {
    sorted_end = std::min(n, kFirstHead);
    std::partial_sort(first, first + static_cast<std::ptrdiff_t>(sorted_end), end, ranks_before);
    head_weights(list.items.first(sorted_end), max, scratch);
  }
  double mass = 0.0;
  for (size_t i = 0; i < n; ++i) {
    if (i == sorted_end) {
      const size_t sorted = sort_head_by_mass(list.items.subspan(i), max, target - mass, scratch.subspan(i));
      head_weights(list.items.subspan(i, sorted), max, scratch.subspan(i));
      sorted_end = i + sorted;
    }
    mass += static_cast<double>(scratch[i]);
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
