// The Engine's API on stories260K: abort of waiting and running requests, n completions
// sharing their prompt's blocks, stop strings and max_tokens, the context limit, adds
// from several threads, a failed forward pass, shutdown, and the requests it refuses.

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "engine_test_util.h"

namespace pagoda::engine {
namespace {

using testing::make_engine;
using testing::Received;
using testing::RecordingSink;
using testing::run_all;

// A prompt of BOS and n ordinary tokens (ids 3..511), different for each seed.
std::vector<int32_t> prompt_of(int32_t seed, int32_t n) {
  std::vector<int32_t> prompt = {1};
  for (int32_t i = 0; i < n; ++i) prompt.push_back(3 + (seed * 7919 + i * 104729) % 509);
  return prompt;
}

EngineRequest greedy(std::vector<int32_t> prompt, int32_t max_tokens, bool ignore_eog = true) {
  EngineRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0.0f;
  r.stop.max_tokens = max_tokens;
  r.stop.ignore_eog = ignore_eog;
  return r;
}

// The model under test behind a gate, so that tests can hold the engine still at a
// known step: forward passes run only while the gate allows (limit(n): n more, then
// the next one waits; open(): all). A batch holding the poison token fails.
class GatedModel final : public model::Model {
 public:
  GatedModel(model::Model& inner, int32_t poison = -1) : inner_(inner), poison_(poison) {}
  const model::ModelConfig& config() const override { return inner_.config(); }
  model::BatchLimits batch_limits() const override { return inner_.batch_limits(); }
  Status forward(const model::ForwardBatch& batch, backend::KvStorage& kv,
                 std::span<float> logits) override {
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return allowed_ != 0; });
      if (allowed_ > 0) --allowed_;
    }
    for (const int32_t token : batch.token_ids) {
      if (token == poison_) return internal_error("poisoned batch");
    }
    return inner_.forward(batch, kv, logits);
  }
  void limit(int64_t n) { set_allowed(n); }
  void open() { set_allowed(-1); }

 private:
  void set_allowed(int64_t n) {
    {
      const std::lock_guard lock(mutex_);
      allowed_ = n;
    }
    changed_.notify_all();
  }
  model::Model& inner_;
  int32_t poison_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int64_t allowed_ = -1;  // passes still allowed; -1: any number
};

// Opens the gate when it goes out of scope, before the engine (declared earlier) stops.
struct OpenOnExit {
  GatedModel& gate;
  ~OpenOnExit() { gate.open(); }
};

class EngineApi : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.scheduler = {.max_batched_tokens = 64, .max_running = 8, .max_model_len = 512};
    config_.kv_memory.bytes = 4u << 20;  // 409 blocks of stories260K
    m_ = testing::load_batched_model("stories260K.gguf", config_.load_options());
    ASSERT_TRUE(m_.model && m_.tokenizer);
  }
  Received alone(const EngineRequest& request) {
    std::unique_ptr<Engine> engine = make_engine(m_, config_);
    EXPECT_TRUE(engine);
    return engine ? run_all(*engine, {request}).front() : Received{};
  }
  RequestId add(Engine& engine, const EngineRequest& request, std::shared_ptr<RecordingSink> sink) {
    Expected<std::vector<RequestId>> ids = engine.add(request, std::move(sink));
    EXPECT_TRUE(ids.ok()) << ids.status().message();
    return ids.ok() ? ids->front() : 0;
  }

  EngineConfig config_;
  testing::BatchedModel m_;
};

// The model lets three steps through, then holds the engine at the fourth while both
// aborts are queued: the running request is still running when they land.
TEST_F(EngineApi, AbortEndsWaitingAndRunningRequestsAndFreesTheirBlocks) {
  config_.scheduler.max_running = 1;  // the second request has to wait
  GatedModel gated(*m_.model);  // open while the engine is made: it warms the model up
  Expected<std::unique_ptr<Engine>> engine =
      Engine::create(gated, *m_.backend, *m_.tokenizer, config_);
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  // Closed while both are added: on a loaded machine the engine could otherwise run its
  // three steps and block in the fourth before the second request reaches its inbox.
  gated.limit(0);
  const OpenOnExit open_on_exit{gated};
  auto sink = std::make_shared<RecordingSink>();
  const RequestId running = add(**engine, greedy(prompt_of(1, 40), 400), sink);
  const RequestId waiting = add(**engine, greedy(prompt_of(2, 40), 400), sink);
  gated.limit(3);
  ASSERT_TRUE(sink->wait_outputs(running, 3));
  EXPECT_GT((*engine)->stats().kv_usage, 0.0);
  // The stats are published once a step; on a loaded machine the one that shows the
  // second request queued may come a moment after the outputs (the gate holds the
  // fourth step, so the published state cannot move past it).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((*engine)->stats().n_waiting != 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ((*engine)->stats().n_waiting, 1);
  (*engine)->abort(waiting);
  (*engine)->abort(running);
  (*engine)->abort(12345);  // unknown: ignored
  gated.open();
  ASSERT_TRUE(sink->wait_finished({running, waiting}));
  const Received r = sink->get(running), w = sink->get(waiting);
  EXPECT_EQ(r.finish, FinishReason::kAbort);
  EXPECT_EQ(r.error, "");
  // Three steps, and the held one unless the aborts were drained before it.
  EXPECT_GE(r.tokens.size(), 3u);
  EXPECT_LE(r.tokens.size(), 4u);
  EXPECT_EQ(w.finish, FinishReason::kAbort);
  EXPECT_TRUE(w.tokens.empty());
  const EngineStats stats = (*engine)->stats();
  EXPECT_EQ(stats.kv_usage, 0.0);
  EXPECT_EQ(stats.n_running + stats.n_waiting, 0);
  (*engine)->abort(running);  // finished already: ignored
}

