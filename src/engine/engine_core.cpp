#include "engine/engine_core.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace pagoda::engine {
namespace {

// The blocks the budget buys for this model's KV shape (block count left at 0). An
// automatic budget on a device backend is all that the backend leaves for the cache
// (its memory-utilization bound less weights and scratch); on the CPU, a share of the
// host's available memory.
Expected<KvBlockPlan> plan_blocks(const EngineConfig& config, const backend::Backend& backend,
                                  const backend::KvCacheShape& shape, uint64_t draft_block_bytes) {
  KvBlockLimits limits;
  limits.block_bytes = shape.block_bytes() + draft_block_bytes;
  limits.min_blocks = config.blocks_per_request();
  limits.useful_blocks = config.useful_blocks();
  limits.max_blocks = INT32_MAX / config.block_size;  // slot numbers stay in int32 range
  if (config.kv_memory.bytes) return plan_kv_blocks(config.kv_memory, limits, std::nullopt);
  if (const std::optional<backend::Backend::CacheMemory> device = backend.cache_memory()) {
    KvMemoryBudget all_of_it;
    all_of_it.free_memory_share = 1.0;
    PAGODA_ASSIGN_OR_RETURN(KvBlockPlan plan, plan_kv_blocks(all_of_it, limits, device->bytes));
    plan.description += " on the device (" + device->description + ")";
    return plan;
  }
  PAGODA_ASSIGN_OR_RETURN(const uint64_t available, available_memory_bytes());
  return plan_kv_blocks(config.kv_memory, limits, available);
}

void log_kv_cache(const backend::KvCacheShape& shape, const KvBlockPlan& plan) {
  spdlog::info("kv cache: {} blocks x {} tokens = {} tokens, {} ({:.1f} MiB; budget: {})",
               shape.n_blocks, shape.block_size,
               static_cast<int64_t>(shape.n_blocks) * shape.block_size, dtype_name(shape.type),
               static_cast<double>(plan.bytes) / (1024.0 * 1024.0), plan.description);
}

}  // namespace

Expected<std::unique_ptr<EngineCore>> EngineCore::create(model::Model& model,
                                                         backend::Backend& backend,
                                                         const tokenizer::Tokenizer& tokenizer,
                                                         const EngineConfig& config,
                                                         model::Model* draft_model) {
  if (tokenizer.n_vocab() != model.config().n_vocab) {
    return invalid_argument("engine: the tokenizer has " + std::to_string(tokenizer.n_vocab()) +
                            " tokens, the model " + std::to_string(model.config().n_vocab));
  }
  PAGODA_ASSIGN_OR_RETURN(EngineConfig resolved, config.resolve(model.config()));
  // A step's batch must fit what the model was loaded for (config.load_options()).
  const model::LoadOptions needed = resolved.load_options();
  const model::BatchLimits loaded = model.batch_limits();
  if (loaded.max_tokens < needed.max_batch_tokens || loaded.max_logit_rows < needed.max_logit_rows) {
    return invalid_argument("engine: the model was loaded for steps of " + std::to_string(loaded.max_tokens) +
                            " tokens and " + std::to_string(loaded.max_logit_rows) +
                            " logit rows; this configuration needs " + std::to_string(needed.max_batch_tokens) +
                            " and " + std::to_string(needed.max_logit_rows) + " (EngineConfig::load_options)");
  }
  const bool drafts = resolved.speculative.method == SpeculativeMethod::kDraft;
  if (drafts && draft_model == nullptr) {
    return invalid_argument("engine: speculating with a draft model needs the draft model loaded");
  }
  if (drafts && draft_model->config().n_vocab != model.config().n_vocab) {
    return invalid_argument("engine: the draft model has " + std::to_string(draft_model->config().n_vocab) +
                            " tokens, the model " + std::to_string(model.config().n_vocab));
  }
  backend::KvCacheShape shape =
      model::kv_cache_shape(model.config(), 0, resolved.block_size, resolved.kv_type);
  const uint64_t draft_block_bytes = drafts ? DraftProposer::block_bytes(*draft_model, resolved) : 0;
  PAGODA_ASSIGN_OR_RETURN(const KvBlockPlan plan,
                          plan_blocks(resolved, backend, shape, draft_block_bytes));
  shape.n_blocks = plan.n_blocks;
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<backend::KvStorage> storage, backend.allocate_kv(shape));
  log_kv_cache(shape, plan);
  const RunnerLimits limits{.max_batch_tokens = resolved.scheduler.max_batched_tokens,
                            .max_sequences = resolved.scheduler.max_running,
                            .max_logit_rows = resolved.max_logit_rows()};
  PAGODA_ASSIGN_OR_RETURN(ModelRunner runner,
                          ModelRunner::create(model, backend, *storage, limits));
  PAGODA_TRY(runner.warm_up());
  std::unique_ptr<DraftProposer> draft;
  if (drafts) {
    PAGODA_ASSIGN_OR_RETURN(draft, DraftProposer::create(*draft_model, backend, resolved, shape.n_blocks));
    spdlog::info("speculative decoding: a draft pass takes {:.2f} ms, its catch-up {:.3f} ms a token (timed at start)",
                 1e3 * draft->pass_seconds(), 1e3 * draft->catch_up_seconds_per_token());
  }
  return std::unique_ptr<EngineCore>(new EngineCore(model, backend, tokenizer, std::move(resolved),
                                                    std::move(storage), std::move(runner),
                                                    std::move(draft)));
}

