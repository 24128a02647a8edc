#include "cli/bench_concurrency.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <mutex>
#include <random>
#include <vector>

#include "cli/bench_concurrency_report.h"
#include "cli/bench_profile.h"
#include "cli/bench_report.h"
#include "cli/loaded_model.h"
#include "core/text_file.h"
#include "engine/engine.h"
#include "tokenizer/chat_template.h"

namespace pagoda::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Each request's clock, written from the engine thread through the requests' sinks;
// the benchmark thread waits on it to keep `concurrency` requests in flight.
class RunTracker {
 public:
  explicit RunTracker(size_t n_requests) : requests_(n_requests) {}

  void start() { start_ = Clock::now(); }
  double now() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  void submitted(size_t i) {
    const std::lock_guard lock(mutex_);
    requests_[i].submitted = now();
  }
  void on_output(size_t i, const engine::RequestOutput& output) {
    const std::lock_guard lock(mutex_);
    RequestTiming& r = requests_[i];
    if (r.first_token < 0.0 && !output.new_tokens.empty()) r.first_token = now();
    r.n_tokens += static_cast<int32_t>(output.new_tokens.size());
    r.n_prompt_tokens = output.n_prompt_tokens;
    r.n_cached_prompt_tokens = output.n_cached_prompt_tokens;
    if (output.finish == engine::FinishReason::kAbort) {
      r.error = output.error.empty() ? "aborted" : output.error;
    }
    if (output.finish != engine::FinishReason::kNone) {
      r.finished = now();
      ++n_finished_;
    }
    changed_.notify_all();
  }
  // Waits until fewer than `limit` of the first `n_submitted` requests are unfinished.
  void wait_in_flight_below(size_t n_submitted, size_t limit) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return n_submitted - n_finished_ < limit; });
  }
  void wait_first_token(size_t i) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock,
                  [&] { return requests_[i].first_token >= 0.0 || requests_[i].finished >= 0.0; });
  }
  std::vector<RequestTiming> results() {
    const std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  Clock::time_point start_ = Clock::now();
  std::vector<RequestTiming> requests_;
  size_t n_finished_ = 0;
};

class TimingSink final : public engine::RequestSink {
 public:
  TimingSink(RunTracker& tracker, size_t index) : tracker_(tracker), index_(index) {}
  void on_output(engine::RequestOutput output) override { tracker_.on_output(index_, output); }

 private:
  RunTracker& tracker_;
  size_t index_;
};

Status check_args(const ConcurrencyBenchArgs& a) {
  if (a.concurrency <= 0 || a.prompt_len < 0 || a.gen_len <= 0 || a.shared_prefix_len < 0 ||
      a.num_requests < 0 || a.max_batched_tokens <= 0 || a.max_running < 0) {
    return invalid_argument(
        "bench: --concurrency, --gen-len and --max-batched-tokens must be positive; the "
        "other sizes may not be negative");
  }
  if (a.prompt_len + a.shared_prefix_len <= 0)
    return invalid_argument("bench: the prompts are empty");
  return Status::ok_status();
}

Expected<engine::EngineConfig> engine_config_of(const ConcurrencyBenchArgs& a) {
  engine::EngineConfig config;
  config.scheduler.max_batched_tokens = a.max_batched_tokens;
  config.scheduler.max_running = a.max_running;
  config.scheduler.max_model_len = a.shared_prefix_len + a.prompt_len + a.gen_len;
  if (a.kv_cache_memory > 0) config.kv_memory.bytes = a.kv_cache_memory;
  PAGODA_ASSIGN_OR_RETURN(config.kv_type, engine::parse_kv_cache_type(a.kv_cache_type));
  PAGODA_ASSIGN_OR_RETURN(config.speculative, a.speculative.config());
  config.tokens_on_device = !a.host_sampling;
  return config;
}