// Three greedy completions of one prompt: all equal the single greedy completion, and
// the prompt is computed once (each child recomputes only its last prompt token).
TEST_F(EngineApi, NCompletionsShareThePromptsBlocks) {
  EngineRequest request = greedy(prompt_of(3, 49), 20);
  const Received single = alone(request);
  request.n = 3;
  std::unique_ptr<Engine> engine = make_engine(m_, config_);
  ASSERT_TRUE(engine);
  const std::vector<Received> completions = run_all(*engine, {request});
  ASSERT_EQ(completions.size(), 3u);
  for (const Received& c : completions) {
    EXPECT_EQ(c.tokens, single.tokens);
    EXPECT_EQ(c.text, single.text);
  }
  EXPECT_LT(engine->stats().scheduler.n_prefilled_tokens, 50 + 2 * 16);
  EXPECT_EQ(engine->stats().kv_usage, 0.0);
}

// Sampled completions: completion i is the single request with seed + i.
TEST_F(EngineApi, NSampledCompletionsUseConsecutiveSeeds) {
  EngineRequest request = greedy(prompt_of(4, 30), 24);
  request.sampling.temperature = 1.0f;
  request.sampling.seed = 77;
  request.n = 3;
  std::unique_ptr<Engine> engine = make_engine(m_, config_);
  ASSERT_TRUE(engine);
  const std::vector<Received> completions = run_all(*engine, {request});
  ASSERT_EQ(completions.size(), 3u);
  request.n = 1;
  for (uint64_t i = 0; i < 3; ++i) {
    request.sampling.seed = 77 + i;
    EXPECT_EQ(completions[i].tokens, alone(request).tokens) << "completion " << i;
  }
  EXPECT_NE(completions[0].tokens, completions[1].tokens);
}

TEST_F(EngineApi, StopStringsAndMaxTokens) {
  const Received free_run = alone(greedy(prompt_of(5, 10), 30));
  ASSERT_EQ(free_run.tokens.size(), 30u);
  EXPECT_EQ(free_run.finish, FinishReason::kLength);
  // Stop at the first occurrence of some text from the middle of the free run.
  const size_t middle = free_run.text.size() / 2;
  const std::string stop = free_run.text.substr(middle, 3);
  EngineRequest stopped = greedy(prompt_of(5, 10), 30);
  stopped.stop.stop_strings = {stop};
  const Received with_stop = alone(stopped);
  EXPECT_EQ(with_stop.finish, FinishReason::kStop);
  EXPECT_EQ(with_stop.text, free_run.text.substr(0, free_run.text.find(stop)));
  EXPECT_LT(with_stop.tokens.size(), 30u);
  EXPECT_EQ(with_stop.tokens,
            std::vector<int32_t>(
                free_run.tokens.begin(),
                free_run.tokens.begin() + static_cast<std::ptrdiff_t>(with_stop.tokens.size())));
}

TEST_F(EngineApi, ARequestEndsWithLengthAtMaxModelLen) {
  config_.scheduler.max_model_len = 64;
  std::unique_ptr<Engine> engine = make_engine(m_, config_);
  ASSERT_TRUE(engine);
  const Received r = run_all(*engine, {greedy(prompt_of(6, 49), 100)}).front();
  EXPECT_EQ(r.finish, FinishReason::kLength);
  EXPECT_EQ(r.tokens.size(), 64u - 50u);  // prompt and output together fill the context
  EXPECT_EQ(r.outputs.back().n_generated_tokens, 14);
}