EngineCore::EngineCore(model::Model& model, backend::Backend& backend, const tokenizer::Tokenizer& tokenizer,
                       EngineConfig config, std::unique_ptr<backend::KvStorage> kv_storage,
                       ModelRunner runner, std::unique_ptr<DraftProposer> draft)
    : model_(&model),
      backend_(&backend),
      tokenizer_(&tokenizer),
      config_(std::move(config)),
      kv_storage_(std::move(kv_storage)),
      kv_(kv_storage_->shape().n_blocks, config_.block_size, config_.enable_prefix_cache,
          config_.prefix_cache_eviction),
      scheduler_(config_.scheduler, kv_),
      runner_(std::move(runner)),
      draft_(std::move(draft)),
      step_costs_(config_.scheduler.max_batched_tokens) {
  if (config_.speculative.method == SpeculativeMethod::kNgram) {
    ngram_.emplace(config_.speculative.ngram_min, config_.speculative.ngram_max);
  }
  const auto max_running = static_cast<size_t>(config_.scheduler.max_running);
  sequences_.reserve(max_running);
  sampled_.reserve(max_running);
  samplings_.reserve(max_running);
  finished_.reserve(max_running);
}

Status EngineCore::check_request(const EngineRequest& request) const {
  const int32_t max_len = config_.scheduler.max_model_len;
  if (request.prompt.empty()) return invalid_argument("the prompt has no tokens");
  if (request.prompt.size() >= static_cast<size_t>(max_len)) {
    return invalid_argument("the prompt has " + std::to_string(request.prompt.size()) +
                            " tokens; the context holds " + std::to_string(max_len) +
                            " and at least one must be left to generate");
  }
  const int32_t n_vocab = model_->config().n_vocab;
  for (const int32_t token : request.prompt) {
    if (token < 0 || token >= n_vocab) {
      return invalid_argument("prompt token " + std::to_string(token) +
                              " is outside the vocabulary of " + std::to_string(n_vocab));
    }
  }
  if (request.n < 1 || request.n > config_.scheduler.max_running) {
    return invalid_argument("n must be in [1, " + std::to_string(config_.scheduler.max_running) +
                            "], got " + std::to_string(request.n));
  }
  return Status::ok_status();
}

Expected<std::vector<std::unique_ptr<Request>>> EngineCore::make_requests(
    EngineRequest request, std::shared_ptr<RequestSink> sink) {
  if (!sink) return invalid_argument("a request needs a sink for its outputs");
  PAGODA_TRY(check_request(request));
  const RequestId first = next_id_.fetch_add(static_cast<RequestId>(request.n));
  std::vector<std::unique_ptr<Request>> made;
  made.reserve(static_cast<size_t>(request.n));
  for (int32_t i = 0; i < request.n; ++i) {
    SamplingParams sampling = request.sampling;
    if (sampling.seed) *sampling.seed += static_cast<uint64_t>(i);
    PAGODA_ASSIGN_OR_RETURN(
        RequestProcessor processor,
        RequestProcessor::create(first + i, request.prompt, sampling, request.stop, *tokenizer_));
    auto r = std::make_unique<Request>();
    r->id = first + static_cast<RequestId>(i);
    r->tokens = request.prompt;
    r->n_prompt_tokens = static_cast<int32_t>(request.prompt.size());
    r->sampling = std::move(sampling);
    r->stop = request.stop;
    r->priority = request.priority;
    r->cache_salt = request.cache_salt;
    r->speculative = request.speculative;
    if (i > 0) r->parent = first;
    r->sink = sink;
    r->processor.emplace(std::move(processor));
    made.push_back(std::move(r));
  }
  return made;
}

void EngineCore::admit(std::vector<std::unique_ptr<Request>> requests, std::vector<Delivery>& out) {
  for (std::unique_ptr<Request>& request : requests) {
    if (!request || !request->processor) continue;  // only make_requests' requests
    const Status refused = scheduler_.check_new_request(*request);
    if (!refused.ok()) {
      out.push_back(delivery(*request, request->processor->abort(refused.message())));
      continue;
    }
    (void)scheduler_.add(std::move(request));  // checked just above
  }
}

void EngineCore::abort(RequestId id, const std::string& error, std::vector<Delivery>& out) {
  const std::unique_ptr<Request> request = scheduler_.finish(id);
  if (request && request->processor) {
    out.push_back(delivery(*request, request->processor->abort(error)));
  }
}

void EngineCore::abort_all(const std::string& error, std::vector<Delivery>& out) {
  for (const RequestId id : scheduler_.request_ids()) abort(id, error, out);
}

Delivery EngineCore::delivery(const Request& request, RequestOutput output) const {
  output.n_cached_prompt_tokens = request.n_cached_prompt_tokens;
  return Delivery{request.sink, std::move(output)};
}

EngineStats EngineCore::stats() const {
  EngineStats stats;
  stats.scheduler = scheduler_.stats();
  stats.prefix_cache = stats.scheduler.prefix_cache;  // per admission, not per lookup
  stats.n_waiting = scheduler_.n_waiting();
  stats.n_running = scheduler_.n_running();
  stats.n_kv_blocks = kv_.n_blocks();
  stats.n_free_kv_blocks = kv_.n_free_blocks();
  stats.n_cached_kv_blocks = kv_.pool().n_cached();
  stats.n_kv_evictions = kv_.pool().n_evictions();
  stats.kv_usage = kv_.usage();
  stats.n_steps = n_steps_;
  stats.n_decode_steps = n_decode_steps_;
  stats.n_batched_tokens = n_batched_tokens_;
  if (draft_) stats.n_draft_model_tokens = draft_->n_tokens_run();
  stats.timings = timings_;
  const Status health = backend_->health();
  if (!health.ok()) stats.backend_fault = health.message();
  return stats;
}

}  // namespace pagoda::engine
