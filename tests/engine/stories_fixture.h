#pragma once
// stories260K.gguf loaded on the test backend (test_backend.h) with its tokenizer, and an engine session
// over it with a context of a chosen size: what the session tests share.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "test_backend.h"
#include "test_data.h"
#include "engine/session.h"
#include "gguf/reader.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::engine::testing {

using ::pagoda::testing::model_path;      // test_data.h
using ::pagoda::testing::reference_path;

struct LoadedStories {
  std::unique_ptr<gguf::Reader> file;
  std::unique_ptr<backend::Backend> backend;
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
};

// Loads a test model (model_path) with its tokenizer; fails the test on error.
inline LoadedStories load_shared_model(const std::string& name, int32_t max_batch_tokens = 512) {
  LoadedStories loaded;
  Expected<gguf::Reader> reader = gguf::Reader::open(model_path(name));
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  if (!reader.ok()) return loaded;
  loaded.file = std::make_unique<gguf::Reader>(std::move(reader).value());
  loaded.backend = pagoda::testing::make_test_backend();
  if (!loaded.backend) return loaded;
  model::LoadOptions load;
  load.max_batch_tokens = max_batch_tokens;
  load.max_logit_rows = 1;
  Expected<std::unique_ptr<model::Model>> model =
      model::load_model(*loaded.file, *loaded.backend, load);
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (model.ok()) loaded.model = std::move(model).value();
  Expected<tokenizer::Tokenizer> tokenizer = tokenizer::Tokenizer::from_gguf(*loaded.file);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  if (tokenizer.ok())
    loaded.tokenizer = std::make_unique<tokenizer::Tokenizer>(std::move(tokenizer).value());
  return loaded;
}

// A session for one request at a time with a context of n_ctx tokens, steps of at most
// max_batch_tokens (no more than the model was loaded for).
inline std::unique_ptr<Session> make_session(LoadedStories& loaded, int32_t n_ctx,
                                             int32_t max_batch_tokens = 512) {
  EngineConfig config;
  config.scheduler.max_batched_tokens = max_batch_tokens;
  config.scheduler.max_running = 1;
  config.scheduler.max_model_len = n_ctx;
  Expected<std::unique_ptr<Session>> session =
      Session::create(*loaded.model, *loaded.backend, *loaded.tokenizer, config);
  EXPECT_TRUE(session.ok()) << session.status().message();
  return session.ok() ? std::move(session).value() : nullptr;
}

}  // namespace pagoda::engine::testing