TEST_F(EngineApi, ReportsLogprobsPerToken) {
  EngineRequest request = greedy(prompt_of(7, 5), 6);
  request.sampling.logprobs = true;
  request.sampling.top_logprobs = 3;
  const Received r = alone(request);
  ASSERT_EQ(r.tokens.size(), 6u);
  for (const RequestOutput& out : r.outputs) {
    ASSERT_EQ(out.logprobs.size(), out.new_tokens.size());
    for (size_t i = 0; i < out.new_tokens.size(); ++i) {
      ASSERT_EQ(out.logprobs[i].top.size(), 3u);
      EXPECT_EQ(out.logprobs[i].token, out.new_tokens[i]);
      EXPECT_EQ(out.logprobs[i].top[0].token, out.new_tokens[i]);  // greedy picks the best
      EXPECT_LE(out.logprobs[i].logprob, 0.0f);
    }
  }
  // The first output says how long the request waited for its first step; no later one.
  EXPECT_GE(r.outputs.front().queued_seconds, 0.0);
  EXPECT_LT(r.outputs.front().queued_seconds, 60.0);
  for (size_t i = 1; i < r.outputs.size(); ++i) EXPECT_EQ(r.outputs[i].queued_seconds, -1.0);
}

// Four threads add eight requests each at once; every request gets its own id and the
// tokens it gets alone.
TEST_F(EngineApi, AddsFromSeveralThreadsAtOnce) {
  std::unique_ptr<Engine> engine = make_engine(m_, config_);
  ASSERT_TRUE(engine);
  auto sink = std::make_shared<RecordingSink>();
  std::vector<std::vector<RequestId>> ids(4);
  std::vector<std::thread> threads;
  for (int32_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int32_t i = 0; i < 8; ++i) {
        const Expected<std::vector<RequestId>> added =
            engine->add(greedy(prompt_of(t * 8 + i, 5 + i), 8 + t), sink);
        if (added.ok()) ids[static_cast<size_t>(t)].push_back(added->front());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::vector<RequestId> all;
  for (const std::vector<RequestId>& some : ids) all.insert(all.end(), some.begin(), some.end());
  ASSERT_EQ(all.size(), 32u);
  ASSERT_TRUE(sink->wait_finished(all));
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::unique(all.begin(), all.end()), all.end());
  for (int32_t t = 0; t < 4; t += 3) {  // two threads' requests, checked against alone
    for (int32_t i = 0; i < 8; i += 3) {
      const Received r = sink->get(ids[static_cast<size_t>(t)][static_cast<size_t>(i)]);
      EXPECT_EQ(r.tokens.size(), static_cast<size_t>(8 + t));
      EXPECT_EQ(r.tokens, alone(greedy(prompt_of(t * 8 + i, 5 + i), 8 + t)).tokens);
    }
  }
}

// The step that runs the poisoned prompt fails every request in it (the one already
// decoding too: the engine is held in a step of it while the poisoned prompt is added),
// with the error; the engine then serves the next request normally.
TEST_F(EngineApi, AFailedForwardPassFailsTheRequestsOfThatStepOnly) {
  GatedModel gated(*m_.model, /*poison=*/500);
  Expected<std::unique_ptr<Engine>> created =
      Engine::create(gated, *m_.backend, *m_.tokenizer, config_);
  ASSERT_TRUE(created.ok()) << created.status().message();
  gated.limit(2);  // after the engine's warm-up pass
  const OpenOnExit open_on_exit{gated};
  Engine& engine = **created;
  auto sink = std::make_shared<RecordingSink>();
  const RequestId decoding = add(engine, greedy(prompt_of(8, 10), 400), sink);
  ASSERT_TRUE(sink->wait_outputs(decoding, 2));
  std::vector<int32_t> poison_prompt = prompt_of(9, 10);
  poison_prompt[5] = 500;
  const RequestId poisoned_id = add(engine, greedy(poison_prompt, 10), sink);
  gated.open();
  ASSERT_TRUE(sink->wait_finished({decoding, poisoned_id}));
  for (const RequestId id : {decoding, poisoned_id}) {
    const Received r = sink->get(id);
    EXPECT_EQ(r.finish, FinishReason::kAbort);
    EXPECT_EQ(r.error, "the forward pass failed: poisoned batch");
  }
  EXPECT_GE(sink->get(decoding).tokens.size(), 2u);  // two steps, then maybe the held one
  EXPECT_LE(sink->get(decoding).tokens.size(), 3u);
  EXPECT_EQ(engine.stats().kv_usage, 0.0);

  const RequestId healthy = add(engine, greedy(prompt_of(10, 10), 12), sink);
  ASSERT_TRUE(sink->wait_finished({healthy}));
  EXPECT_EQ(sink->get(healthy).finish, FinishReason::kLength);
  EXPECT_EQ(sink->get(healthy).tokens, alone(greedy(prompt_of(10, 10), 12)).tokens);
}