// Prompts of random ids that are neither control nor end-of-generation tokens: the
// shared prefix (BOS first, when the model wants one), then each request's own tokens.
std::vector<std::vector<int32_t>> make_prompts(const ConcurrencyBenchArgs& a,
                                               const tokenizer::Tokenizer& tokenizer, uint64_t seed,
                                               size_t n) {
  std::vector<int32_t> ordinary;
  for (int32_t id = 0; id < tokenizer.n_vocab(); ++id) {
    if (!tokenizer.is_control(id) && !tokenizer.is_eog(id)) ordinary.push_back(id);
  }
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, ordinary.size() - 1);
  std::vector<int32_t> prefix;
  if (tokenizer.add_bos() && tokenizer.bos() >= 0) prefix.push_back(tokenizer.bos());
  while (prefix.size() < static_cast<size_t>(a.shared_prefix_len))
    prefix.push_back(ordinary[pick(rng)]);
  std::vector<std::vector<int32_t>> prompts(n, prefix);
  for (std::vector<int32_t>& prompt : prompts) {
    const size_t length = static_cast<size_t>(a.shared_prefix_len + a.prompt_len);
    while (prompt.size() < length) prompt.push_back(ordinary[pick(rng)]);
  }
  return prompts;
}

// Each file's text as one user message through the model's chat template.
Expected<std::vector<std::vector<int32_t>>> file_prompts(const ConcurrencyBenchArgs& a,
                                                        const LoadedModel& loaded, size_t n) {
  PAGODA_ASSIGN_OR_RETURN(const tokenizer::ChatTemplate chat, model_chat_template(*loaded.file));
  std::vector<std::vector<int32_t>> rendered;
  for (const std::string& path : a.prompt_files) {
    tokenizer::ChatMessage message;
    message.role = "user";
    PAGODA_ASSIGN_OR_RETURN(message.content, read_text_file(path));
    PAGODA_ASSIGN_OR_RETURN(
        const std::string text,
        chat.render(std::span(&message, 1), true, tokenizer::special_token_variables(*loaded.tokenizer)));
    rendered.push_back(loaded.tokenizer->encode(text, /*add_special=*/false, /*parse_special=*/true));
  }
  std::vector<std::vector<int32_t>> prompts;
  for (size_t i = 0; i < n; ++i) prompts.push_back(rendered[i % rendered.size()]);
  return prompts;
}

// Request `index` of the run: greedy by default (the cheapest sampler), else drawing
// with its own seed so that every run makes the same tokens.
engine::EngineRequest request_of(std::vector<int32_t> prompt, const ConcurrencyBenchArgs& a, size_t index,
                                 std::shared_ptr<const engine::GrammarConstraint> grammar) {
  engine::EngineRequest request;
  request.prompt = std::move(prompt);
  request.sampling.temperature = a.temperature;
  request.sampling.top_k = a.top_k;
  request.sampling.top_p = a.top_p;
  request.sampling.min_p = a.min_p;
  if (a.temperature > 0.0f) request.sampling.seed = a.seed + index;
  request.sampling.grammar = std::move(grammar);
  request.stop.max_tokens = a.gen_len;
  // A random prompt has no natural end: every request makes the same number of tokens.
  request.stop.ignore_eog = a.prompt_files.empty();
  return request;
}

// Submits the prompts keeping `concurrency` in flight; the first one alone until its
// first token when they share a prefix. Returns the seconds from start to last finish.
Expected<double> drive(engine::Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                       const ConcurrencyBenchArgs& a,
                       const std::shared_ptr<const engine::GrammarConstraint>& grammar,
                       RunTracker& tracker) {
  tracker.start();
  for (size_t i = 0; i < prompts.size(); ++i) {
    tracker.wait_in_flight_below(i, static_cast<size_t>(a.concurrency));
    tracker.submitted(i);
    auto sink = std::make_shared<TimingSink>(tracker, i);
    PAGODA_TRY(engine.add(request_of(prompts[i], a, i, grammar), sink).status());
    if (i == 0 && a.shared_prefix_len > 0) tracker.wait_first_token(0);
  }
  tracker.wait_in_flight_below(prompts.size(), 1);
  return tracker.now();
}

// The measured run's shape once, briefly, before the clock starts: as many requests in
// flight as it keeps, each prompt as long as a measured request is at its end (so they
// hold as many KV blocks), two tokens each (the second from a decoding step of all of
// them). A server that has run a while has its weights paged in, its scratch sized for
// full steps, the weights it multiplies in batches kept repacked and its KV cache's
// pages mapped; without this the first measured steps pay for all of it (SmolLM2, 16
// requests of 128 + 128: 5% of the run).
Status warm_up(engine::Engine& engine, const ConcurrencyBenchArgs& a,
               const tokenizer::Tokenizer& tokenizer) {
  ConcurrencyBenchArgs warm = a;
  warm.concurrency = std::min({a.concurrency, a.max_running, a.num_requests});
  warm.gen_len = std::min(a.gen_len, 2);
  warm.shared_prefix_len = 0;  // its own prompts: nothing the measured run could find cached
  warm.prompt_files.clear();
  warm.prompt_len = a.shared_prefix_len + a.prompt_len + a.gen_len - warm.gen_len;
  const size_t n = static_cast<size_t>(warm.concurrency);
  const std::vector<std::vector<int32_t>> prompts = make_prompts(warm, tokenizer, a.seed + 1, n);
  RunTracker tracker(n);
  PAGODA_TRY(drive(engine, prompts, warm, nullptr, tracker).status());
  for (const RequestTiming& r : tracker.results()) {
    if (!r.error.empty()) return internal_error("bench: warm-up failed: " + r.error);
  }
  return Status::ok_status();
}

