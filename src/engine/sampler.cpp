#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "core/exp_sum.h"

namespace pagoda::engine {
namespace {

// Both halves of a 64-bit seed reach the generator's state.
std::mt19937 seeded_generator(const std::optional<uint64_t>& seed) {
  const uint64_t value =
      seed ? *seed : (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
  std::seed_seq sequence{static_cast<uint32_t>(value), static_cast<uint32_t>(value >> 32)};
  return std::mt19937(sequence);
}

}  // namespace

Status Sampler::no_finite_logit() {
  return invalid_argument("sampler: no token has a finite logit (all banned by the bias or the grammar, or NaN)");
}

Status Sampler::check_inputs(std::span<const float> logits, std::span<const uint32_t> allowed) const {
  if (logits.size() != candidates_.size()) {
    return invalid_argument("sampler: got " + std::to_string(logits.size()) +
                            " logits for a vocabulary of " + std::to_string(n_vocab_));
  }
  if (!allowed.empty() && allowed.size() * 32 < logits.size()) {
    return invalid_argument("sampler: a token mask of " + std::to_string(allowed.size()) +
                            " words for a vocabulary of " + std::to_string(n_vocab_));
  }
  return {};
}

Expected<Sampler> Sampler::create(const SamplingParams& params, int32_t n_vocab) {
  if (n_vocab <= 0) return invalid_argument("sampler: vocabulary size must be positive");
  PAGODA_TRY(params.validate(n_vocab));
  return Sampler(params, n_vocab);
}

Sampler::Sampler(const SamplingParams& params, int32_t n_vocab)
    : params_(params),
      n_vocab_(n_vocab),
      penalties_(params, n_vocab),
      rng_(seeded_generator(params.seed)),
      candidates_(static_cast<size_t>(n_vocab)),
      weights_(static_cast<size_t>(n_vocab)),
      top_(static_cast<size_t>(params.top_logprobs)),
      masked_(params.grammar ? static_cast<size_t>(n_vocab) : 0) {
  std::vector<int32_t> bias_tokens;
  for (const auto& [token, bias] : params_.logit_bias) bias_tokens.push_back(token);
  std::sort(bias_tokens.begin(), bias_tokens.end());
  const bool bias_repeats = std::adjacent_find(bias_tokens.begin(), bias_tokens.end()) != bias_tokens.end();
  samples_on_device_ = params_.top_logprobs <= kMaxDeviceTopLogprobs && !bias_repeats;
}

void Sampler::accept_prompt(std::span<const int32_t> tokens) {
  for (int32_t token : tokens) penalties_.accept(token, /*generated=*/false);
}

void Sampler::accept(int32_t token) {
  penalties_.accept(token, /*generated=*/true);
}

void Sampler::took_device_token() {
  if (!params_.greedy() && !kept_uniforms_.empty()) kept_uniforms_.erase(kept_uniforms_.begin());
}

void Sampler::device_sampling(std::vector<LogitAdjustment>& adjustments, std::span<RowSampling> rows) {
  RowSampling row;
  row.first_adjustment = static_cast<int32_t>(adjustments.size());
  if (!params_.greedy()) {
    row.temperature = params_.temperature;
    row.top_k = params_.top_k;
    row.top_p = params_.top_p;
    if (params_.min_p > 0.0f) row.log_min_p = std::log(params_.min_p);
  }
  row.repetition_penalty = penalties_.repetition_penalty();
  row.logprobs = reports_logprobs();
  row.top_logprobs = params_.top_logprobs;
  // The bias, then the penalties' entries merged into one adjustment per token.
  const size_t first = adjustments.size();
  if (!params_.logit_bias.empty() || penalties_.enabled()) {
    adjustment_index_.resize(candidates_.size(), -1);
    for (const auto& [token, bias] : params_.logit_bias) {
      adjustment_index_[static_cast<size_t>(token)] = static_cast<int32_t>(adjustments.size());
      adjustments.push_back(LogitAdjustment{token, kAddBias, bias, 0.0f});
    }
    const size_t penalty_first = adjustments.size();
    penalties_.append_adjustments(adjustments);
    const size_t penalty_end = adjustments.size();
    size_t kept = penalty_first;
    for (size_t i = penalty_first; i < penalty_end; ++i) {
      const LogitAdjustment entry = adjustments[i];
      int32_t& index = adjustment_index_[static_cast<size_t>(entry.token)];
      if (index < 0) {
        index = static_cast<int32_t>(kept);
        adjustments[kept++] = entry;
        continue;
      }
      LogitAdjustment& merged = adjustments[static_cast<size_t>(index)];
      merged.flags |= entry.flags;
      if ((entry.flags & kSubtract) != 0u) merged.subtract = entry.subtract;
    }
    adjustments.resize(kept);
    for (size_t i = first; i < adjustments.size(); ++i) adjustment_index_[static_cast<size_t>(adjustments[i].token)] = -1;
  }
  row.n_adjustments = static_cast<int32_t>(adjustments.size() - first);
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i] = row;
    if (params_.greedy()) continue;
    while (kept_uniforms_.size() <= i) kept_uniforms_.push_back(fresh_uniform());
    rows[i].uniform = kept_uniforms_[i];
  }
}

