#include "engine/generator.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace pagoda::engine {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Generated text continues the prompt's text, spaces included; only after a prompt of
// control tokens alone (BOS) is there no text for a leading space to separate from.
tokenizer::DecodeOptions decode_options(const tokenizer::Tokenizer& tokenizer,
                                        std::span<const int32_t> prompt) {
  tokenizer::DecodeOptions options;
  options.strip_leading_space = std::all_of(
      prompt.begin(), prompt.end(), [&](int32_t token) { return tokenizer.is_control(token); });
  return options;
}

}  // namespace

Expected<Generator> Generator::create(model::Model& model, backend::KvStorage& kv,
                                      const tokenizer::Tokenizer& tokenizer,
                                      int32_t max_batch_tokens) {
  if (max_batch_tokens <= 0) return invalid_argument("max_batch_tokens must be positive");
  const model::ModelConfig& config = model.config();
  const backend::KvCacheShape& shape = kv.shape();
  if (shape.n_layers != config.n_layer || shape.n_kv_heads != config.n_head_kv ||
      shape.head_dim != config.head_dim || shape.n_blocks <= 0 || shape.block_size <= 0) {
    return invalid_argument("the KV cache does not have the model's shape");
  }
  return Generator(model, kv, tokenizer, max_batch_tokens);
}

Generator::Generator(model::Model& model, backend::KvStorage& kv,
                     const tokenizer::Tokenizer& tokenizer, int32_t max_batch_tokens)
    : model_(&model),
      kv_(&kv),
      tokenizer_(&tokenizer),
      max_batch_tokens_(max_batch_tokens),
      sequence_(kv.shape()),
      logits_(static_cast<size_t>(model.config().n_vocab)) {
  cached_.reserve(static_cast<size_t>(sequence_.capacity()));
}

Status Generator::feed(std::span<const int32_t> tokens, bool want_logits) {
  while (!tokens.empty()) {
    const size_t n = std::min(tokens.size(), static_cast<size_t>(max_batch_tokens_));
    const bool last = n == tokens.size();
    const std::span<const int32_t> chunk = tokens.first(n);
    const model::ForwardBatch batch =
        sequence_.batch(chunk, static_cast<int32_t>(cached_.size()), want_logits && last);
    const std::span<float> logits =
        want_logits && last ? std::span<float>(logits_) : std::span<float>();
    Status status = model_->forward(batch, *kv_, logits);
    if (!status.ok()) {
      cached_.clear();  // what the cache holds is no longer known
      return status;
    }
    cached_.insert(cached_.end(), chunk.begin(), chunk.end());
    tokens = tokens.subspan(n);
  }
  return Status::ok_status();
}

void Generator::keep_shared_prefix(std::span<const int32_t> prompt) {
  const auto mismatch = std::mismatch(cached_.begin(), cached_.end(), prompt.begin(), prompt.end());
  size_t shared = static_cast<size_t>(mismatch.first - cached_.begin());
  if (shared == prompt.size()) --shared;  // the last prompt token must run for its logits
  cached_.resize(shared);
}

Expected<GenerationResult> Generator::generate(const GenerationRequest& request,
                                               const TextCallback& on_text) {
  const std::span<const int32_t> prompt = request.prompt;
  if (prompt.empty()) return invalid_argument("the prompt has no tokens");
  if (prompt.size() > static_cast<size_t>(context_size())) {
    return invalid_argument("the prompt has " + std::to_string(prompt.size()) +
                            " tokens, more than the context of " + std::to_string(context_size()));
  }
  PAGODA_ASSIGN_OR_RETURN(Sampler sampler,
                          Sampler::create(request.sampling, model_->config().n_vocab));
  const tokenizer::Tokenizer& tokenizer = *tokenizer_;
  PAGODA_ASSIGN_OR_RETURN(StopChecker stop,
                          StopChecker::create(request.stop, [&tokenizer](int32_t token) {
                            return tokenizer.is_eog(token);
                          }));
  sampler.accept_prompt(prompt);

  tokenizer::StreamingDetokenizer detokenizer(tokenizer, decode_options(tokenizer, prompt));

  GenerationResult result;
  keep_shared_prefix(prompt);
  result.timings.n_reused_tokens = static_cast<int32_t>(cached_.size());
  result.timings.n_prompt_tokens = static_cast<int32_t>(prompt.size() - cached_.size());
  const Clock::time_point prefill_start = Clock::now();
  PAGODA_TRY(feed(prompt.subspan(cached_.size()), /*want_logits=*/true));
  result.timings.prompt_seconds = seconds_since(prefill_start);

  const Clock::time_point decode_start = Clock::now();
  PAGODA_TRY(decode(sampler, stop, detokenizer, on_text, result));
  result.timings.decode_seconds = seconds_since(decode_start);
  return result;
}

Status Generator::decode(Sampler& sampler, StopChecker& stop,
                         tokenizer::StreamingDetokenizer& detokenizer, const TextCallback& on_text,
                         GenerationResult& result) {
  auto emit = [&](std::string_view text) {
    if (text.empty()) return;
    result.text.append(text);
    if (on_text) on_text(text);
  };
  while (true) {
    PAGODA_ASSIGN_OR_RETURN(const SampledToken sampled, sampler.sample(logits_));
    sampler.accept(sampled.token);
    result.tokens.push_back(sampled.token);
    const bool context_full = cached_.size() == static_cast<size_t>(context_size());
    std::string text = detokenizer.push(sampled.token);
    if (context_full || stop.n_generated() + 1 >= stop.max_tokens()) {
      text += detokenizer.finish();  // the last token: nothing will complete held bytes
    }
    const StopUpdate update = stop.push(sampled.token, text);
    emit(update.text);
    if (update.finish != FinishReason::kNone) {
      result.finish = update.finish;
      return Status::ok_status();
    }
    if (context_full) {  // no KV slot left to feed this token back
      emit(stop.flush());
      result.finish = FinishReason::kLength;
      return Status::ok_status();
    }
    PAGODA_TRY(feed(std::span<const int32_t>(&sampled.token, 1), /*want_logits=*/true));
    ++result.timings.n_decoded;
  }
}

}  // namespace pagoda::engine
