#pragma once
// The serving engine: an EngineCore driven by one thread that runs the step loop,
// and a thread-safe front for everyone else (DESIGN.md, "the request's way through it").
//
//   auto engine = Engine::create(model, backend, tokenizer, config);
//   auto ids = (*engine)->add(std::move(request), sink);   // any thread
//   (*engine)->abort(ids->front());                        // any thread
//
// add() and abort() go into a mutex-protected inbox that the loop drains at the start
// of every step; the loop sleeps on a condition variable while there is nothing to do.
// Each step's outputs reach the requests' sinks on the loop thread, after the step's
// finished requests have returned their KV blocks (so a sink that sees a request's last
// output also sees its blocks freed in stats()). Sinks must not block or throw; they may
// call add() and abort(), never shutdown().

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/status.h"
#include "engine/engine_core.h"

namespace pagoda::engine {

class Engine {
 public:
  // See EngineCore::create. Starts the step loop.
  static Expected<std::unique_ptr<Engine>> create(model::Model& model, backend::Backend& backend,
                                                  const tokenizer::Tokenizer& tokenizer,
                                                  const EngineConfig& config,
                                                  model::Model* draft_model = nullptr);
  ~Engine();  // shutdown()
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Checks the request on the calling thread (see EngineCore::make_requests) and queues
  // its n completions; returns their ids, the parent's first. Every id's outputs go to
  // `sink`, the last with finish != kNone. Fails after shutdown().
  Expected<std::vector<RequestId>> add(EngineRequest request, std::shared_ptr<RequestSink> sink);
  // Ends a request at the next step: its sink gets a last output with finish kAbort.
  // Ids that are unknown or already finished are ignored.
  void abort(RequestId id);

  // As of the end of the last step.
  EngineStats stats() const;
  const EngineConfig& config() const { return core_->config(); }  // resolved
  const backend::KvCacheShape& kv_shape() const { return core_->kv_shape(); }

  // Stops the loop and waits for it. Requests not finished get a last output with
  // finish kAbort and an error saying so. Idempotent.
  void shutdown();

 private:
  explicit Engine(std::unique_ptr<EngineCore> core);
  void run();
  // Waits for input unless `busy`, then moves the inbox into adds / aborts. Returns
  // whether the engine is stopping.
  bool take_inbox(bool busy, std::vector<std::vector<std::unique_ptr<Request>>>& adds,
                  std::vector<RequestId>& aborts);
  void publish(std::vector<Delivery>& out);

  std::unique_ptr<EngineCore> core_;  // used by the loop thread only (but make_requests)

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable wake_;
  std::vector<std::vector<std::unique_ptr<Request>>> inbox_adds_;
  std::vector<RequestId> inbox_aborts_;
  bool stopping_ = false;
  EngineStats stats_;

  std::mutex shutdown_mutex_;  // one shutdown() joins the thread
  std::thread loop_;
};

}  // namespace pagoda::engine
