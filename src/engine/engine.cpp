#include "engine/engine.h"

#include <utility>

namespace pagoda::engine {

Expected<std::unique_ptr<Engine>> Engine::create(model::Model& model, backend::Backend& backend,
                                                 const tokenizer::Tokenizer& tokenizer,
                                                 const EngineConfig& config,
                                                 model::Model* draft_model) {
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<EngineCore> core,
                          EngineCore::create(model, backend, tokenizer, config, draft_model));
  return std::unique_ptr<Engine>(new Engine(std::move(core)));
}

Engine::Engine(std::unique_ptr<EngineCore> core) : core_(std::move(core)) {
  stats_ = core_->stats();
  loop_ = std::thread([this] { run(); });
}

Engine::~Engine() {
  shutdown();
}

Expected<std::vector<RequestId>> Engine::add(EngineRequest request,
                                             std::shared_ptr<RequestSink> sink) {
  PAGODA_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Request>> made,
                          core_->make_requests(std::move(request), std::move(sink)));
  std::vector<RequestId> ids;
  ids.reserve(made.size());
  for (const std::unique_ptr<Request>& m : made) ids.push_back(m->id);
  {
    const std::lock_guard lock(mutex_);
    if (stopping_) return resource_exhausted("the engine has stopped");
    inbox_adds_.push_back(std::move(made));
  }
  wake_.notify_one();
  return ids;
}

void Engine::abort(RequestId id) {
  {
    const std::lock_guard lock(mutex_);
    if (stopping_) return;
    inbox_aborts_.push_back(id);
  }
  wake_.notify_one();
}

EngineStats Engine::stats() const {
  const std::lock_guard lock(mutex_);
  return stats_;
}

void Engine::shutdown() {
  const std::lock_guard join_lock(shutdown_mutex_);
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (loop_.joinable()) loop_.join();
}

bool Engine::take_inbox(bool busy, std::vector<std::vector<std::unique_ptr<Request>>>& adds,
                        std::vector<RequestId>& aborts) {
  std::unique_lock lock(mutex_);
  if (!busy) {
    wake_.wait(lock,
               [this] { return stopping_ || !inbox_adds_.empty() || !inbox_aborts_.empty(); });
  }
  std::swap(adds, inbox_adds_);
  std::swap(aborts, inbox_aborts_);
  return stopping_;
}

void Engine::publish(std::vector<Delivery>& out) {
  {
    const std::lock_guard lock(mutex_);
    stats_ = core_->stats();
  }
  for (Delivery& delivery : out) delivery.sink->on_output(std::move(delivery.output));
  out.clear();
}

// One iteration per step: drain the inbox (adds before aborts, so that an abort finds a
// request added just before it), run a step, publish stats, deliver. While the last
// iteration made progress the loop does not wait; when nothing could run it sleeps
// until the inbox changes.
void Engine::run() {
  std::vector<std::vector<std::unique_ptr<Request>>> adds;
  std::vector<RequestId> aborts;
  std::vector<Delivery> out;
  bool busy = false;
  while (true) {
    const bool stopping = take_inbox(busy, adds, aborts);
    for (std::vector<std::unique_ptr<Request>>& made : adds) core_->admit(std::move(made), out);
    adds.clear();
    for (const RequestId id : aborts) core_->abort(id, "", out);
    aborts.clear();
    if (stopping) {
      core_->abort_all("the engine stopped", out);
      publish(out);
      return;
    }
    busy = core_->has_requests() && core_->step(out);
    publish(out);
  }
}

}  // namespace pagoda::engine