// What the engine did after `before` (the warm-up).
engine::EngineStats stats_since(const engine::EngineStats& before, engine::EngineStats after) {
  after.n_steps -= before.n_steps;
  after.n_decode_steps -= before.n_decode_steps;
  after.timings.forward_decode -= before.timings.forward_decode;
  after.n_batched_tokens -= before.n_batched_tokens;
  after.scheduler.n_prefilled_tokens -= before.scheduler.n_prefilled_tokens;
  after.scheduler.n_decoded_tokens -= before.scheduler.n_decoded_tokens;
  after.scheduler.n_preemptions -= before.scheduler.n_preemptions;
  after.scheduler.n_draft_tokens -= before.scheduler.n_draft_tokens;
  after.scheduler.n_accepted_draft_tokens -= before.scheduler.n_accepted_draft_tokens;
  after.scheduler.n_speculative_steps -= before.scheduler.n_speculative_steps;
  after.prefix_cache.hit_tokens -= before.prefix_cache.hit_tokens;
  after.prefix_cache.queried_tokens -= before.prefix_cache.queried_tokens;
  after.prefix_cache.queries -= before.prefix_cache.queries;
  after.timings.schedule -= before.timings.schedule;
  after.timings.forward -= before.timings.forward;
  after.timings.postprocess -= before.timings.postprocess;
  after.timings.draft -= before.timings.draft;
  return after;
}

std::string model_name(const std::string& path, const LoadedModel& loaded) {
  const ModelSummary summary = summarize_model(*loaded.file, loaded.model->config(), path);
  return summary.filename + " (" + summary.type + ")";
}

}  // namespace

void add_concurrency_options(CLI::App& command, ConcurrencyBenchArgs& args) {
  command.add_option("--concurrency", args.concurrency,
                     "Serving benchmark: requests in flight at once through the engine");
  command.add_option("--num-requests", args.num_requests,
                     "Requests in all (default: the concurrency)");
  command
      .add_option("--prompt-len", args.prompt_len,
                  "Prompt tokens of each request (after the shared prefix)")
      ->capture_default_str();
  command.add_option("--gen-len", args.gen_len, "Tokens each request generates")
      ->capture_default_str();
  command
      .add_option("--shared-prefix-len", args.shared_prefix_len, "Tokens every prompt starts with")
      ->capture_default_str();
  command.add_option("--max-batched-tokens", args.max_batched_tokens, "Tokens per engine step")
      ->capture_default_str();
  command.add_option("--max-running", args.max_running,
                     "Requests holding KV at once (default: the concurrency)");
  command.add_option("--kv-cache-memory", args.kv_cache_memory,
                     "KV cache budget in bytes (default: half the available memory, capped at "
                     "what max-running full requests use)");
  command.add_option("--kv-cache-type", args.kv_cache_type, "KV cache type: f16, f32 or q8_0")
      ->capture_default_str();
  command.add_option("--seed", args.seed, "Seed of the random prompts (and of request i's draws: seed + i)")
      ->capture_default_str();
  command.add_option("--temperature", args.temperature, "Sampling temperature of every request (0: greedy)")
      ->capture_default_str()
      ->check(CLI::Range(0.0f, 100.0f));
  command.add_option("--top-k", args.top_k, "Keep the k most likely tokens of each draw (0: all)")
      ->check(CLI::NonNegativeNumber);
  command.add_option("--top-p", args.top_p, "Keep the smallest head of each draw holding this probability mass")
      ->capture_default_str()
      ->check(CLI::Range(0.0f, 1.0f));
  command.add_option("--min-p", args.min_p, "Drop tokens less likely than min-p times the most likely")
      ->capture_default_str()
      ->check(CLI::Range(0.0f, 1.0f));
  command.add_flag("--host-sampling", args.host_sampling,
                   "Sample every token on the host from copied logits, not where the logits are (for comparison)");
  add_grammar_options(command, args.grammar);
  command.add_option("--prompt-file", args.prompt_files,
                     "A real prompt (repeatable): the file's text as a user message through the "
                     "model's chat template; requests stop at end of generation");
  add_speculative_options(command, args.speculative);
}