// The engine is held at its third step while shutdown begins (add() failing shows it
// has); released, it ends the running request and those added meanwhile.
TEST_F(EngineApi, ShutdownAbortsWhatIsLeft) {
  GatedModel gated(*m_.model);
  Expected<std::unique_ptr<Engine>> created =
      Engine::create(gated, *m_.backend, *m_.tokenizer, config_);
  ASSERT_TRUE(created.ok()) << created.status().message();
  gated.limit(2);  // after the engine's warm-up pass
  const OpenOnExit open_on_exit{gated};
  Engine& engine = **created;
  auto sink = std::make_shared<RecordingSink>();
  const RequestId id = add(engine, greedy(prompt_of(11, 10), 400), sink);
  ASSERT_TRUE(sink->wait_outputs(id, 1));
  std::thread stopper([&engine] { engine.shutdown(); });
  auto late_sink = std::make_shared<RecordingSink>();
  std::vector<RequestId> late;
  while (true) {
    const Expected<std::vector<RequestId>> added =
        engine.add(greedy(prompt_of(12, 3), 3), late_sink);
    if (!added.ok()) break;
    late.push_back(added->front());
    std::this_thread::yield();
  }
  gated.open();
  stopper.join();
  const Received r = sink->get(id);
  EXPECT_EQ(r.finish, FinishReason::kAbort);
  EXPECT_EQ(r.error, "the engine stopped");
  EXPECT_LE(r.tokens.size(), 3u);
  for (const RequestId late_id : late) {
    EXPECT_EQ(late_sink->get(late_id).finish, FinishReason::kAbort);
  }
  EXPECT_EQ(engine.add(greedy(prompt_of(12, 3), 3), sink).status().message(),
            "the engine has stopped");
  engine.shutdown();  // idempotent
}

TEST_F(EngineApi, RefusesRequestsThatCannotRun) {
  std::unique_ptr<Engine> engine = make_engine(m_, config_);
  ASSERT_TRUE(engine);
  auto sink = std::make_shared<RecordingSink>();
  auto refused = [&](const EngineRequest& request, const std::string& message) {
    const Expected<std::vector<RequestId>> ids = engine->add(request, sink);
    ASSERT_FALSE(ids.ok());
    EXPECT_EQ(ids.status().message(), message);
  };
  refused(greedy({}, 5), "the prompt has no tokens");
  refused(greedy({1, 512}, 5), "prompt token 512 is outside the vocabulary of 512");
  refused(greedy({1, -3}, 5), "prompt token -3 is outside the vocabulary of 512");
  refused(greedy(prompt_of(13, 511), 5),
          "the prompt has 512 tokens; the context holds 512 and at least one must be left to "
          "generate");
  EngineRequest too_many = greedy(prompt_of(14, 3), 5);
  too_many.n = 9;
  refused(too_many, "n must be in [1, 8], got 9");
  EngineRequest bad_top_p = greedy(prompt_of(15, 3), 5);
  bad_top_p.sampling.top_p = 1.5f;
  refused(bad_top_p, "top_p must be in [0, 1], got 1.5");
  refused(greedy(prompt_of(16, 3), 0), "max_tokens must be positive, got 0");
  EXPECT_FALSE(engine->add(greedy(prompt_of(17, 3), 5), nullptr).ok());
  EXPECT_EQ(engine->stats().n_waiting, 0);
}

// An f32 cache runs like the f16 default; q8_0 needs heads of a multiple of 32 values,
// which stories260K's 8-value heads are not: a clear error at creation.
TEST_F(EngineApi, KvCacheTypes) {
  config_.kv_type = DType::F32;
  std::unique_ptr<Engine> engine = make_engine(m_, config_);
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->kv_shape().type, DType::F32);
  EXPECT_EQ(engine->kv_shape().n_blocks,
            static_cast<int32_t>((4u << 20) / (2 * 4 * 8 * 4 * 16 * 5)));
  const Received r = run_all(*engine, {greedy(prompt_of(18, 20), 10)}).front();
  EXPECT_EQ(r.finish, FinishReason::kLength);
  EXPECT_EQ(r.tokens.size(), 10u);

  config_.kv_type = DType::Q8_0;
  const Expected<std::unique_ptr<Engine>> q8 =
      Engine::create(*m_.model, *m_.backend, *m_.tokenizer, config_);
  ASSERT_FALSE(q8.ok());
  EXPECT_EQ(q8.status().message(),
            "kv cache: q8_0 needs a head dimension that is a multiple of 32, not 8");
}

TEST_F(EngineApi, RefusesAKvBudgetBelowOneFullRequest) {
  config_.kv_memory.bytes = 100'000;  // 9 blocks; a 512-token request needs 32
  EXPECT_EQ(Engine::create(*m_.model, *m_.backend, *m_.tokenizer, config_).status().code(),
            ErrorCode::kResourceExhausted);
}

}  // namespace
}  // namespace pagoda::engine
