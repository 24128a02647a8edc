#include "engine/draft_proposer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "sampling/stages.h"

namespace pagoda::engine {

Expected<std::unique_ptr<DraftProposer>> DraftProposer::create(model::Model& draft,
                                                               backend::Backend& backend,
                                                               const EngineConfig& config,
                                                               int32_t n_blocks) {
  backend::KvCacheShape shape = model::kv_cache_shape(draft.config(), n_blocks, config.block_size, config.kv_type);
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<backend::KvStorage> storage, backend.allocate_kv(shape));
  const model::LoadOptions load = config.draft_load_options();
  const RunnerLimits limits{.max_batch_tokens = load.max_batch_tokens,
                            .max_sequences = config.scheduler.max_running,
                            .max_logit_rows = load.max_logit_rows};
  PAGODA_ASSIGN_OR_RETURN(ModelRunner runner, ModelRunner::create(draft, backend, *storage, limits));
  auto proposer = std::unique_ptr<DraftProposer>(
      new DraftProposer(std::move(storage), std::move(runner), config.speculative.draft_p_min));
  // Warmed up, so that a request's first catch-up is not charged for what the backend
  // prepares on a first use and the catch-up cost first measured is a true one.
  PAGODA_TRY(proposer->runner_.warm_up());
  PAGODA_TRY(proposer->measure_costs(config.block_size, n_blocks));
  return proposer;
}

uint64_t DraftProposer::block_bytes(const model::Model& draft, const EngineConfig& config) {
  return model::kv_cache_shape(draft.config(), 1, config.block_size, config.kv_type).block_bytes();
}

DraftProposer::DraftProposer(std::unique_ptr<backend::KvStorage> storage, ModelRunner runner, float p_min)
    : storage_(std::move(storage)),
      runner_(std::move(runner)),
      log_p_min_(p_min > 0.0f ? std::log(p_min) : -std::numeric_limits<float>::infinity()) {}

namespace {

using Clock = std::chrono::steady_clock;

// A greedy draft row's token with its log-probability (the draft's chance for it, which
// decides whether it is proposed at all).
const RowSampling kGreedyWithChance{.logprobs = true};

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A running average of timings, the first one taken as it is.
void average_in(double& average, double seconds) {
  average = average > 0.0 ? 0.8 * average + 0.2 * seconds : seconds;
}

// A greedy request's draft rows choose their token where the logits are, with its chance
// where the draft may decline it.
void set_token_on_device(const Request& request, RunnerSequence& sequence, bool with_chance) {
  sequence.token_on_device = request.sampling.greedy();
  if (sequence.token_on_device && with_chance) sequence.samplings = std::span<const RowSampling>(&kGreedyWithChance, 1);
}

// The draft's sampler of a sampled request: its temperature and truncation, nothing that
// needs the request's history (the proposals' distribution may be anything: the rule
// corrects for it), a generator of its own derived from the request's seed.
Expected<Sampler> make_draft_sampler(const Request& request, int32_t n_vocab) {
  SamplingParams params;
  params.temperature = request.sampling.temperature;
  params.top_k = request.sampling.top_k;
  params.top_p = request.sampling.top_p;
  params.min_p = request.sampling.min_p;
  params.repetition_penalty = 1.0f;
  if (request.sampling.seed) params.seed = *request.sampling.seed ^ 0x9e3779b97f4a7c15ull;
  return Sampler::create(params, n_vocab);
}

}  // namespace

