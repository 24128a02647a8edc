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
  row_samplings_.clear();
  device_rows_at_.clear();
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
    // Proposals a draft model drew keep their verification on the host (its rejection
    // rule reads whole distributions).
    const bool drawn_proposals = request != nullptr && scheduled.n_draft_tokens > 0 && !request->draft_probs.empty();
    sequence.token_on_device = config_.tokens_on_device && scheduled.samples && request != nullptr &&
                               request->processor && !drawn_proposals &&
                               request->processor->token_on_device_suffices(scheduled.n_draft_tokens);
    DeviceRowsAt at;
    if (sequence.token_on_device) sequence.token_on_device = take_device_rows(*request->processor, sequence.n_logit_rows, at);
    device_rows_at_.push_back(at);
    sequences_.push_back(sequence);
  }
  for (size_t k = 0; k < sequences_.size(); ++k) {  // the vectors have stopped growing
    const DeviceRowsAt& at = device_rows_at_[k];
    sequences_[k].samplings = std::span<const RowSampling>(row_samplings_).subspan(at.rows, at.n_rows);
    sequences_[k].adjustments = std::span<const LogitAdjustment>(adjustments_).subspan(at.adjustments, at.n_adjustments);
  }
}

bool EngineCore::take_device_rows(RequestProcessor& processor, int32_t n_rows, DeviceRowsAt& at) {
  at.rows = row_samplings_.size();
  at.adjustments = adjustments_.size();
  row_samplings_.resize(at.rows + static_cast<size_t>(n_rows));
  // A draw's uniforms are taken now, those sample() would take after the pass.
  processor.device_sampling(adjustments_, std::span<RowSampling>(row_samplings_).subspan(at.rows));
  if (adjustments_.size() > kMaxStepAdjustments) {  // its tokens on the host, with the uniforms taken
    adjustments_.resize(at.adjustments);
    row_samplings_.resize(at.rows);
    return false;
  }
  at.n_rows = static_cast<size_t>(n_rows);
  at.n_adjustments = adjustments_.size() - at.adjustments;
  return true;
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
    for (const RequestId id : draft_->dropped()) {  // blocks past the proposals it keeps
      if (const Request* request = scheduler_.find(id)) {
        kv_.truncate(id, request->num_tokens() + static_cast<int32_t>(request->draft_tokens.size()));
      }
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
  step_costs_.record(plan, seconds_between(forward_start, ran));
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
    // Tokens chosen with the logits (a token left to the host is sampled from its row's
    // logits, which the pass delivered).
    const bool on_device = sequences_[k].token_on_device;
    const std::span<const int32_t> device_tokens = on_device ? logits.device_tokens(row, n_rows) : std::span<const int32_t>();
    const std::span<const RowLogprobs> device_logprobs =
        on_device ? logits.device_logprobs(row, n_rows) : std::span<const RowLogprobs>();
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
    samplings_.push_back({request, request_logits, drafts, draft_probs, device_tokens, device_logprobs, {}});
  }
  // Each request's sampler on the backend's threads (drawing with a temperature from a
  // large vocabulary is a real share of a step when every request does), the rest in
  // order.
  backend_->run_host_tasks(static_cast<int64_t>(samplings_.size()), [this](int64_t i) {
    Sampling& s = samplings_[static_cast<size_t>(i)];
    s.status = !s.device_tokens.empty()
                   ? s.request->processor->take_device_tokens(s.device_tokens, s.drafts, s.device_logprobs, s.logits)
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
    const int32_t n_declined = std::exchange(s.request->n_declined_drafts, 0);
    if (!s.drafts.empty() || n_declined > 0) {
      const auto n_drafts = static_cast<int32_t>(s.drafts.size());
      // A request that ends here may have stopped inside its kept proposals: its count
      // says nothing of the proposer. Proposals the draft declined count as refused.
      if (output->finish == FinishReason::kNone) {
        record_draft_outcome(s.request->draft_length, n_drafts + n_declined, n_kept);
        shared_acceptance_.record(n_drafts + n_declined, n_kept);
      }
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
