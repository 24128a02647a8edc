#include "engine/request_processor.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

namespace pagoda::engine {

tokenizer::DecodeOptions continuation_decode_options(const tokenizer::Tokenizer& tokenizer,
                                                     std::span<const int32_t> prompt) {
  tokenizer::DecodeOptions options;
  options.strip_leading_space = std::all_of(
      prompt.begin(), prompt.end(), [&](int32_t token) { return tokenizer.is_control(token); });
  return options;
}

Expected<RequestProcessor> RequestProcessor::create(RequestId id, std::span<const int32_t> prompt,
                                                    const SamplingParams& sampling,
                                                    const StopConditions& stop,
                                                    const tokenizer::Tokenizer& tokenizer) {
  PAGODA_ASSIGN_OR_RETURN(Sampler sampler, Sampler::create(sampling, tokenizer.n_vocab()));
  PAGODA_ASSIGN_OR_RETURN(
      StopChecker checker,
      StopChecker::create(stop, [&tokenizer](int32_t token) { return tokenizer.is_eog(token); }));
  sampler.accept_prompt(prompt);
  tokenizer::DecodeOptions decode_options = continuation_decode_options(tokenizer, prompt);
  std::optional<OutputGrammar> grammar;
  if (sampling.grammar) {
    PAGODA_ASSIGN_OR_RETURN(grammar, OutputGrammar::create(sampling.grammar, tokenizer.n_vocab()));
    // The text must be the bytes the grammar accepted: no clean-up of spaces, and the
    // control tokens it gives text shown.
    decode_options.clean_spaces = false;
    decode_options.shown_tokens = sampling.grammar->shown_tokens;
  }
  tokenizer::StreamingDetokenizer detokenizer(tokenizer, decode_options);
  return RequestProcessor(id, static_cast<int32_t>(prompt.size()), std::move(sampler),
                          std::move(checker), std::move(detokenizer), std::move(grammar));
}

RequestProcessor::RequestProcessor(RequestId id, int32_t n_prompt_tokens, Sampler sampler,
                                   StopChecker stop, tokenizer::StreamingDetokenizer detokenizer,
                                   std::optional<OutputGrammar> grammar)
    : id_(id),
      n_prompt_tokens_(n_prompt_tokens),
      sampler_(std::move(sampler)),
      stop_(std::move(stop)),
      detokenizer_(std::move(detokenizer)),
      grammar_(std::move(grammar)) {}

void RequestProcessor::mark_scheduled(std::chrono::steady_clock::time_point now) {
  if (queued_seconds_ >= 0.0) return;
  queued_seconds_ = std::max(std::chrono::duration<double>(now - created_).count(), 0.0);
}

RequestOutput RequestProcessor::new_output() {
  RequestOutput output;
  output.id = id_;
  output.n_prompt_tokens = n_prompt_tokens_;
  if (!sent_first_output_) {
    sent_first_output_ = true;
    output.queued_seconds = queued_seconds_;
  }
  return output;
}

Expected<RequestOutput> RequestProcessor::process(std::span<const float> logits,
                                                  bool context_full) {
  PAGODA_TRY(sample(logits));
  return emit(context_full);
}

Status RequestProcessor::sample(std::span<const float> logits, std::span<const int32_t> drafts,
                                std::span<const float> draft_probs) {
  has_sampled_ = false;
  sampled_.clear();
  const size_t n_rows = drafts.size() + 1;
  const size_t n_vocab = logits.size() / n_rows;
  if (n_vocab * n_rows != logits.size() || (!draft_probs.empty() && draft_probs.size() != n_vocab * drafts.size())) {
    return invalid_argument("request processor: " + std::to_string(logits.size()) + " logits and " +
                            std::to_string(draft_probs.size()) + " draft probabilities for " +
                            std::to_string(drafts.size()) + " proposals");
  }
  if (!draft_probs.empty()) {
    PAGODA_TRY(verify_sampled_drafts(logits, n_vocab, drafts, draft_probs));
    has_sampled_ = true;
    return {};
  }
  for (size_t i = 0; i < n_rows; ++i) {
    const std::span<const uint32_t> allowed =
        grammar_ ? grammar_->next_mask() : std::span<const uint32_t>();
    PAGODA_ASSIGN_OR_RETURN(const SampledToken drawn,
                            sampler_.sample(logits.subspan(i * n_vocab, n_vocab), allowed));
    PAGODA_TRY(keep(drawn));
    // Past a rejected proposal the rows saw tokens that are not the request's; past a
    // completed grammar nothing may follow.
    if (i == drafts.size() || drawn.token != drafts[i] || (grammar_ && grammar_->finished())) break;
  }
  has_sampled_ = true;
  return {};
}

Status RequestProcessor::take_device_tokens(std::span<const int32_t> tokens, std::span<const int32_t> drafts,
                                            std::span<const RowLogprobs> logprobs, std::span<const float> logits) {
  has_sampled_ = false;
  sampled_.clear();
  const size_t n_rows = drafts.size() + 1;
  if (tokens.size() != n_rows || logits.size() % n_rows != 0 || (!logprobs.empty() && logprobs.size() != n_rows)) {
    return invalid_argument("request processor: " + std::to_string(tokens.size()) + " tokens for " +
                            std::to_string(drafts.size()) + " proposals");
  }
  const size_t n_vocab = logits.size() / n_rows;
  for (size_t i = 0; i < n_rows; ++i) {
    SampledToken drawn;
    if (tokens[i] == kLeftToHost) {
      PAGODA_ASSIGN_OR_RETURN(drawn, sampler_.sample(logits.subspan(i * n_vocab, n_vocab)));
    } else {
      if (tokens[i] < 0) return Sampler::no_finite_logit();
      sampler_.took_device_token();
      drawn.token = tokens[i];
      if (!logprobs.empty() && sampler_.reports_logprobs()) {
        drawn.logprob = logprobs[i].chosen;
        drawn.top = std::span<const TokenLogprob>(logprobs[i].top, static_cast<size_t>(logprobs[i].n_top));
      }
    }
    PAGODA_TRY(keep(drawn));
    if (i == drafts.size() || drawn.token != drafts[i]) break;
  }
  has_sampled_ = true;
  return {};
}

Status RequestProcessor::keep(const SampledToken& drawn) {
  if (grammar_) PAGODA_TRY(grammar_->accept(drawn.token));
  sampler_.accept(drawn.token);
  TokenLogprobs& kept = sampled_.emplace_back();
  kept.token = drawn.token;
  kept.logprob = drawn.logprob;
  kept.top.assign(drawn.top.begin(), drawn.top.end());
  return {};
}

Status RequestProcessor::verify_sampled_drafts(std::span<const float> logits, size_t n_vocab,
                                               std::span<const int32_t> drafts,
                                               std::span<const float> draft_probs) {
  target_probs_.resize(n_vocab);
  residual_.resize(n_vocab);
  for (size_t i = 0; i < drafts.size(); ++i) {
    const std::span<const float> row = logits.subspan(i * n_vocab, n_vocab);
    const std::span<const float> q = draft_probs.subspan(i * n_vocab, n_vocab);
    const std::span<const uint32_t> allowed =
        grammar_ ? grammar_->next_mask() : std::span<const uint32_t>();
    PAGODA_TRY(sampler_.distribution(row, allowed, target_probs_));
    const auto draft = static_cast<size_t>(drafts[i]);
    const double p_draft = target_probs_[draft], q_draft = q[draft];
    int32_t token = drafts[i];
    if (!(q_draft > 0.0 && sampler_.draw_uniform() * q_draft < p_draft)) {
      double total = 0.0;
      for (size_t t = 0; t < n_vocab; ++t) {
        residual_[t] = std::max(target_probs_[t] - q[t], 0.0f);
        total += residual_[t];
      }
      // Rounding alone can leave nothing (p == q makes a rejection impossible): draw from p.
      const std::span<const float> from = total > 0.0 ? std::span<const float>(residual_) : target_probs_;
      token = static_cast<int32_t>(draw_index(from, total > 0.0 ? total : 1.0, sampler_.draw_uniform()));
    }
    PAGODA_TRY(keep(sampler_.score(row, token)));
    if (token != drafts[i] || (grammar_ && grammar_->finished())) return {};
  }
  // Every proposal kept: the row after them gives one more token, drawn as usual.
  const std::span<const uint32_t> allowed = grammar_ ? grammar_->next_mask() : std::span<const uint32_t>();
  PAGODA_ASSIGN_OR_RETURN(const SampledToken drawn,
                          sampler_.sample(logits.subspan(drafts.size() * n_vocab, n_vocab), allowed));
  return keep(drawn);
}

Expected<RequestOutput> RequestProcessor::emit(bool context_full) {
  return emit_tokens(context_full ? 1 : INT32_MAX);
}

Expected<RequestOutput> RequestProcessor::emit_tokens(int32_t context_room) {
  if (!has_sampled_) return internal_error("request processor: no sampled token to emit");
  has_sampled_ = false;
  RequestOutput output = new_output();
  const bool wants_logprobs = sampler_.params().logprobs || sampler_.params().top_logprobs > 0;
  for (size_t i = 0; i < sampled_.size(); ++i) {
    const int32_t token = sampled_[i].token;
    output.new_tokens.push_back(token);
    if (wants_logprobs) output.logprobs.push_back(std::move(sampled_[i]));
    const bool context_full = static_cast<int64_t>(i) + 1 >= context_room;
    std::string text = detokenizer_.push(token);
    // A grammar that can take nothing more ends the request as a stop would (only the
    // last token kept can have completed it).
    const bool grammar_finished = grammar_ && i + 1 == sampled_.size() && grammar_->finished();
    if (context_full || grammar_finished || stop_.n_generated() + 1 >= stop_.max_tokens()) {
      text += detokenizer_.finish();  // the last token: nothing will complete held bytes
    }
    const StopUpdate update = stop_.push(token, text);
    output.text.append(update.text);
    output.finish = update.finish;
    if (output.finish == FinishReason::kNone && (context_full || grammar_finished)) {
      output.text.append(stop_.flush());
      output.finish = grammar_finished ? FinishReason::kStop : FinishReason::kLength;
    }
    if (output.finish != FinishReason::kNone) break;
  }
  output.n_generated_tokens = stop_.n_generated();
  return output;
}

RequestOutput RequestProcessor::abort(std::string error) {
  RequestOutput output = new_output();
  if (stop_.finish() == FinishReason::kNone) {
    // Text held back in case later tokens completed it: none will come. The stop
    // checker's pending text comes before what the detokenizer still holds.
    output.text.assign(stop_.flush());
    output.text += detokenizer_.finish();
  }
  output.finish = FinishReason::kAbort;
  output.error = std::move(error);
  output.n_generated_tokens = stop_.n_generated();
  return output;
}

}  // namespace pagoda::engine