Status DraftProposer::measure_costs(int32_t block_size, int32_t n_blocks) {
  // A catch-up of this many tokens, as a request's first proposal after its prompt runs.
  constexpr int32_t kCatchUpTokens = 128;
  const int32_t n_tokens = std::min({kCatchUpTokens, runner_.limits().max_batch_tokens, n_blocks * block_size - 1});
  if (n_tokens < 4) return {};
  const std::vector<int32_t> tokens(static_cast<size_t>(n_tokens) + 1, 0);
  std::vector<int32_t> block_table(static_cast<size_t>(n_tokens / block_size + 1));
  for (size_t i = 0; i < block_table.size(); ++i) block_table[i] = static_cast<int32_t>(i);
  RunnerSequence sequence;
  sequence.samples = true;
  sequence.token_on_device = true;
  sequence.tokens = tokens;
  sequence.block_table = block_table;
  // Each timed twice, the faster kept: a shared machine's noise only ever adds time.
  auto fastest_of_two = [&]() -> Expected<double> {
    double best = 0.0;
    for (int i = 0; i < 2; ++i) {
      const Clock::time_point start = Clock::now();
      PAGODA_TRY(runner_.execute({}, std::span<const RunnerSequence>(&sequence, 1)).status());
      const double seconds = seconds_since(start);
      best = i == 0 ? seconds : std::min(best, seconds);
    }
    return best;
  };
  sequence.n_tokens = n_tokens;
  PAGODA_ASSIGN_OR_RETURN(const double catch_up, fastest_of_two());
  sequence.first_position = n_tokens;
  sequence.n_tokens = 1;
  PAGODA_ASSIGN_OR_RETURN(const double pass, fastest_of_two());
  catch_up_seconds_per_token_ = catch_up / n_tokens;
  pass_seconds_ = pass;
  return {};
}

Expected<bool> DraftProposer::choose(Request& request, size_t index, const StepLogits& step, int32_t row) {
  if (request.sampling.greedy()) {
    // A row the device chose nothing for (left to the host, or no finite logit where
    // sample_rows answers -1) proposes nothing; argmax_logit's 0 for such a row is
    // proposed, and the model's verification decides.
    const int32_t token = step.device_token(row);
    if (token < 0) return false;
    const std::span<const RowLogprobs> chance = step.device_logprobs(row, 1);
    if (!chance.empty() && !(chance[0].chosen >= log_p_min_)) return false;
    request.draft_tokens[index] = token;
    return true;
  }
  const std::span<const float> logits = step.row(row);
  const size_t n_vocab = logits.size();
  if (!request.draft_sampler) {
    PAGODA_ASSIGN_OR_RETURN(Sampler sampler, make_draft_sampler(request, static_cast<int32_t>(n_vocab)));
    request.draft_sampler.emplace(std::move(sampler));
  }
  request.draft_probs.resize(request.draft_tokens.size() * n_vocab);
  const std::span<float> q = std::span<float>(request.draft_probs).subspan(index * n_vocab, n_vocab);
  PAGODA_TRY(request.draft_sampler->distribution(logits, {}, q));
  double total = 0.0;
  for (const float weight : q) total += weight;
  request.draft_tokens[index] = static_cast<int32_t>(draw_index(q, total, request.draft_sampler->draw_uniform()));
  return true;
}

void DraftProposer::decline(SchedulerOutput& plan, size_t i, int32_t kept) {
  Request& request = *proposing_[i];
  ScheduledRequest& entry = *entries_[i];
  const int32_t declined = entry.n_draft_tokens - kept;
  plan.n_tokens -= declined;
  entry.n_tokens -= declined;
  entry.n_draft_tokens = kept;
  const size_t n_vocab = request.draft_tokens.empty() ? 0 : request.draft_probs.size() / request.draft_tokens.size();
  request.draft_tokens.resize(static_cast<size_t>(kept));
  request.draft_probs.resize(static_cast<size_t>(kept) * n_vocab);
  request.n_declined_drafts += declined;
  dropped_.push_back(request.id);
}