CandidateList Sampler::prepare_candidates(std::span<const float> logits) {
  for (size_t id = 0; id < candidates_.size(); ++id) {
    candidates_[id] = Candidate{static_cast<int32_t>(id), logits[id]};
  }
  for (const auto& [token, bias] : params_.logit_bias) {
    candidates_[static_cast<size_t>(token)].logit += bias;
  }
  penalties_.apply(candidates_);
  return CandidateList{std::span<Candidate>(candidates_), false};
}

std::span<const float> Sampler::apply_mask(std::span<const float> logits,
                                          std::span<const uint32_t> allowed) {
  masked_.resize(logits.size());
  const size_t n = logits.size();
  for (size_t word = 0; word * 32 < n; ++word) {
    const uint32_t bits = allowed[word];
    const size_t end = std::min(n, word * 32 + 32);
    for (size_t id = word * 32; id < end; ++id) {
      masked_[id] = (bits >> (id % 32)) & 1u ? logits[id] : -INFINITY;
    }
  }
  return masked_;
}

Expected<SampledToken> Sampler::sample(std::span<const float> raw_logits,
                                       std::span<const uint32_t> allowed) {
  PAGODA_TRY(check_inputs(raw_logits, allowed));
  // The choice sees the masked logits; log-probabilities the raw ones.
  const std::span<const float> logits = allowed.empty() ? raw_logits : apply_mask(raw_logits, allowed);
  SampledToken result;
  const bool unchanged = params_.logit_bias.empty() && !penalties_.enabled();
  const bool truncates = (params_.top_k > 0 && params_.top_k < n_vocab_) || params_.top_p < 1.0f || params_.min_p > 0.0f;
  std::optional<int32_t> drawn;
  if (unchanged && params_.greedy()) {
    // The logits as they are: no candidate list to build.
    const size_t best = argmax_logit(logits);
    if (!(logits[best] > -INFINITY)) return no_finite_logit();
    result.token = static_cast<int32_t>(best);
  } else if (unchanged && !truncates && (drawn = draw_from_logits(logits))) {
    result.token = *drawn;
  } else {
    CandidateList list = prepare_candidates(logits);
    const size_t best = best_index(list);
    if (!(list.items[best].logit > -INFINITY)) return no_finite_logit();
    if (params_.greedy()) {
      result.token = list.items[best].token;
    } else {
      apply_top_k(list, params_.top_k);
      apply_top_p(list, params_.top_p, weights_);
      apply_min_p(list, params_.min_p);
      result.token = list.items[sample_index(list, params_.temperature, next_uniform(), weights_)].token;
    }
  }
  add_logprobs(raw_logits, result);
  return result;
}

void Sampler::add_logprobs(std::span<const float> raw_logits, SampledToken& result) {
  if (!params_.logprobs && top_.empty()) return;
  const LogSoftmax log_softmax(raw_logits, weights_);
  result.logprob = log_softmax(result.token);
  log_softmax.top(top_);
  result.top = top_;
}

std::optional<int32_t> Sampler::draw_from_logits(std::span<const float> logits) {
  const float max = logits[argmax_logit(logits)];
  if (!(max > -INFINITY)) return std::nullopt;
  const double total = exp_sum(logits.data(), n_vocab_, max, 1.0f / params_.temperature, weights_.data());
  if (!std::isfinite(total)) return std::nullopt;  // a NaN logit: the candidate path decides
  return static_cast<int32_t>(draw_index(weights_, total, next_uniform()));
}

double Sampler::next_uniform() {
  if (!kept_uniforms_.empty()) {
    const double uniform = kept_uniforms_.front();
    kept_uniforms_.erase(kept_uniforms_.begin());
    return uniform;
  }
  return fresh_uniform();
}

double Sampler::fresh_uniform() {
  return static_cast<double>(rng_()) * 0x1p-32;
}

}  // namespace pagoda::engine
