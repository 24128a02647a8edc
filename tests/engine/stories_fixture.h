#pragma once
// stories260K.gguf loaded on the CPU backend with its tokenizer, and a generator over a
// KV cache of a chosen size: what the generator tests share.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "engine/generator.h"
#include "engine/sequence_batch.h"
#include "gguf/reader.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::engine::testing {

inline const std::string kShared = PAGODA_SHARED_DIR;

struct LoadedStories {
  std::unique_ptr<gguf::Reader> file;
  std::unique_ptr<backend::Backend> backend;
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
};

// Loads a model file of the shared folder with its tokenizer; fails the test on error.
inline LoadedStories load_shared_model(const std::string& name, int32_t max_batch_tokens = 512) {
  LoadedStories loaded;
  Expected<gguf::Reader> reader = gguf::Reader::open(kShared + "/models/" + name);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  if (!reader.ok()) return loaded;
  loaded.file = std::make_unique<gguf::Reader>(std::move(reader).value());
  backend::CpuBackendOptions options;
  options.n_threads =
      1;  // the machine is shared: a spinning pool would wait on descheduled threads
  loaded.backend = backend::make_cpu_backend(options);
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

// A KV cache of n_ctx tokens and a generator over it.
struct GeneratorWithCache {
  std::unique_ptr<backend::KvStorage> kv;
  std::unique_ptr<Generator> generator;
};

inline GeneratorWithCache make_generator(LoadedStories& loaded, int32_t n_ctx,
                                         int32_t max_batch_tokens = 512) {
  GeneratorWithCache out;
  Expected<std::unique_ptr<backend::KvStorage>> kv =
      loaded.backend->allocate_kv(contiguous_kv_shape(loaded.model->config(), n_ctx));
  EXPECT_TRUE(kv.ok()) << kv.status().message();
  if (!kv.ok()) return out;
  out.kv = std::move(kv).value();
  Expected<Generator> generator =
      Generator::create(*loaded.model, *out.kv, *loaded.tokenizer, max_batch_tokens);
  EXPECT_TRUE(generator.ok()) << generator.status().message();
  if (generator.ok()) out.generator = std::make_unique<Generator>(std::move(generator).value());
  return out;
}

}  // namespace pagoda::engine::testing
