#pragma once
// What the engine and model-runner tests share: a test model loaded for batched
// steps, a sink that records every output and lets the test wait for the last ones,
// and a helper that runs requests through an Engine and returns what each generated.

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "test_backend.h"
#include "test_data.h"
#include "engine/engine.h"
#include "gguf/reader.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::engine::testing {

using ::pagoda::testing::model_path;  // test_data.h

struct BatchedModel {
  std::unique_ptr<gguf::Reader> file;
  std::unique_ptr<backend::Backend> backend;
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
};

// A model file on the test backend (test_backend.h: one CPU thread, or the GPU),
// loaded for `options`.
inline BatchedModel load_batched_model_file(const std::string& path,
                                            const model::LoadOptions& options) {
  BatchedModel m;
  Expected<gguf::Reader> reader = gguf::Reader::open(path);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  if (!reader.ok()) return m;
  m.file = std::make_unique<gguf::Reader>(std::move(reader).value());
  m.backend = pagoda::testing::make_test_backend();
  if (!m.backend) return m;
  Expected<std::unique_ptr<model::Model>> model = model::load_model(*m.file, *m.backend, options);
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (model.ok()) m.model = std::move(model).value();
  Expected<tokenizer::Tokenizer> tokenizer = tokenizer::Tokenizer::from_gguf(*m.file);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  if (tokenizer.ok())
    m.tokenizer = std::make_unique<tokenizer::Tokenizer>(std::move(tokenizer).value());
  return m;
}

// A test model by file name (model_path; see load_batched_model_file).
inline BatchedModel load_batched_model(const std::string& name, const model::LoadOptions& options) {
  return load_batched_model_file(model_path(name), options);
}

// Everything one request received, in order.
struct Received {
  std::vector<RequestOutput> outputs;
  std::vector<int32_t> tokens;  // new_tokens of every output, concatenated
  std::string text;             // text of every output, concatenated
  FinishReason finish = FinishReason::kNone;
  std::string error;
  bool finished() const { return finish != FinishReason::kNone; }
};

// Records outputs from the engine thread; the test thread waits for them.
class RecordingSink final : public RequestSink {
 public:
  void on_output(RequestOutput output) override {
    const std::lock_guard lock(mutex_);
    Received& r = received_[output.id];
    EXPECT_FALSE(r.finished()) << "output after the last one for request " << output.id;
    r.tokens.insert(r.tokens.end(), output.new_tokens.begin(), output.new_tokens.end());
    r.text += output.text;
    r.finish = output.finish;
    r.error = output.error;
    r.outputs.push_back(std::move(output));
    changed_.notify_all();
  }

  // Waits (up to a minute) until every id has its last output; false on time-out.
  bool wait_finished(const std::vector<RequestId>& ids) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::minutes(1), [&] {
      for (const RequestId id : ids) {
        const auto it = received_.find(id);
        if (it == received_.end() || !it->second.finished()) return false;
      }
      return true;
    });
  }
  // Waits (up to a minute) until request `id` has at least n outputs.
  bool wait_outputs(RequestId id, size_t n) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::minutes(1), [&] {
      const auto it = received_.find(id);
      return it != received_.end() && it->second.outputs.size() >= n;
    });
  }
  Received get(RequestId id) {
    const std::lock_guard lock(mutex_);
    return received_[id];
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<RequestId, Received> received_;
};

// An engine over `m`; its start-up log line is silenced (tests make many engines).
inline std::unique_ptr<Engine> make_engine(BatchedModel& m, const EngineConfig& config) {
  spdlog::set_level(spdlog::level::warn);
  Expected<std::unique_ptr<Engine>> engine =
      Engine::create(*m.model, *m.backend, *m.tokenizer, config);
  EXPECT_TRUE(engine.ok()) << engine.status().message();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

// Adds every request at once (in order), waits for all, returns what each received
// (a request of n > 1 contributes n entries, parent first).
inline std::vector<Received> run_all(Engine& engine, const std::vector<EngineRequest>& requests) {
  auto sink = std::make_shared<RecordingSink>();
  std::vector<RequestId> ids;
  for (const EngineRequest& request : requests) {
    Expected<std::vector<RequestId>> added = engine.add(request, sink);
    EXPECT_TRUE(added.ok()) << added.status().message();
    if (added.ok()) ids.insert(ids.end(), added->begin(), added->end());
  }
  EXPECT_TRUE(sink->wait_finished(ids)) << "timed out";
  std::vector<Received> results;
  for (const RequestId id : ids) results.push_back(sink->get(id));
  return results;
}

}  // namespace pagoda::engine::testing
