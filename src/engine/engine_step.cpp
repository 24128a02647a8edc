// EngineCore's step: schedule, run the batch, then turn each sampling request's logits
// into its next token and output.
#include <chrono>
#include <utility>

#include "engine/engine_core.h"

namespace pagoda::engine {
namespace {

using Clock = std::chrono::steady_clock;

// The most logit adjustments (bias and penalty entries) a step sends with its rows: a
// request past them samples on the host that step, so that a few long histories cannot
// fill a GPU's staging of the step's inputs.
constexpr size_t kMaxStepAdjustments = size_t{1} << 16;

double seconds_between(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double>(end - start).count();
}

}  // namespace

void EngineCore::gather_sequences(const SchedulerOutput& plan) {
  sequences_.clear();
  adjustments_.clear();
  for (const ScheduledRequest& scheduled : plan.scheduled) {
    Request* request = scheduler_.find(scheduled.id);
    RunnerSequence sequence;
    sequence.first_position = scheduled.first_position;
    sequence.n_tokens = scheduled.n_tokens;
    sequence.samples = scheduled.samples;
    sequence.n_logit_rows = 1 + scheduled.n_draft_tokens;
    if (request != nullptr) {  // else the runner refuses it
      sequence.tokens = request->tokens;
      sequence.draft_tokens = std::span<const int32_t>(request->draft_tokens)
                                  .first(static_cast<size_t>(scheduled.n_draft_tokens));
    }
    sequence.block_table = kv_.block_table(scheduled.id);
    sequence.token_on_device = config_.tokens_on_device && scheduled.samples && scheduled.n_draft_tokens == 0 &&
                               request != nullptr && request->processor &&
                               request->processor->token_on_device_suffices();
    // A draw's uniform is taken now, the one sample() would take after the pass.
    if (sequence.token_on_device) {
      const size_t before = adjustments_.size();
      sequence.sampling = request->processor->device_sampling(adjustments_);
      if (adjustments_.size() > kMaxStepAdjustments) {  // its token on the host, with the uniform taken
        adjustments_.resize(before);
        sequence.token_on_device = false;
      }
    }
    sequences_.push_back(sequence);
  }
  for (RunnerSequence& sequence : sequences_) {  // adjustments_ has stopped growing
    if (!sequence.token_on_device) continue;
    sequence.adjustments = std::span<const LogitAdjustment>(adjustments_)
                               .subspan(static_cast<size_t>(sequence.sampling.first_adjustment),
                                        static_cast<size_t>(sequence.sampling.n_adjustments));
  }
}

bool EngineCore::step(std::vector<Delivery>& out) {
  const Clock::time_point start = Clock::now();
  SchedulerOutput plan = scheduler_.schedule();
  const Clock::time_point scheduled = Clock::now();
  timings_.schedule += seconds_between(start, scheduled);
  if (plan.empty()) return false;
  ++n_steps_;

  if (draft_) {
    const Status drafted = draft_->propose(plan, scheduler_, kv_);
    timings_.draft += seconds_between(scheduled, Clock::now());
    if (!drafted.ok()) {
      fail_step(plan, drafted, out);
      return true;
    }
    for (const RequestId id : draft_->dropped()) {
      if (const Request* request = scheduler_.find(id)) kv_.truncate(id, request->num_tokens());
    }
  }
  n_batched_tokens_ += plan.n_tokens;
  const Clock::time_point forward_start = Clock::now();
  gather_sequences(plan);
  for (const ScheduledRequest& entry : plan.scheduled) {
    Request* request = scheduler_.find(entry.id);
    if (request != nullptr && request->processor) request->processor->mark_scheduled(start);
  }
  Expected<StepLogits> logits = runner_.execute(plan.block_copies, sequences_);
  const Clock::time_point ran = Clock::now();
  timings_.forward += seconds_between(forward_start, ran);
  step_cost_.record(plan.n_tokens, seconds_between(forward_start, ran));
  if (plan.n_tokens == static_cast<int32_t>(plan.scheduled.size())) {  // one token each
    ++n_decode_steps_;
    timings_.forward_decode += seconds_between(forward_start, ran);
  }
  if (!logits.ok()) {
    fail_step(plan, logits.status(), out);
    return true;
  }
  process_logits(plan, *logits, out);
  scheduler_.update(plan, sampled_);
  for (const RequestId id : finished_) scheduler_.finish(id);
  propose_drafts(plan);
  timings_.postprocess += seconds_between(ran, Clock::now());
  return true;
}

void EngineCore::process_logits(const SchedulerOutput& plan, const StepLogits& logits,
                                std::vector<Delivery>& out) {
  sampled_.clear();
  finished_.clear();
  samplings_.clear();
  int32_t row = 0;
  for (size_t k = 0; k < plan.scheduled.size(); ++k) {
    const ScheduledRequest& scheduled = plan.scheduled[k];
    if (!scheduled.samples) continue;
    const int32_t n_rows = scheduled.n_draft_tokens + 1;
    const std::span<const float> request_logits = logits.rows(row, n_rows);
    // sequences_[k] is this request's (gather_sequences, same order).
    // A token left to the host is sampled from the row's logits, which the pass delivered.
    const std::optional<int32_t> device_token =
        sequences_[k].token_on_device && logits.device_token(row) != kLeftToHost
            ? std::optional<int32_t>(logits.device_token(row))
            : std::nullopt;
    row += n_rows;
    Request* request = scheduler_.find(scheduled.id);
    if (request == nullptr || !request->processor) continue;
    const std::span<const int32_t> drafts = std::span<const int32_t>(request->draft_tokens)
                                                .first(static_cast<size_t>(scheduled.n_draft_tokens));
    const size_t n_probs = drafts.size() * static_cast<size_t>(logits.n_vocab());
    const std::span<const float> draft_probs =
        request->draft_probs.size() >= n_probs && !drafts.empty()
            ? std::span<const float>(request->draft_probs).first(n_probs)
            : std::span<const float>();
    const RowLogprobs* device_logprobs = device_token ? logits.device_logprobs(row - n_rows) : nullptr;
    samplings_.push_back({request, request_logits, drafts, draft_probs, device_token, device_logprobs, {}});
  }
  // Each request's sampler on the backend's threads (drawing with a temperature from a
  // large vocabulary is a real share of a step when every request does), the rest in
  // order.
  backend_->run_host_tasks(static_cast<int64_t>(samplings_.size()), [this](int64_t i) {
    Sampling& s = samplings_[static_cast<size_t>(i)];
    s.status = s.device_token ? s.request->processor->take_device_token(*s.device_token, s.device_logprobs)
                              : s.request->processor->sample(s.logits, s.drafts, s.draft_probs);
  });
  for (Sampling& s : samplings_) {
    const RequestId id = s.request->id;
    const int32_t context_room = config_.scheduler.max_model_len - s.request->num_tokens();
    Expected<RequestOutput> output = s.status.ok() ? s.request->processor->emit_tokens(context_room)
                                                   : Expected<RequestOutput>(s.status);
    if (!output.ok()) {
      out.push_back(delivery(*s.request, s.request->processor->abort(output.status().message())));
      finished_.push_back(id);
      continue;
    }
    const auto n_kept = static_cast<int32_t>(output->new_tokens.size()) - 1;
    if (!s.drafts.empty()) {
      const auto n_drafts = static_cast<int32_t>(s.drafts.size());
      record_draft_outcome(s.request->draft_length, n_drafts, n_kept);
      s.request->n_proposed_tokens += n_drafts;
      s.request->n_accepted_tokens += n_kept;
    }
    output->n_proposed_tokens = s.request->n_proposed_tokens;
    output->n_accepted_tokens = s.request->n_accepted_tokens;
    sampled_.push_back(SampledTokenUpdate{id, output->new_tokens.back(), n_kept});
    if (output->finish != FinishReason::kNone) finished_.push_back(id);
    out.push_back(delivery(*s.request, std::move(output).value()));
  }
}

void EngineCore::fail_step(const SchedulerOutput& plan, const Status& error,
                           std::vector<Delivery>& out) {
  const std::string message = "the forward pass failed: " + error.message();
  for (const ScheduledRequest& scheduled : plan.scheduled) abort(scheduled.id, message, out);
}

}  // namespace pagoda::engine
