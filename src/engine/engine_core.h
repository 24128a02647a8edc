#pragma once
// The engine's single-threaded heart: the KV storage (allocated once from the memory
// budget), the block manager, the scheduler (which owns every request, its
// RequestProcessor included) and the model runner. One step is nano-vllm's three lines: schedule(), run the batch, then
// sample / detokenize / stop-check every request that got logits and hand the
// scheduler the sampled tokens. Outputs are collected for the caller to deliver.
//
// Only make_requests() may be called from any thread; everything else belongs to the
// thread that runs the steps (see Engine, which adds the thread and the inbox).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/status.h"
#include "engine/draft_length.h"
#include "engine/draft_proposer.h"
#include "engine/engine_config.h"
#include "engine/model_runner.h"
#include "engine/ngram_proposer.h"
#include "engine/request.h"
#include "engine/request_output.h"
#include "engine/request_processor.h"
#include "engine/scheduler.h"
#include "engine/step_cost.h"
#include "kv/kv_cache_manager.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::engine {

// What a caller submits: one prompt, how to sample it, and how many completions.
struct EngineRequest {
  std::vector<int32_t> prompt;  // token ids, BOS included when the model wants one
  SamplingParams sampling;
  StopConditions stop;
  int32_t priority = 0;     // lower runs first
  // Lets the engine speculate for it when configured to (the output is the same; off
  // spares the verification rows of a request known to be unpredictable).
  bool speculative = true;
  uint64_t cache_salt = 0;  // prefix-cache blocks are shared only within one salt
  // Completions of the prompt, sharing its KV blocks until they diverge. Completion i
  // (0-based) samples with seed + i when a seed is given, so each one is reproducible
  // and they differ from each other.
  int32_t n = 1;
};

// An output and the sink it goes to.
struct Delivery {
  std::shared_ptr<RequestSink> sink;
  RequestOutput output;
};

struct EngineTimings {          // seconds, summed over every step since start
  double schedule = 0.0;        // Scheduler::schedule()
  double forward = 0.0;         // block copies and the forward pass (ModelRunner::execute)
  double forward_decode = 0.0;  // of which in steps that only decoded (one token a request)
  double postprocess = 0.0;     // sampling, detokenizing, stop checks, Scheduler::update()
  double draft = 0.0;           // a draft model's passes (speculative decoding)
};

struct EngineStats {
  SchedulerStats scheduler;
  kv::PrefixCacheStats prefix_cache;  // = scheduler.prefix_cache: counted per admission
  int32_t n_waiting = 0;
  int32_t n_running = 0;
  int32_t n_kv_blocks = 0;
  int32_t n_free_kv_blocks = 0;  // unreferenced (free or cached, evictable)
  int32_t n_cached_kv_blocks = 0;  // holding a prefix-cache identity (referenced or not)
  int64_t n_kv_evictions = 0;      // cached blocks reused for other tokens so far
  double kv_usage = 0.0;         // share of blocks some request holds, in [0, 1]
  int64_t n_steps = 0;
  int64_t n_decode_steps = 0;    // steps that only decoded (one token a request)
  int64_t n_batched_tokens = 0;  // tokens run through the model, all steps together
  int64_t n_draft_model_tokens = 0;  // tokens run through a draft model (speculative decoding)
  EngineTimings timings;
  // Why the backend can take no more work (a GPU kernel fault); empty while it can.
  // Every step fails then, each request with the error, and the server reports itself
  // unhealthy.
  std::string backend_fault;
};

class EngineCore {
 public:
  // Resolves the config for the model, sizes the KV cache from its memory budget (and
  // logs it), allocates it. model, backend and tokenizer must outlive the core; the model
  // must have been loaded with config.load_options() or larger. Speculating with a draft
  // model (config.speculative.method kDraft) needs `draft_model`, on the same backend,
  // of the same vocabulary (the caller checks the tokens' texts: tokenizer/
  // vocabulary_match.h), loaded with config.draft_load_options(); its KV blocks come
  // out of the same budget.
  static Expected<std::unique_ptr<EngineCore>> create(model::Model& model,
                                                      backend::Backend& backend,
                                                      const tokenizer::Tokenizer& tokenizer,
                                                      const EngineConfig& config,
                                                      model::Model* draft_model = nullptr);

  // Checks `request` (a non-empty prompt of valid ids shorter than max_model_len, sampling
  // and stop parameters in range, 1 <= n <= max_running) and makes its n Requests, each
  // with a fresh id; the first is the parent of the others. Thread-safe.
  Expected<std::vector<std::unique_ptr<Request>>> make_requests(EngineRequest request,
                                                                std::shared_ptr<RequestSink> sink);

  // Hands new requests to the scheduler; one it refuses gets an error output.
  void admit(std::vector<std::unique_ptr<Request>> requests, std::vector<Delivery>& out);
  // Ends a request, waiting or running: its blocks go back at once and its sink gets a
  // last output with finish kAbort (and `error`, if any). Unknown ids are ignored.
  void abort(RequestId id, const std::string& error, std::vector<Delivery>& out);
  void abort_all(const std::string& error, std::vector<Delivery>& out);