Status run_concurrency_bench(const std::string& model_path, const backend::BackendOptions& backend, bool json,
                             const ConcurrencyBenchArgs& given) {
  PAGODA_TRY(check_args(given));
  ConcurrencyBenchArgs a = given;
  if (a.num_requests == 0) a.num_requests = a.concurrency;
  if (a.max_running == 0) a.max_running = a.concurrency;
  PAGODA_ASSIGN_OR_RETURN(engine::EngineConfig config, engine_config_of(a));
  // Logs go to stderr, so that --json output stays one JSON object on stdout.
  log_to_stderr();
  PAGODA_ASSIGN_OR_RETURN(LoadedModel loaded,
                          load_model_file(model_path, backend, config.load_options(), true));
  std::vector<std::vector<int32_t>> prompts;
  if (a.prompt_files.empty()) {
    prompts = make_prompts(a, *loaded.tokenizer, a.seed, static_cast<size_t>(a.num_requests));
  } else {
    // Real prompts set the context (and the warm-up's prompts) by the longest of them.
    PAGODA_ASSIGN_OR_RETURN(prompts, file_prompts(a, loaded, static_cast<size_t>(a.num_requests)));
    a.shared_prefix_len = 0;
    a.prompt_len = 0;
    for (const std::vector<int32_t>& prompt : prompts) {
      a.prompt_len = std::max(a.prompt_len, static_cast<int>(prompt.size()));
    }
    config.scheduler.max_model_len = a.prompt_len + a.gen_len;
  }
  RunTracker tracker(static_cast<size_t>(a.num_requests));  // outlives the engine's sinks
  LoadedDraft draft;
  if (config.speculative.method == engine::SpeculativeMethod::kDraft) {
    PAGODA_ASSIGN_OR_RETURN(draft, load_draft_model(config.speculative.draft_model_path, loaded,
                                                    config.draft_load_options()));
  }
  PAGODA_ASSIGN_OR_RETURN(
      std::unique_ptr<engine::Engine> engine,
      engine::Engine::create(*loaded.model, *loaded.backend, *loaded.tokenizer, config, draft.model.get()));
  PAGODA_ASSIGN_OR_RETURN(const std::shared_ptr<const engine::GrammarConstraint> grammar,
                          load_grammar_constraint(a.grammar, *loaded.tokenizer));
  PAGODA_TRY(warm_up(*engine, a, *loaded.tokenizer));
  const engine::EngineStats before = engine->stats();
  loaded.backend->reset_op_times();  // the engine is idle between the warm-up and the run

  ConcurrencyRun run;
  PAGODA_ASSIGN_OR_RETURN(run.seconds, drive(*engine, prompts, a, grammar, tracker));
  run.args = a;
  run.model = model_name(model_path, loaded);
  run.backend = loaded.backend->name();
  run.n_kv_blocks = engine->kv_shape().n_blocks;
  run.block_size = engine->kv_shape().block_size;
  run.requests = tracker.results();
  run.engine = stats_since(before, engine->stats());
  run.speculative_method = std::string(engine::speculative_method_name(config.speculative.method));
  for (const RequestTiming& r : run.requests) {
    if (!r.error.empty()) return internal_error("bench: a request failed: " + r.error);
  }
  print_concurrency_report(run, json);
  const std::string steps = loaded.backend->step_summary();
  if (!steps.empty()) std::fprintf(stderr, "%s\n", steps.c_str());
  const std::vector<backend::OpTime> ops = loaded.backend->op_times();
  if (!ops.empty()) {
    double output_tokens = 0.0;  // what was generated: requests may stop before gen_len
    for (const RequestTiming& r : run.requests) output_tokens += r.n_tokens;
    std::fprintf(stderr, "time per output token, prompts included:\n%s",
                 format_op_profile(ops, output_tokens, run.seconds).c_str());
  }
  return Status::ok_status();
}

}  // namespace pagoda::cli
