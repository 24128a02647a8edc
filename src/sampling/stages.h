#pragma once
// The truncation and sampling stages of the sampler, each a plain function over a list
// of candidate tokens, in the order the sampler runs them: top-k, top-p, min-p, then
// greedy or temperature sampling; the engine's Sampler and the backends' row sampling
// on the host (row_sampling.h) both run them. Stages shrink the list and may sort it;
// none allocates.

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/argmax.h"
#include "sampling/draw.h"

namespace pagoda {

struct Candidate {
  int32_t token = 0;
  float logit = 0.0f;  // after bias and penalties
};

// The candidates still in the running, a prefix of the sampler's scratch buffer.
struct CandidateList {
  std::span<Candidate> items;
  bool sorted = false;  // true once items are in descending logit order (ties: lower id first)
};

// True when a ranks before b: higher logit, then lower token id.
inline bool ranks_before(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.token < b.token);
}

// Keeps the k best candidates, sorted. k <= 0 or k >= size keeps all (unsorted).
void apply_top_k(CandidateList& list, int32_t k);

// Keeps the shortest sorted head whose softmax mass (over the current list, temperature
// 1) reaches p; at least one token. p >= 1 keeps all. Sorts only as far as it must.
// scratch: at least the list's size, for the weights (core/exp_sum.h).
void apply_top_p(CandidateList& list, float p, std::span<float> scratch);

// Keeps the candidates whose probability is at least min_p times the top one's, i.e.
// logit >= max_logit + log(min_p); order is preserved. min_p <= 0 keeps all.
void apply_min_p(CandidateList& list, float min_p);
// apply_min_p with log(min_p) given (-inf keeps all): threshold max_logit + log_min_p.
void apply_log_min_p(CandidateList& list, float log_min_p);

// The index in `list` of the best candidate (ties: lower token id).
size_t best_index(const CandidateList& list);

// argmax_logit (core/argmax.h) is best_index of the candidates of `logits` as they come
// (token i with logits[i]), without building the list: the greedy choice when no bias or
// penalty changes a logit.

// Draws a candidate from softmax(logit / temperature) using `uniform`, a number in
// [0, 1); returns its index in `list`. temperature > 0; scratch: at least the list's
// size, for the weights (core/exp_sum.h), walked by draw_index (sampling/draw.h).
size_t sample_index(const CandidateList& list, float temperature, double uniform, std::span<float> scratch);

}  // namespace pagoda