  // Runs one step, appending its outputs to `out`. A failed forward pass fails every
  // request of the step (finish kAbort with the error). Returns false when nothing
  // could be scheduled.
  bool step(std::vector<Delivery>& out);

  bool has_requests() const { return scheduler_.has_requests(); }
  EngineStats stats() const;
  const EngineConfig& config() const { return config_; }  // resolved
  const backend::KvCacheShape& kv_shape() const { return kv_storage_->shape(); }

 private:
  EngineCore(model::Model& model, backend::Backend& backend, const tokenizer::Tokenizer& tokenizer,
             EngineConfig config, std::unique_ptr<backend::KvStorage> kv_storage, ModelRunner runner,
             std::unique_ptr<DraftProposer> draft);
  Status check_request(const EngineRequest& request) const;
  // The runner's view of each scheduled request, in batch order.
  void gather_sequences(const SchedulerOutput& plan);
  // Samples every request of the step that got logits; fills sampled_ and finished_.
  void process_logits(const SchedulerOutput& plan, const StepLogits& logits,
                      std::vector<Delivery>& out);
  void fail_step(const SchedulerOutput& plan, const Status& error, std::vector<Delivery>& out);
  // Speculative decoding: the next step's proposals of every request this step sampled
  // for that is still running (engine_speculation.cpp).
  void propose_drafts(const SchedulerOutput& plan);
  // A draft model's catch-up for `request`, per step it is expected to have left
  // (DraftCandidate::fixed_seconds); `room`: the tokens it may still generate.
  double catch_up_charge(const Request& request, int32_t room) const;
  // A catch-up is an investment that only a measured step cost can justify: while the
  // step the chosen proposals make has a size never measured (its cost an interpolation,
  // which prompt steps make look cheap), at most one request starts one; its proposals
  // measure that size, and the next steps decide on the others from it.
  void limit_unmeasured_catch_ups(const StepCostModel& cost);
  Delivery delivery(const Request& request, RequestOutput output) const;

  model::Model* model_;
  backend::Backend* backend_;  // its host threads sample a step's requests
  const tokenizer::Tokenizer* tokenizer_;
  EngineConfig config_;
  std::unique_ptr<backend::KvStorage> kv_storage_;
  kv::KvCacheManager kv_;
  Scheduler scheduler_;  // refers to kv_
  ModelRunner runner_;
  std::atomic<RequestId> next_id_{1};
  std::optional<NgramProposer> ngram_;  // set when speculating by prompt lookup
  std::unique_ptr<DraftProposer> draft_;  // set when speculating with a draft model
  StepCosts step_costs_;                  // the target's forward seconds by rows, measured
  SharedAcceptance shared_acceptance_;     // what all requests' verifications keep
  std::vector<DraftCandidate> candidates_;   // propose_drafts' scratch
  std::vector<Request*> candidate_requests_;  // [candidates_]
  std::vector<DraftGain> draft_gains_;

  // Per-step scratch, capacity kept between steps.
  std::vector<RunnerSequence> sequences_;    // [scheduled]
  std::vector<LogitAdjustment> adjustments_;  // the sequences' adjustments, which they view
  std::vector<RowSampling> row_samplings_;    // the sequences' rows chosen on the device, which they view
  // Where sequence k's rows and adjustments lie in those two while they grow.
  struct DeviceRowsAt {
    size_t rows = 0, n_rows = 0, adjustments = 0, n_adjustments = 0;
  };
  std::vector<DeviceRowsAt> device_rows_at_;  // [scheduled]
  // The rows (n_rows of them) and adjustments of a sequence whose tokens are chosen on
  // the device, appended to row_samplings_ and adjustments_, their places in `at`; false
  // (nothing appended) when the step's adjustments would pass their limit.
  bool take_device_rows(RequestProcessor& processor, int32_t n_rows, DeviceRowsAt& at);
  // One request of the step that samples: its logits, and how its sampling went.
  struct Sampling {
    Request* request;
    std::span<const float> logits;   // [1 + drafts.size()][n_vocab]
    std::span<const int32_t> drafts;  // the proposals it verifies
    std::span<const float> draft_probs;  // [drafts.size()][n_vocab] for drawn proposals, or empty
    // Its tokens chosen with the logits (token_on_device), one a row; empty otherwise.
    std::span<const int32_t> device_tokens;
    std::span<const RowLogprobs> device_logprobs;  // and their log-probabilities, where the step asked
    Status status;
  };
  std::vector<Sampling> samplings_;          // [sampling requests]
  std::vector<SampledTokenUpdate> sampled_;  // [sampling requests]
  std::vector<RequestId> finished_;          // requests the step ended
  int64_t n_steps_ = 0;
  int64_t n_decode_steps_ = 0;
  int64_t n_batched_tokens_ = 0;
  EngineTimings timings_;
};

}  // namespace pagoda::engine