Status DraftProposer::propose(SchedulerOutput& plan, Scheduler& scheduler, const kv::KvCacheManager& kv) {
  PAGODA_TRY(runner_.copy_blocks(plan.block_copies));  // the draft's K/V moves with the model's
  sequences_.clear();
  proposing_.clear();
  entries_.clear();
  dropped_.clear();
  int32_t budget = runner_.limits().max_batch_tokens;
  const bool with_chance = log_p_min_ > -std::numeric_limits<float>::infinity();  // the draft may decline
  for (ScheduledRequest& entry : plan.scheduled) {
    if (entry.n_draft_tokens == 0) continue;
    Request* request = scheduler.find(entry.id);
    if (request == nullptr) continue;
    request->n_declined_drafts = 0;
    // The draft runs up to the request's last token, whose row gives the first proposal.
    const int32_t end = request->num_tokens();
    const int32_t start = std::min(request->draft_computed_tokens, end - 1);
    RunnerSequence sequence;
    sequence.first_position = start;
    sequence.tokens = request->tokens;
    sequence.block_table = kv.block_table(entry.id);
    if (end - start > budget) {
      // Too far behind for this step: catch up as far as the budget goes, propose later.
      if (budget > 0) {
        sequence.n_tokens = budget;
        sequences_.push_back(sequence);
        request->draft_computed_tokens = start + budget;
        budget = 0;
      }
      plan.n_tokens -= entry.n_draft_tokens;
      entry.n_tokens -= entry.n_draft_tokens;
      entry.n_draft_tokens = 0;
      request->draft_tokens.clear();
      dropped_.push_back(entry.id);
      continue;
    }
    sequence.n_tokens = end - start;
    sequence.samples = true;
    set_token_on_device(*request, sequence, with_chance);
    sequences_.push_back(sequence);
    budget -= sequence.n_tokens;
    request->draft_computed_tokens = end;
    proposing_.push_back(request);
    entries_.push_back(&entry);
  }
  if (sequences_.empty()) return {};
  int64_t first_pass_tokens = 0;
  for (const RunnerSequence& sequence : sequences_) first_pass_tokens += sequence.n_tokens;
  n_tokens_run_ += first_pass_tokens;
  const Clock::time_point first_pass_start = Clock::now();
  PAGODA_ASSIGN_OR_RETURN(StepLogits logits, runner_.execute({}, sequences_));
  // A pass mostly of catch-up (several tokens a request) measures what a token of it costs.
  if (first_pass_tokens >= 4 * static_cast<int64_t>(sequences_.size())) {
    average_in(catch_up_seconds_per_token_, seconds_since(first_pass_start) / static_cast<double>(first_pass_tokens));
  }
  for (size_t i = 0; i < proposing_.size(); ++i) {
    PAGODA_ASSIGN_OR_RETURN(const bool proposed, choose(*proposing_[i], 0, logits, static_cast<int32_t>(i)));
    if (!proposed) decline(plan, i, 0);
  }
  // Pass j runs proposal j - 1 (at position num_tokens + j - 1) for proposal j.
  for (size_t j = 1;; ++j) {
    sequences_.clear();
    for (Request* request : proposing_) {
      if (request->draft_tokens.size() <= j) continue;
      RunnerSequence sequence;
      sequence.first_position = request->num_tokens() + static_cast<int32_t>(j) - 1;
      sequence.n_tokens = 1;
      sequence.samples = true;
      set_token_on_device(*request, sequence, with_chance);
      sequence.tokens = request->tokens;
      sequence.draft_tokens = std::span<const int32_t>(request->draft_tokens).first(j);
      sequence.block_table = kv.block_table(request->id);
      sequences_.push_back(sequence);
      request->draft_computed_tokens = sequence.first_position + 1;
    }
    if (sequences_.empty()) break;
    n_tokens_run_ += static_cast<int64_t>(sequences_.size());
    const Clock::time_point pass_start = Clock::now();
    PAGODA_ASSIGN_OR_RETURN(logits, runner_.execute({}, sequences_));
    average_in(pass_seconds_, seconds_since(pass_start));
    int32_t row = 0;
    for (size_t i = 0; i < proposing_.size(); ++i) {
      if (proposing_[i]->draft_tokens.size() <= j) continue;
      PAGODA_ASSIGN_OR_RETURN(const bool proposed, choose(*proposing_[i], j, logits, row++));
      if (!proposed) decline(plan, i, static_cast<int32_t>(j));
    }
  }
  return {};
}

}  // namespace pagoda::engine
